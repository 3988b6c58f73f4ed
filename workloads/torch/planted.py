"""Planted PyTorch cases, each with a fixed twin, for checking the analysis' advice against measured savings.

    python3 planted.py --case NAME[,NAME...] [--twin | --both] [--steps N]    one measured step per variant
    python3 planted.py --case NAME[:planted+twin],...  --steps N                 variants per case
    python3 planted.py --bench --case conv_nchw:planted+twin+tf32+channels_last  each fix of the twin alone
    python3 planted.py --bench [--case all] [--iters 25] [--warmup 5]            JSON lines, no NVTX

Cases (planted → twin):
  index_add     torch.zeros(1024, 256).index_add_(0, idx, src): 65,536 source rows of 256 floats (16.8 M element
                updates, 64 per output row on average) through atomics → sort the indices once (torch.sort),
                gather the rows in sorted order, torch.segment_reduce(..., "sum") over the runs
  scatter_add   the same sums through scatter_add_ with the row index expanded to (65,536, 256) → the same twin
  norm_chain    eager LayerNorm → residual add → GELU on 8192 × 4096 bf16 (three kernels, three round trips to
                DRAM) → the same function under torch.compile (one fused Triton kernel)
  fp32_matmul   4096 × 4096 × 4096 fp32 matmul with TF32 off (FFMA, the FP32 pipe) → TF32 on (tensor cores)
  conv_nchw     fp32 NCHW conv2d, batch 32, 64 → 64 channels, 56 × 56, 3 × 3, padding 1, cuDNN TF32 off
                → TF32 on and channels_last input and weight; its fixes one at a time as the variants "tf32"
                (TF32 on, NCHW kept) and "channels_last" (channels_last input and weight, TF32 off)
  cast_vs_copy  x (16384 × 4096 fp32) → x.to(bfloat16) (a cast kernel), .t().contiguous() (a layout copy kernel),
                then xt @ w (bf16 GEMM) → x kept in bf16 and the transposed view handed to the GEMM (no cast, no copy)
  train_step    training step of a 2-block MLP (d 512, hidden 2048, 4096 tokens): forward, MSE loss, backward, AdamW
                (foreach), fp32 with TF32 off → bf16 autocast and AdamW(fused=True)

--steps N (default 2): N - 1 warm-up calls of a variant outside any NVTX range, then one measured call inside the
push/pop range "step" (ncu --nvtx --nvtx-include "step/") and the process-wide start/end range "step_all_threads"
(ncu --nvtx-include "step_all_threads": also holds train_step's backward kernels, which autograd launches from
its own thread). With several variants or cases, each measured call has its own "step" range, in the order given,
and a line "planted.py: measured step case=... variant=..." is printed before it.

--bench: per case, a check (planted and twin on the same inputs: relative error of the outputs, or of the first
loss for train_step), then per variant `--warmup` calls and `--iters` calls timed with CUDA events around each call, then `--iters` calls
issued back to back between two events, as a loop issues them (loop_us: per call; the host's time per call hidden
where the GPU is the busier); JSON lines {case, variant: planted|twin, median_us, min_us, max_us, iters, loop_us,
...}, then {case, saving_us, saving_loop_us, ...}.
A case's further variants (conv_nchw's "tf32" and "channels_last": one fix of the twin each) get a check line
{case, check: "VARIANT vs planted", ...} and a line {case, fix: VARIANT, saving_us, saving_pct} against the planted
code.

--help and the argument checks need neither PyTorch nor a GPU; running a case needs both.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
import time
import traceback

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ModuleNotFoundError:  # --help and the argument checks run without PyTorch; running a case says it needs it
    torch = nn = F = None  # type: ignore[assignment]

DEV = torch.device("cuda") if torch is not None else None
VARIANTS = ("planted", "twin")
# further variants of a case, beyond its planted code and its twin: each applies one of the twin's fixes alone
EXTRA_VARIANTS = {"conv_nchw": ("tf32", "channels_last"), "train_step": ("tf32",)}


def set_tf32(on: bool) -> None:
    """TF32 for cuBLAS matmuls and cuDNN convolutions (the legacy switches; both read at dispatch time)."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


