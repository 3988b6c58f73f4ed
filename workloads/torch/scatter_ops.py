"""ATen's other scatters, each once inside the process-wide NVTX range "step_all_threads" (backward kernels run on
autograd's thread): which of them update memory through global atomics and which sort first.

    python3 scatter_ops.py [--case embedding_backward,bincount,histc,index_put] [--steps N]

Cases:
  embedding_backward  nn.Embedding(50,000 × 256) looked up with 65,536 indices drawn from 1,024 rows, then backward
  bincount            torch.bincount of 4,194,304 ints in [0, 64)
  histc               torch.histc of 4,194,304 floats, 100 bins
  index_put           out.index_put_((idx,), src, accumulate=True): 65,536 rows of 256 floats into 1,024 rows
Each case runs `--steps` times (default 2); the last call is inside the range, after a line
"scatter_ops.py: measured step case=NAME".
"""

import argparse

import torch

CASES = ("embedding_backward", "bincount", "histc", "index_put")


def make(case: str):
    g = torch.Generator(device="cuda").manual_seed(0)
    if case == "embedding_backward":
        emb = torch.nn.Embedding(50_000, 256).cuda()
        idx = torch.randint(0, 1024, (65_536,), device="cuda", generator=g)

        def run():
            emb.zero_grad(set_to_none=True)
            emb(idx).sum().backward()

        return run
    if case == "bincount":
        ints = torch.randint(0, 64, (4_194_304,), device="cuda", generator=g)
        return lambda: torch.bincount(ints, minlength=64)
    if case == "histc":
        xs = torch.rand(4_194_304, device="cuda", generator=g)
        return lambda: torch.histc(xs, bins=100, min=0.0, max=1.0)
    if case == "index_put":
        out = torch.zeros(1024, 256, device="cuda")
        src = torch.rand(65_536, 256, device="cuda", generator=g)
        idx = torch.randint(0, 1024, (65_536,), device="cuda", generator=g)
        return lambda: out.index_put_((idx,), src, accumulate=True)
    raise SystemExit(f"scatter_ops.py: unknown case {case!r} (one of {', '.join(CASES)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default=",".join(CASES))
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    for case in args.case.split(","):
        run = make(case)
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
