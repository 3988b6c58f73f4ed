"""A GPT-style training step written the way such scripts usually are, for checking the advice on code nobody tuned.

Token and position embeddings, pre-norm blocks (nn.LayerNorm, causal F.scaled_dot_product_attention, a GELU MLP),
a tied LM head, cross-entropy over the vocabulary; bf16 autocast, AdamW (PyTorch's default foreach implementation),
gradient clipping. Nothing here is planted: it is the common way to write it.

    python3 gpt_step.py [--steps N] [--compile] [--compiled-loss] [--fused] [--time N] [--layers 6] [--d-model 768] [--heads 12]
                        [--seq 1024] [--batch 8]

--steps N: N - 1 warm-up steps, then one measured step inside the push/pop NVTX range "step" and the process-wide
start/end range "step_all_threads" (ncu --nvtx-include step_all_threads: it also holds the backward kernels, which
autograd launches from its own thread). Prints one line with the measured step time.
--fused: AdamW(fused=True), one multi-tensor kernel per group of tensors instead of the foreach ops.
--compiled-loss: the cross-entropy through torch.compile(F.cross_entropy): Inductor's kernels read the bf16 logits
and write their bf16 gradient, where eager autocast upcasts the logits to fp32 and back.
--time N: then N steps in a loop between two CUDA events and N more under torch.profiler (step_timing.py); prints one
JSON line: the options, wall µs per step, the kernels' µs per step and their count.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_timing import measured_step, time_steps  # noqa: E402


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, seq: int, d: int, layers: int, heads: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied
        self.loss = F.cross_entropy  # --compiled-loss: torch.compile(F.cross_entropy)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return self.loss(logits.view(-1, logits.size(-1)), targets.view(-1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--fused", action="store_true", help="AdamW(fused=True) instead of the default foreach step")
    ap.add_argument("--compiled-loss", action="store_true", help="the loss through torch.compile(F.cross_entropy)")
    ap.add_argument("--time", type=int, default=0, metavar="N", help="then time N steps in a loop (JSON line)")
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = GPT(args.vocab, args.seq, args.d_model, args.layers, args.heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True if args.fused else None)
    if args.compiled_loss:
        model.loss = torch.compile(F.cross_entropy)
    fwd = torch.compile(model) if args.compile else model
    idx = torch.randint(0, args.vocab, (args.batch, args.seq), device=dev)
    targets = torch.randint(0, args.vocab, (args.batch, args.seq), device=dev)

    def step() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fwd(idx, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    loss, step_ms, warmup_s = measured_step(step, args.steps)
    print(
        f"gpt_step compile={args.compile} compiled_loss={args.compiled_loss} fused={args.fused} layers={args.layers} d_model={args.d_model} "
        f"seq={args.seq} batch={args.batch}: step_ms={step_ms:.3f} warmup_s={warmup_s:.2f} "
        f"loss={loss.item():.4f} torch={torch.__version__}",
        flush=True,
    )
    if args.time > 0:
        row = {"script": "gpt_step", "compile": args.compile, "compiled_loss": args.compiled_loss, "fused": args.fused}
        row |= {"layers": args.layers}
        row |= {"d_model": args.d_model, "seq": args.seq, "batch": args.batch, "torch": torch.__version__}
        print(json.dumps(row | time_steps(step, args.time)), flush=True)


if __name__ == "__main__":
    main()