# ---------------------------------------------------------------------------------------------------------------
# Cases: each make_* builds its inputs (outside any NVTX range) and returns a dict with "planted" and "twin"
# callables (no arguments, returning the output), "tol" for the check and a short "note".


def _sorted_segment_sum(idx: torch.Tensor, src: torch.Tensor, bins: int, edges: torch.Tensor, impl: str):
    sidx, perm = torch.sort(idx)
    rows = src.index_select(0, perm)
    if impl == "segment_reduce":
        lengths = torch.searchsorted(sidx, edges).diff()
        return torch.segment_reduce(rows, "sum", lengths=lengths, axis=0, unsafe=True, initial=0.0)
    # fallback where segment_reduce is not available: atomics again, but on sorted rows
    return torch.zeros(bins, src.shape[1], device=DEV, dtype=src.dtype).index_add_(0, sidx, rows)


def _scatter_inputs():
    bins, rows, width = 1024, 65536, 256
    g = torch.Generator(device=DEV).manual_seed(1)
    idx = torch.randint(0, bins, (rows,), device=DEV, generator=g)
    src = torch.randn(rows, width, device=DEV, generator=g)
    edges = torch.arange(bins + 1, device=DEV)
    impl = "segment_reduce"
    try:
        _sorted_segment_sum(idx[:1000], src[:1000], bins, edges, impl)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - reported in the JSON and the log
        print(
            f"planted.py: torch.segment_reduce failed ({exc!r}); twin falls back to sorted index_add_",
            file=sys.stderr,
            flush=True,
        )
        impl = "sorted_index_add"
    return bins, rows, width, idx, src, edges, impl


def make_index_add():
    bins, rows, width, idx, src, edges, impl = _scatter_inputs()
    return {
        "planted": lambda: torch.zeros(bins, width, device=DEV).index_add_(0, idx, src),
        "twin": lambda: _sorted_segment_sum(idx, src, bins, edges, impl),
        "tol": 1e-5,
        "note": f"{rows} rows x {width} fp32 into {bins} rows; twin: sort + {impl}",
        "bytes_min": rows * width * 4 + rows * 8 + bins * width * 4,
    }


def make_scatter_add():
    bins, rows, width, idx, src, edges, impl = _scatter_inputs()
    idx2 = idx[:, None].expand(rows, width)
    return {
        "planted": lambda: torch.zeros(bins, width, device=DEV).scatter_add_(0, idx2, src),
        "twin": lambda: _sorted_segment_sum(idx, src, bins, edges, impl),
        "tol": 1e-5,
        "note": f"scatter_add_ with the index expanded to ({rows}, {width}); twin: sort + {impl}",
        "bytes_min": rows * width * 4 + rows * 8 + bins * width * 4,
    }


def _norm_chain(x, r, w, b):
    return F.gelu(F.layer_norm(x, (x.shape[-1],), w, b) + r)


def make_norm_chain():
    m, n = 8192, 4096
    g = torch.Generator(device=DEV).manual_seed(2)
    x = torch.randn(m, n, device=DEV, dtype=torch.bfloat16, generator=g)
    r = torch.randn(m, n, device=DEV, dtype=torch.bfloat16, generator=g)
    w = (1 + 0.1 * torch.randn(n, device=DEV, generator=g)).to(torch.bfloat16)
    b = (0.1 * torch.randn(n, device=DEV, generator=g)).to(torch.bfloat16)
    compiled = torch.compile(_norm_chain)
    return {
        "planted": lambda: _norm_chain(x, r, w, b),
        "twin": lambda: compiled(x, r, w, b),
        "tol": 2e-2,
        "note": "8192 x 4096 bf16: layer_norm, add, gelu (eager) vs torch.compile",
        "bytes_min": 3 * m * n * 2,
    }


