"""Tables of what the analysis says today about the planted reports, next to the measured planted and twin times.

    for n in ceilings patterns ceilings_chain torch_cast_copy torch_gemm_conv torch_scatter torch_norm_chain \
             torch_train; do
        python -m ncuadvisor report fixtures/$n.ncu-rep.xz --format json -o /tmp/planted/$n.json --force -q
    done
    python3 workloads/planted_table.py /tmp/planted > tables.md

Reads the JSON results of `ncuadvisor report` (one per report, named after it) and the bench JSON lines in
fixtures/planted/. "NCU top rule" is NCU's own rule with the largest estimated speedup (as benchmarks/accuracy.py
counts it). "est." is the first finding's estimated saving (its estimated_speedup × the kernel's duration in the
report). Which result belongs to which variant comes from the ncu logs (fixtures/planted/ncu_outputs/), written here
as result-index ranges.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "fixtures" / "planted"

# The H200's nominal per-SM rates (lanes or FLOPs per clock per SM) for the ceilings table's "true" headroom;
# the clock is the report's own max SM clock.
CEILINGS = {
    "sfu_loop": ("SFU (MUFU): 16 ops/clk/SM", "mufu", 16),
    "fadd_loop": ("FP32 FADD: 128 lanes × 1 FLOP/clk/SM", "flop", 128),
    "ffma_loop": ("FP32 FFMA: 128 lanes × 2 FLOP/clk/SM", "flop", 256),
    "index_math": ("issue: 4 warp-instructions/clk/SM (integer ALU + IMAD)", None, None),
    "hfma2_loop": ("fp16 HFMA2: 128 lanes × 2 halves × 2 FLOP/clk/SM", "flop", 512),
    "dfma_loop": ("FP64 DFMA: 64 lanes × 2 FLOP/clk/SM", "flop", 128),
    "l2_resident_out": ("16 MB in + 16 MB out; the output stays in L2", "bytes", None),
    "dram_out": ("twin: 256 MB in + 256 MB out (DRAM)", "bytes", None),
    "empty_kernel": ("launch floor", None, None),
    "tiny_chain_step": ("one link of the 256-launch chain", None, None),
}
PATTERNS = [  # pair, planted, twin, what is planted
    ("aos", "aos_field_x", "soa_field_x", "x of a 32-byte struct (AoS) vs the x array (SoA)"),
    ("aos16", "aos16_scalar", "aos16_vec4", "16-byte struct: four 4-byte loads vs one 16-byte load"),
    ("pred_store", "pred_store_strided", "pred_store_contig", "predicated store, stride 32 B vs contiguous"),
    ("gather", "gather_random", "gather_sorted", "gather with random vs sorted indices"),
    ("chase", "chase_serial", "chase_interleaved", "4 pointer chases one after another vs interleaved"),
    ("reduce", "reduce_mod", "reduce_shfl", "block reduction: tid % (2s) vs sequential + shuffle"),
    ("small_launches", "small_update", "small_fused", "4 small launches vs 1 fused"),
]
# report, case, variant, result indices (from the ncu logs)
TORCH = [
    ("torch_scatter", "index_add", "planted", range(0, 2)),
    ("torch_scatter", "index_add", "twin", range(2, 21)),
    ("torch_scatter", "scatter_add", "planted", range(21, 23)),
    ("torch_norm_chain", "norm_chain", "planted", range(0, 3)),
    ("torch_norm_chain", "norm_chain", "twin", range(3, 4)),
    ("torch_gemm_conv", "fp32_matmul", "planted", range(0, 1)),
    ("torch_gemm_conv", "fp32_matmul", "twin", range(1, 2)),
    ("torch_gemm_conv", "conv_nchw", "planted", range(2, 3)),
    ("torch_gemm_conv", "conv_nchw", "twin", range(3, 4)),
    ("torch_cast_copy", "cast_vs_copy", "planted", range(0, 4)),
    ("torch_cast_copy", "cast_vs_copy", "twin", range(4, 6)),
    ("torch_train", "train_step", "planted", range(0, 52)),
]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]


def ncu_top(k: dict) -> str:
    rules = [r for r in k.get("ncu_rules", []) if r.get("speedup_pct") is not None]
    if not rules:
        return "–"
    r = max(rules, key=lambda r: r["speedup_pct"])
    return f"{r['rule']}: {r['title']} ({r['speedup_pct']:.0f}%)"


def first(k: dict) -> str:
    if not k["findings"]:
        return "– (none; no rule applies)" if k.get("no_rule") else "– (none)"
    f = k["findings"][0]
    est = f.get("estimated_speedup")
    est_s = f", est. −{est * k['duration_ns'] / 1e3:.0f} µs" if est else ""
    more = f" (+{len(k['findings']) - 1})" if len(k["findings"]) > 1 else ""
    return f"{f['rule']}: {f['title']}{est_s}{more}".replace("|", "\\|")


def bound(k: dict) -> str:
    hr = k.get("headroom")
    return f"{k['bound']}, {hr:.2f}×" if hr is not None else f"{k['bound']}, –"


def esc(s: str) -> str:
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def main() -> None:
    out = Path(sys.argv[1])
    rep = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}

    # ---- ceilings
    bc = {b["kernel"]: b for b in jsonl(BENCH / "bench_ceilings.jsonl") if "kernel" in b}
    dev = jsonl(BENCH / "bench_ceilings.jsonl")[0]
    d = rep["ceilings"]
    clock = d["report"]["device"]["max_gpu_frequency_khz"] * 1e3
    sms = d["report"]["device"]["sm_count"]
    print("| kernel | planted ceiling | bound, headroom today | first finding today | NCU top rule | ncu µs | "
          "measured median µs | measured rate, % of that ceiling |")
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted(d["kernels"], key=lambda k: list(CEILINGS).index(k["name"])):
        what, unit, per_clk = CEILINGS[k["name"]]
        b = bc[k["name"]]
        t = b["median_us"] * 1e-6
        rate = ""
        if unit == "flop" and per_clk:
            r = b["flop"] / t
            rate = f"{r / 1e12:.1f} TFLOP/s, {100 * r / (per_clk * sms * clock):.0f}%"
        elif unit == "mufu":
            ops = 3 * 96 * dev["threads"]
            r = ops / t
            rate = f"{r / 1e12:.2f} T MUFU ops/s, {100 * r / (per_clk * sms * clock):.0f}%"
        elif unit == "bytes":
            rate = f"{b['bytes_min'] / t / 1e12:.2f} TB/s (DRAM peak 4.81)"
        print(f"| {k['name']} | {what} | {bound(k)} | {first(k)} | {esc(ncu_top(k))} | {k['duration_ns'] / 1e3:.1f} | "
              f"{b['median_us']:.1f} | {rate} |")
    for name in ("tiny_chain_256", "empty_kernel_x256"):
        b = bc[name]
        print(f"| {name} (bench only) | {b['launches']} launches in one stream | | | | | {b['median_total_us']:.1f} "
              f"(÷{b['launches']} = {b['median_per_launch_us']:.2f} per launch) | |")
    ch = rep.get("ceilings_chain")
    if ch:
        for f in ch["program_findings"]:
            print(f"\nDuration-only chain report (`ceilings_chain`, {ch['report']['results']} results): program finding "
                  f"{f['rule']}: {f['title']}, est. −{f.get('estimated_saving_ns', 0) / 1e3:.0f} µs; kernels: "
                  + ", ".join(f"{k['name']} ×{k['launches']} {k['duration_ns'] / 1e3:.1f} µs ({bound(k)})"
                              for k in ch["kernels"]))

    # ---- patterns
    bp = {b["kernel"]: b for b in jsonl(BENCH / "bench_patterns.jsonl")}
    d = rep["patterns"]
    ks = {k["name"]: k for k in d["kernels"]}
    print("\n| pair | kernel | role | bound, headroom today | first finding today | NCU top rule | ncu µs | "
          "measured median µs | measured saving |")
    print("|---|---|---|---|---|---|---|---|---|")
    for pair, p, t, what in PATTERNS:
        bkey = {"small_update": "small_update_x4"}.get(p, p)
        tp, tt = bp[bkey]["median_us"], bp[t]["median_us"]
        for name, role in ((p, "planted"), (t, "twin")):
            k = ks[name]
            med = bp[{"small_update": "small_update_x4"}.get(name, name)]["median_us"]
            label = f"{name} ×{k['launches']}" if k["launches"] > 1 else name
            saving = f"{tp - tt:.1f} µs ({100 * (1 - tt / tp):.0f}%)" if role == "planted" else ""
            print(f"| {what if role == 'planted' else ''} | {label} | {role} | {bound(k)} | {first(k)} | "
                  f"{esc(ncu_top(k))} | {k['duration_ns'] / 1e3:.1f} | {med:.1f} | {saving} |")

    # ---- torch
    bt = jsonl(BENCH / "bench_torch.jsonl")
    med = {(b["case"], b["variant"]): b["median_us"] for b in bt if "variant" in b}
    print("\n| case | variant | kernel (launches) | bound, headroom today | first finding today | NCU top rule | "
          "ncu µs | measured step median µs | measured saving |")
    print("|---|---|---|---|---|---|---|---|---|")
    for report, case, variant, ids in TORCH:
        d = rep[report]
        ids = set(ids)
        rows = []
        for k in d["kernels"]:
            mine = [r for r in k["result_ids"] if r in ids]
            if mine:
                share = len(mine) / len(k["result_ids"])
                rows.append((k, len(mine), k["duration_ns"] * share))
        rows.sort(key=lambda r: -r[2])
        total = sum(r[2] for r in rows)
        m = med.get((case, variant))
        sv = ""
        if variant == "planted" and (case, "twin") in med:
            tw = med[(case, "twin")]
            sv = f"{m - tw:.1f} µs ({100 * (1 - tw / m):.0f}%)"
        shown = rows[:4] if len(rows) > 5 else rows
        for i, (k, n, dur) in enumerate(shown):
            print(f"| {case if i == 0 else ''} | {variant if i == 0 else ''} | {esc((k.get('display_name') or k['name'])[:48])} ({n}) | {bound(k)} | "
                  f"{first(k)} | {esc(ncu_top(k))} | {dur / 1e3:.1f} | "
                  f"{f'{m:.1f} (ncu sum {total / 1e3:.1f})' if i == 0 and m else ''} | {sv if i == 0 else ''} |")
        if len(rows) > len(shown):
            rest = rows[len(shown):]
            firsts = sorted({k["findings"][0]["rule"] for k, _, _ in rest if k["findings"]})
            print(f"| | | {len(rest)} more kernels ({sum(n for _, n, _ in rest)} launches) | | first findings: "
                  f"{', '.join(firsts) or 'none'} | | {sum(r[2] for r in rest) / 1e3:.1f} | | |")


if __name__ == "__main__":
    main()
