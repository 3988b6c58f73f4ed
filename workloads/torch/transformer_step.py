"""A small transformer step for profiling with Nsight Compute.

4 layers, d_model 1024, 16 heads, sequence 512, batch 8, bf16 weights and activations, built from plain
torch.nn ops (nn.LayerNorm, nn.Linear, F.gelu, attention written out as matmul + softmax, residual adds), so
eager mode launches separate LayerNorm / elementwise / softmax / cuBLAS kernels and torch.compile fuses them
into Inductor (Triton) kernels.

    python3 transformer_step.py [--mode eager|compile] [--steps N] [--train]

--steps N runs N steps in all: the first N-1 are warm-up steps outside any NVTX range, the last one is the
measured step, wrapped in torch.cuda.nvtx.range("step") (profile it with
`ncu --nvtx --nvtx-include "step/" ...`; that push/pop range is thread-local and misses the backward
kernels of --train, which autograd launches from another thread: the process-wide start/end range
"step_all_threads" spans the same step, select it with `--nvtx-include "step_all_threads"`). --train does forward + backward + AdamW step; the default is
forward only (under torch.no_grad). Prints one line with the measured step time.
"""

import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, s, self.n_heads, self.d_head).transpose(1, 2)
        k = k.view(b, s, self.n_heads, self.d_head).transpose(1, 2)
        v = v.view(b, s, self.n_heads, self.d_head).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d_head))
        scores = scores.masked_fill(mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v)
        out = out.transpose(1, 2).reshape(b, s, d)
        return self.proj(out)


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x


class Transformer(nn.Module):
    def __init__(self, n_layers: int = 4, d_model: int = 1024, n_heads: int = 16):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for blk in self.blocks:
            x = blk(x, mask)
        return self.ln_f(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--steps", type=int, default=3, help="steps in all; the last one is measured inside NVTX 'step'")
    ap.add_argument("--train", action="store_true", help="forward + backward + optimizer step (default: forward only)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument(
        "--seqs",
        default="",
        help="comma-separated sequence lengths: the measured range runs one step "
        "per length (dynamic shapes, as in prefill); --seq is then the warm-up length",
    )
    args = ap.parse_args()
    seqs = [int(v) for v in args.seqs.split(",") if v.strip()]

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    dtype = torch.bfloat16

    model = Transformer(args.layers, args.d_model, args.heads).to(device=dev, dtype=dtype)
    x = torch.randn(args.batch, args.seq, args.d_model, device=dev, dtype=dtype)
    mask = torch.triu(torch.ones(args.seq, args.seq, device=dev, dtype=torch.bool), diagonal=1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if args.train else None
    fwd = torch.compile(model) if args.mode == "compile" else model

    def inputs(seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        xs = torch.randn(args.batch, seq, args.d_model, device=dev, dtype=dtype)
        return xs, torch.triu(torch.ones(seq, seq, device=dev, dtype=torch.bool), diagonal=1)

    def step() -> torch.Tensor:
        if args.train:
            out = fwd(x, mask)
            loss = out.float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()
        with torch.no_grad():
            return fwd(x, mask).float().pow(2).mean()

    steps = max(1, args.steps)
    t_start = time.perf_counter()
    for _ in range(steps - 1):  # warm-up: compilation, cuBLAS handles, allocator
        step()
    torch.cuda.synchronize()
    t_warm = time.perf_counter()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Two NVTX ranges around the measured step: the push/pop range "step" (ncu --nvtx-include "step/") is
    # thread-local, so it does NOT contain the backward kernels, which autograd launches from its own device
    # thread; the start/end range "step_all_threads" (ncu --nvtx-include "step_all_threads", no slash) is
    # process-wide and contains every kernel of the step.
    with torch.cuda.nvtx.range("step"):
        rid = torch.cuda.nvtx.range_start("step_all_threads")
        start.record()
        if seqs:
            for seq in seqs:  # one step per sequence length: the same kernels with other launch shapes
                x, mask = inputs(seq)
                val = step()
        else:
            val = step()
        end.record()
        torch.cuda.nvtx.range_end(rid)
    torch.cuda.synchronize()
    t_end = time.perf_counter()
    print(
        f"transformer_step mode={args.mode} train={args.train} layers={args.layers} d_model={args.d_model} "
        f"heads={args.heads} batch={args.batch} seq={args.seqs or args.seq} dtype=bf16 warmup_steps={steps - 1}: "
        f"step_ms={start.elapsed_time(end):.3f} step_wall_ms={(t_end - t_warm) * 1e3:.3f} "
        f"warmup_s={t_warm - t_start:.2f} loss={val.item():.6f} torch={torch.__version__}",
        flush=True,
    )


if __name__ == "__main__":
    main()