def make_fp32_matmul():
    n = 4096
    g = torch.Generator(device=DEV).manual_seed(3)
    a = torch.randn(n, n, device=DEV, generator=g)
    b = torch.randn(n, n, device=DEV, generator=g)

    def planted():
        set_tf32(False)
        return a @ b

    def twin():
        set_tf32(True)
        return a @ b

    return {
        "planted": planted,
        "twin": twin,
        "tol": 5e-3,
        "note": "4096^3 fp32, TF32 off vs on",
        "flop": 2 * n**3,
        "bytes_min": 3 * n * n * 4,
    }


def make_conv_nchw():
    g = torch.Generator(device=DEV).manual_seed(4)
    x = torch.randn(32, 64, 56, 56, device=DEV, generator=g)
    w = torch.randn(64, 64, 3, 3, device=DEV, generator=g) * (1.0 / 24)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    w_cl = w.contiguous(memory_format=torch.channels_last)

    def planted():
        set_tf32(False)
        return F.conv2d(x, w, padding=1)

    def twin():
        set_tf32(True)
        return F.conv2d(x_cl, w_cl, padding=1)

    def tf32():  # TEN002's fix alone: TF32 on, the NCHW layout kept
        set_tf32(True)
        return F.conv2d(x, w, padding=1)

    def channels_last():  # the layout fix alone: NHWC input and weight, TF32 still off
        set_tf32(False)
        return F.conv2d(x_cl, w_cl, padding=1)

    return {
        "planted": planted,
        "twin": twin,
        "tf32": tf32,
        "channels_last": channels_last,
        "tol": 5e-3,
        "note": "fp32 NCHW conv 32x64x56x56, 3x3, TF32 off vs TF32 on + channels_last",
        "flop": 2 * 32 * 64 * 64 * 9 * 56 * 56,
        "bytes_min": (2 * 32 * 64 * 56 * 56 + 64 * 64 * 9) * 4,
    }


def make_cast_vs_copy():
    s, h, k = 16384, 4096, 256
    g = torch.Generator(device=DEV).manual_seed(5)
    x32 = torch.randn(s, h, device=DEV, generator=g)
    w = (torch.randn(s, k, device=DEV, generator=g) * (1.0 / 128)).to(torch.bfloat16)
    x_kept = x32.to(torch.bfloat16)  # the twin keeps the activation in bf16 from where it is made

    def planted():
        xb = x32.to(torch.bfloat16)  # cast kernel: 256 MB read, 128 MB written
        xt = xb.t().contiguous()  # layout copy kernel: 128 MB read, 128 MB written
        return xt @ w  # (4096 x 16384) @ (16384 x 256), bf16 GEMM

    def twin():
        return x_kept.t() @ w  # the transposed view goes to cuBLAS as is (transA), no copy

    return {
        "planted": planted,
        "twin": twin,
        "tol": 2e-2,
        "note": "cast fp32->bf16 + transpose copy before a bf16 GEMM vs bf16 kept and the view passed",
        "flop": 2 * s * h * k,
    }


def make_train_step():
    class _MLPBlock(nn.Module):  # defined here: the module imports without PyTorch
        def __init__(self, d: int, hidden: int):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, hidden)
            self.fc2 = nn.Linear(hidden, d)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

    d, hidden, tokens = 512, 2048, 4096
    torch.manual_seed(6)
    model = nn.Sequential(_MLPBlock(d, hidden), _MLPBlock(d, hidden), nn.Linear(d, d)).to(DEV)
    model_t = copy.deepcopy(model)
    model_tf32 = copy.deepcopy(model)
    g = torch.Generator(device=DEV).manual_seed(7)
    x = torch.randn(tokens, d, device=DEV, generator=g)
    y = torch.randn(tokens, d, device=DEV, generator=g)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)  # foreach (the default on CUDA)
    opt_t = torch.optim.AdamW(model_t.parameters(), lr=1e-4, fused=True)
    opt_tf32 = torch.optim.AdamW(model_tf32.parameters(), lr=1e-4)  # foreach, as planted

    def step(m, o, tf32_on: bool | None = None, bf16: bool = False):
        """One training step of model `m` with optimizer `o`; TF32 set first unless None; under bf16 autocast."""
        if tf32_on is not None:
            set_tf32(tf32_on)
        o.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss.detach()

    def planted():
        return step(model, opt, tf32_on=False)

    def twin():
        return step(model_t, opt_t, bf16=True)

    def tf32():  # TEN002's fix alone: the planted step with TF32 on
        return step(model_tf32, opt_tf32, tf32_on=True)

    flop = 3 * 2 * tokens * (2 * 2 * d * hidden + d * d)
    return {
        "planted": planted,
        "twin": twin,
        "tf32": tf32,
        "tol": 2e-2,
        "grad": True,
        "note": "2-block MLP d512 h2048, 4096 tokens: fp32 + foreach AdamW vs bf16 autocast + fused AdamW "
        "(check: the first loss of each, from the same weights)",
        "flop": flop,
    }


