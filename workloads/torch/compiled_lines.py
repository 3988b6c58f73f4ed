"""A small PyTorch program with a torch.compile'd block and eager code around it, for
`ncuadvisor profile --python-lines` under torch.compile (tests/test_compiled_lines.py).

    python3 compiled_lines.py [--steps N] [--size N] [--eager] [--mode reduce-overhead]

The block (LayerNorm, GELU, a Linear layer and a residual add) is compiled by torch.compile: Inductor fuses the
LayerNorm and the GELU into one Triton kernel, calls cuBLAS for the matrix product and generates the kernels of the
backward. Around it, eager code: a cast to bfloat16 (ATen's bfloat16 copy kernel), a loss and its backward. The lines
the test checks carry a marker comment `# line: NAME`; the test finds them by that marker, not by number. A first
step compiles the block outside any range; every measured step runs inside the push/pop NVTX range "step" and the
process-wide start/end range "step_all_threads" (the backward kernels run on autograd's thread). `--eager` runs the
block without torch.compile; `--mode` is torch.compile's (reduce-overhead: replayed from CUDA graphs).
"""

import argparse
import os

# compile in this process: no pool of compile workers for ncu to follow
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, d)

    def forward(self, x):
        h = self.norm(x)  # line: norm
        h = torch.nn.functional.gelu(h)  # line: gelu
        return self.fc(h) + x  # line: residual


def step(model, x):
    out = model(x)  # line: call
    y = out.to(torch.bfloat16)  # line: cast
    loss = y.float().square().mean()  # line: loss
    loss.backward()  # line: backward
    return loss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--mode", default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    block = Block(args.size).cuda()
    model = block if args.eager else torch.compile(block, mode=args.mode)
    x = torch.randn(args.size, args.size, device="cuda", requires_grad=True)
    step(model, x)  # compiles forward and backward, outside the measured ranges
    torch.cuda.synchronize()
    for _ in range(args.steps):
        block.zero_grad(set_to_none=True)
        with torch.cuda.nvtx.range("step"):
            rid = torch.cuda.nvtx.range_start("step_all_threads")
            loss = step(model, x)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_end(rid)
    print(f"compiled_lines.py: {args.steps} steps, loss {loss.item():.4f}, compiled={not args.eager}")
    if not args.eager:
        from torch._dynamo.utils import counters

        print("dynamo:", dict(counters["stats"]), "graph breaks:", dict(counters["graph_break"]))


if __name__ == "__main__":
    main()
