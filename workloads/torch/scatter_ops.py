"""ATen's other scatters, each once inside the process-wide NVTX range "step_all_threads" (backward kernels run on
autograd's thread): which of them update memory through global atomics and which sort first; and the alternatives
a user has to the sort-based ones, timed.

    python3 scatter_ops.py [--case embedding_backward,bincount,histc,index_put] [--steps N]
    python3 scatter_ops.py --time 25 --case index_put,index_add,embedding_backward,embedding_sparse [--sgd]

Cases:
  embedding_backward  nn.Embedding(50,000 × 256) looked up with 65,536 indices drawn from 1,024 rows, then backward
                      (the dense gradient: ATen sorts the indices and reduces segments)
  embedding_sparse    the same with nn.Embedding(sparse=True): the gradient is the looked-up rows and their indices
  bincount            torch.bincount of 4,194,304 ints in [0, 64)
  histc               torch.histc of 4,194,304 floats, 100 bins
  index_put           out.index_put_((idx,), src, accumulate=True): 65,536 rows of 256 floats into 1,024 rows
  index_add           out.index_add_(0, idx, src), the same rows (one atomic pass, float order not deterministic)
Each case runs `--steps` times (default 2); the last call is inside the range, after a line
"scatter_ops.py: measured step case=NAME". `--sgd`: the embedding cases also take an SGD step (lr 0.1; a sparse
gradient takes SGD's sparse update). `--deterministic`: torch.use_deterministic_algorithms(True) (index_add_ then
takes the sorted path). `--time N`: no NVTX range; each case is called N times after 3 warm-up calls, each call
timed with CUDA events, and the median printed in microseconds ("scatter_ops.py: time case=NAME median_us=…").
"""

import argparse
import statistics

import torch
from planted import time_calls  # this script's folder is first on sys.path

CASES = ("embedding_backward", "bincount", "histc", "index_put")
TWINS = ("embedding_sparse", "index_add")


def make(case: str, sgd: bool = False):
    g = torch.Generator(device="cuda").manual_seed(0)
    if case in ("embedding_backward", "embedding_sparse"):
        emb = torch.nn.Embedding(50_000, 256, sparse=case == "embedding_sparse").cuda()
        idx = torch.randint(0, 1024, (65_536,), device="cuda", generator=g)
        opt = torch.optim.SGD(emb.parameters(), lr=0.1) if sgd else None

        def run():
            emb.zero_grad(set_to_none=True)
            emb(idx).sum().backward()
            if opt is not None:
                opt.step()

        return run
    if case == "bincount":
        ints = torch.randint(0, 64, (4_194_304,), device="cuda", generator=g)
        return lambda: torch.bincount(ints, minlength=64)
    if case == "histc":
        xs = torch.rand(4_194_304, device="cuda", generator=g)
        return lambda: torch.histc(xs, bins=100, min=0.0, max=1.0)
    if case in ("index_put", "index_add"):
        out = torch.zeros(1024, 256, device="cuda")
        src = torch.rand(65_536, 256, device="cuda", generator=g)
        idx = torch.randint(0, 1024, (65_536,), device="cuda", generator=g)
        if case == "index_add":
            return lambda: out.index_add_(0, idx, src)
        return lambda: out.index_put_((idx,), src, accumulate=True)
    raise SystemExit(f"scatter_ops.py: unknown case {case!r} (one of {', '.join(CASES + TWINS)})")


def timed(run, calls: int) -> float:
    """Median microseconds of `calls` calls, each between two CUDA events, after 3 warm-up calls."""
    return statistics.median(time_calls(run, calls, 3))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default=",".join(CASES))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--sgd", action="store_true")
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--time", type=int, default=0, metavar="N")
    args = ap.parse_args()
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    for case in args.case.split(","):
        run = make(case, args.sgd)
        if args.time:
            us = timed(run, args.time)
            print(
                f"scatter_ops.py: time case={case} sgd={args.sgd} deterministic={args.deterministic} "
                f"median_us={us:.1f}",
                flush=True,
            )
            continue
        for _ in range(args.steps - 1):
            run()
        torch.cuda.synchronize()
        print(f"scatter_ops.py: measured step case={case}", flush=True)
        rid = torch.cuda.nvtx.range_start("step_all_threads")
        run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_end(rid)


if __name__ == "__main__":
    main()