CASES = {
    "index_add": make_index_add,
    "scatter_add": make_scatter_add,
    "norm_chain": make_norm_chain,
    "fp32_matmul": make_fp32_matmul,
    "conv_nchw": make_conv_nchw,
    "cast_vs_copy": make_cast_vs_copy,
    "train_step": make_train_step,
}


def parse_cases(spec: str, default_variants: list[str]) -> list[tuple[str, list[str]]]:
    out = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        name, _, vs = item.partition(":")
        names = list(CASES) if name == "all" else [name]
        for nm in names:
            if nm not in CASES:
                raise SystemExit(f"planted.py: unknown case {nm!r}; known: {', '.join(CASES)}")
            variants = [v for v in vs.split("+") if v] if vs else default_variants
            known = VARIANTS + EXTRA_VARIANTS.get(nm, ())
            for v in variants:
                if v not in known:
                    raise SystemExit(f"planted.py: unknown variant {v!r} of {nm} (one of {', '.join(known)})")
            out.append((nm, variants))
    return out


def run_steps(cases, steps: int) -> int:
    failures = 0
    for name, variants in cases:
        try:
            c = CASES[name]()
            ctx = torch.enable_grad() if c.get("grad") else torch.no_grad()
            with ctx:
                for variant in variants:
                    fn = c[variant]
                    t0 = time.perf_counter()
                    for _ in range(max(1, steps) - 1):  # warm-up: compilation, handles, allocator
                        fn()
                    torch.cuda.synchronize()
                    t_warm = time.perf_counter() - t0
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    print(f"planted.py: measured step case={name} variant={variant}", flush=True)
                    with torch.cuda.nvtx.range("step"):
                        rid = torch.cuda.nvtx.range_start("step_all_threads")
                        start.record()
                        fn()
                        end.record()
                        torch.cuda.nvtx.range_end(rid)
                    torch.cuda.synchronize()
                    print(
                        f"planted.py: done case={name} variant={variant} step_us={start.elapsed_time(end) * 1e3:.1f} "
                        f"warmup_s={t_warm:.2f}",
                        flush=True,
                    )
            del c
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - one failing case must not stop the others
            failures += 1
            print(f"planted.py: case {name} FAILED", flush=True)
            traceback.print_exc()
    return failures


def time_calls(fn, iters: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e3)
    return out


def time_loop(fn, iters: int, within: contextlib.AbstractContextManager | None = None) -> float:
    """Microseconds per call of `iters` calls issued back to back between two CUDA events (one synchronization at
    the end), as a training loop issues them: the host's time per call is hidden while the GPU is busier than it.
    `within`: a context the events and the loop run in, after the GPU is idle (host_trace.py's torch.profiler)."""
    torch.cuda.synchronize()
    with within if within is not None else contextlib.nullcontext():
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
    return s.elapsed_time(e) * 1e3 / iters


