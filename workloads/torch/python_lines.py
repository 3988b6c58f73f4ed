"""A small eager PyTorch program whose kernels each come from one known Python line, for
`ncuadvisor profile --python-lines` (tests/test_python_lines.py).

    python3 python_lines.py [--steps N] [--size N]

Each step: a Linear layer (cuBLAS GEMM), a cast to bfloat16 (`x.to(torch.bfloat16)`: ATen's bfloat16 copy kernel),
GELU, a layout copy (`.t().contiguous()`), a loss and its backward. The lines the test checks carry a marker comment
`# line: NAME`; the test finds them by that marker, not by number. Every step runs inside the push/pop NVTX range
"step" and the process-wide start/end range "step_all_threads" (the backward kernels run on autograd's thread).
"""

import argparse

import torch


class Block(torch.nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.fc = torch.nn.Linear(d, d)

    def forward(self, x):
        h = self.fc(x)  # line: linear
        y = h.to(torch.bfloat16)  # line: cast
        z = torch.nn.functional.gelu(y)  # line: gelu
        return z.t().contiguous()  # line: transpose


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--size", type=int, default=2048)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Block(args.size).cuda()
    x = torch.randn(args.size, args.size, device="cuda")
    for _ in range(args.steps):
        with torch.cuda.nvtx.range("step"):
            rid = torch.cuda.nvtx.range_start("step_all_threads")
            out = model(x)
            loss = out.float().square().mean()  # line: loss
            loss.backward()  # line: backward
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_end(rid)
        model.zero_grad(set_to_none=True)
    print(f"python_lines.py: {args.steps} steps, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
