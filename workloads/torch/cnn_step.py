"""A ResNet-style CNN training step written the way such scripts usually are, for checking the advice on code nobody
tuned.

Residual blocks of conv 3x3 → BatchNorm → ReLU (torch.nn, NCHW, fp32: PyTorch's defaults, under which cuDNN may
use TF32 for convolutions and cuBLAS may not for the classifier), global average pooling, a linear classifier,
cross-entropy, SGD with momentum. Nothing here is planted: it is the common way to write it.

    python3 cnn_step.py [--steps N] [--batch 64] [--size 112] [--width 64] [--blocks 2] [--channels-last] [--bf16]
                        [--fused] [--graph] [--time N]

--steps N: N - 1 warm-up steps, then one measured step inside the NVTX ranges "step" (push/pop) and
"step_all_threads" (process-wide: it also holds the backward kernels). Prints one line with the measured step time.
--channels-last: the model and its input in torch.channels_last. --fused: SGD(fused=True).
--graph: the whole step (forward, loss, backward, SGD step) captured once in a CUDA graph after 3 warm-up steps on a
side stream, then replayed (PyTorch's whole-network capture: the gradients stay allocated, not set to None).
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


class Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.skip(x))


class Net(nn.Module):
    def __init__(self, width: int, blocks: int, classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, c = [], width
        for stage in range(3):
            cout = width * 2**stage
            for i in range(blocks):
                layers.append(Basic(c, cout, 2 if (i == 0 and stage > 0) else 1))
                c = cout
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.body(F.max_pool2d(self.stem(x), 3, 2, 1))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def graphed(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, bf16: bool):
    """The step captured in one CUDA graph: 3 warm-up steps on a side stream (they create the momentum buffers), the
    gradients zeroed to None once, then forward, loss, backward and the optimizer's step captured; the returned
    function replays the graph and returns the static loss."""

    def body() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = body()

    def replay() -> torch.Tensor:
        graph.replay()
        return static_loss

    return replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast")
    ap.add_argument("--fused", action="store_true", help="SGD(fused=True) instead of the default foreach step")
    ap.add_argument("--graph", action="store_true", help="capture the whole step in a CUDA graph and replay it")
    ap.add_argument("--time", type=int, default=0, metavar="N", help="then time N steps in a loop (JSON line)")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = Net(args.width, args.blocks).to(dev, memory_format=fmt)
    opt = torch.optim.SGD(
        model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, fused=True if args.fused else None
    )
    x = torch.randn(args.batch, 3, args.size, args.size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (args.batch,), device=dev)

    def step() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    if args.graph:
        step = graphed(model, opt, x, y, args.bf16)
    loss, step_ms, warmup_s = measured_step(step, args.steps)
    print(
        f"cnn_step batch={args.batch} size={args.size} width={args.width} blocks={args.blocks} "
        f"channels_last={args.channels_last} bf16={args.bf16} fused={args.fused} graph={args.graph}: "
        f"step_ms={step_ms:.3f} warmup_s={warmup_s:.2f} loss={loss.item():.4f} "
        f"torch={torch.__version__}",
        flush=True,
    )
    if args.time > 0:
        row = {"script": "cnn_step", "channels_last": args.channels_last, "bf16": args.bf16, "fused": args.fused}
        row |= {"graph": args.graph}
        row |= {"batch": args.batch, "size": args.size, "width": args.width, "blocks": args.blocks}
        print(json.dumps(row | {"torch": torch.__version__} | time_steps(step, args.time)), flush=True)


if __name__ == "__main__":
    main()