def fix_saving(case: str, fix: str, planted_us: float, fixed_us: float, loop: dict[str, float] | None = None) -> dict:
    """The line of one fix of a case alone against its planted code: {case, fix, saving_us, saving_pct}, and
    saving_loop_us where `loop` holds both variants' per-call times in a loop."""
    out = {
        "case": case,
        "fix": fix,
        "saving_us": round(planted_us - fixed_us, 3),
        "saving_pct": round(100 * (1 - fixed_us / planted_us), 2) if planted_us else None,
    }
    if loop and "planted" in loop and fix in loop:
        out["saving_loop_us"] = round(loop["planted"] - loop[fix], 3)
    return out


def bench(cases, iters: int, warmup: int) -> int:
    failures = 0
    for name, variants in cases:
        try:
            t_case = time.perf_counter()
            c = CASES[name]()
            ctx = torch.enable_grad() if c.get("grad") else torch.no_grad()
            extra = {k: c[k] for k in ("note", "flop", "bytes_min") if k in c}
            with ctx:
                p = c["planted"]()
                for other in ["twin"] + [v for v in variants if v not in VARIANTS]:
                    t = c[other]()
                    torch.cuda.synchronize()
                    err = rel_err(t, p)
                    ok = err < c["tol"] and bool(torch.isfinite(p).all()) and bool(torch.isfinite(t).all())
                    check = {"case": name, "check": f"{other} vs planted", "rel_err": err, "tol": c["tol"], "ok": ok}
                    print(json.dumps(check), flush=True)
                    del t
                del p
                med: dict[str, float] = {}
                loop: dict[str, float] = {}
                for variant in variants:
                    ts = time_calls(c[variant], iters, warmup)
                    med[variant] = statistics.median(ts)
                    loop[variant] = time_loop(c[variant], iters)
                    print(
                        json.dumps(
                            {
                                "case": name,
                                "variant": variant,
                                "median_us": round(med[variant], 3),
                                "min_us": round(min(ts), 3),
                                "max_us": round(max(ts), 3),
                                "iters": iters,
                                "warmup": warmup,
                                "loop_us": round(loop[variant], 3),
                                **extra,
                            }
                        ),
                        flush=True,
                    )
            if "planted" in med and "twin" in med:
                print(
                    json.dumps(
                        {
                            "case": name,
                            "saving_us": round(med["planted"] - med["twin"], 3),
                            "saving_pct": round(100 * (1 - med["twin"] / med["planted"]), 2),
                            "saving_loop_us": round(loop["planted"] - loop["twin"], 3),
                            "case_wall_s": round(time.perf_counter() - t_case, 2),
                        }
                    ),
                    flush=True,
                )
            for fix in [v for v in med if v not in VARIANTS and "planted" in med]:
                print(json.dumps(fix_saving(name, fix, med["planted"], med[fix], loop)), flush=True)
            del c
            torch.cuda.empty_cache()
        except Exception as exc:  # noqa: BLE001
            failures += 1
            print(json.dumps({"case": name, "error": repr(exc)}), flush=True)
            traceback.print_exc()
    return failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    extra = "; ".join(f"{c}: +{'+'.join(v)}" for c, v in EXTRA_VARIANTS.items())
    ap.add_argument("--case", default="all", help=f"NAME[:planted+twin][,...] or all (further variants: {extra})")
    ap.add_argument("--twin", action="store_true", help="the fixed twin instead of the planted code")
    ap.add_argument("--both", action="store_true", help="planted, then twin (each its own measured step)")
    ap.add_argument("--steps", type=int, default=2, help="calls per variant; the last one is measured in NVTX 'step'")
    ap.add_argument("--bench", action="store_true", help="check and time (CUDA events), JSON lines")
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    default = ["planted", "twin"] if (args.both or args.bench) else (["twin"] if args.twin else ["planted"])
    cases = parse_cases(args.case, default)
    if torch is None or not torch.cuda.is_available():
        raise SystemExit("planted.py: needs PyTorch with a CUDA GPU" + (" (no torch module)" if torch is None else ""))
    print(
        f"planted.py: torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cases {[(n, v) for n, v in cases]}",
        file=sys.stderr if args.bench else sys.stdout,
        flush=True,
    )
    failures = bench(cases, args.iters, args.warmup) if args.bench else run_steps(cases, args.steps)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
