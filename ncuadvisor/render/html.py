"""HTML renderer: one self-contained page (inline CSS and SVG, no JavaScript, no external requests).

It only formats the result: the roofline chart's coordinates are the one thing computed here.
Every string from the result is untrusted and goes through Jinja2's autoescape; nothing from the
result is ever marked safe except the embedded JSON, which is escaped for a <script> block first.

Big reports (1,000 results and more) stay under 5 MB: the first FULL_CARDS kernels by time (and any kernel a "where to start"
action names) get a full card, every other kernel one row in "Other kernels"; the chart places the first
CHART_POINTS kernels; a result JSON over JSON_EMBED_LIMIT is left out with a note (the JSON output has it).
A small report (up to 100 kernels, a JSON under 2 MB) renders as before: every kernel a card and on the chart,
the JSON embedded.
"""

from __future__ import annotations

import math
import posixpath
from typing import Any

from markupsafe import Markup

from ncuadvisor.render import environment, fmt_rate, shape_tag_lookup, short_name, to_json
from ncuadvisor.units import clip, finite

TEMPLATE = "report.html.j2"
OPEN_CARDS = 20  # kernel cards after this many start closed, so a 1000-kernel report stays usable
FULL_CARDS = 100  # kernels by time with a full card (~8 KB each); the long tail gets one row each
CHART_POINTS = 100  # kernels by time placed on the roofline chart
JSON_EMBED_LIMIT = 2_000_000  # bytes of result JSON embedded at most; a bigger one is left out, with a note
PROGRAM_KERNELS_SHOWN = 50  # kernel names listed under one program-level finding
TAIL_TITLE_CHARS = 300  # characters of a long-tail kernel's full name kept in its tooltip
BOUNDS = ("memory", "compute", "latency", "launch")


# ----------------------------------------------------------------------------------------------- helpers


def _number(v: Any) -> float | None:
    """A finite float, or None (None, NaN, infinities, strings and booleans are not numbers here)."""
    return None if isinstance(v, bool) else finite(v)


class _Rec(dict):
    """A result mapping whose missing keys read as None, so templates can use `k.name` on partial results."""

    def __missing__(self, key: Any) -> None:
        return None


def _view(o: Any) -> Any:
    if isinstance(o, dict):
        return _Rec((k, _view(v)) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        return [_view(v) for v in o]
    return o


def _sanitize(o: Any) -> Any:
    """NaN/inf -> None, for the JSON block when a result carries them (JSON has no NaN)."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _sanitize(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_sanitize(v) for v in o]
    return o


def _compact_json(result: dict[str, Any]) -> str:
    try:
        return to_json(result, indent=None)
    except ValueError:
        return to_json(_sanitize(result), indent=None)


def script_json(result: dict[str, Any], text: str | None = None) -> Markup:
    """The result as JSON that cannot end its <script> block: <, > and & become \\u escapes (still valid JSON).

    `text` is the result's compact JSON when the caller has it already."""
    text = _compact_json(result) if text is None else text
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)  # safe: no <, > or & left


def fmt_num(v: Any) -> str:
    """Evidence values: integers with thousands separators, others to 3 significant digits."""
    if v is None:
        return "–"
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    f = _number(v)
    if f is None:
        return str(v)
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    if abs(f) >= 1000:
        return f"{f:,.0f}"
    if abs(f) >= 100:
        return f"{f:.1f}"
    return f"{f:.3g}"


def fmt_pct100(v: Any, digits: int = 0) -> str:
    """A percentage already on a 0..100 scale (SOL values, NCU speedups)."""
    f = _number(v)
    return "–" if f is None else f"{f:.{digits}f}%"


def css_width(v: Any, scale: float = 100.0) -> str:
    """A bar width for a style attribute: always a clamped number, never text from the result."""
    f = _number(v)
    if f is None:
        return "0"
    return f"{max(0.0, min(100.0, f * scale)):.1f}"


def safe_short_name(v: Any, limit: int = 80) -> str:
    return "–" if v is None else short_name(str(v), limit)


def bound_class(v: Any) -> str:
    return v if v in BOUNDS else "unknown"


def css_token(v: Any) -> str:
    """A category as a CSS class suffix: letters, digits and dashes only."""
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in str(v or ""))[:40] or "none"


def basename(v: Any) -> str:
    return "–" if not v else posixpath.basename(str(v).replace("\\", "/")) or str(v)


def times(a: Any, b: Any) -> float | None:
    """duration × fraction for a display value (time saved), None when either is missing."""
    fa, fb = _number(a), _number(b)
    return None if fa is None or fb is None else fa * fb


def is_high_headroom(v: Any) -> bool:
    f = _number(v)
    return f is not None and f >= 2.0


# ----------------------------------------------------------------------------------------------- roofline chart

W, H = 1120, 470
TOP, BOTTOM = 24, 62  # plot margins (px)
Y_TICKS = 64  # room left of the plot for the y tick labels and the axis title
RIGHT = 210  # room right of the plot for the ceiling labels
STRIP_X, STRIP_W, STRIP_GAP = 46, 84, 18  # the "no FLOPs" strip at the left edge
MAX_DECADES = 10
LABEL_GAP = 13  # min vertical distance between ceiling labels


def _peak_label(keys: list[str]) -> str:
    """['tensor_fp16', 'tensor_bf16'] -> 'FP16/BF16 tensor'; ['fp32', 'tensor_fp64'] -> 'FP32, FP64 tensor'."""
    plain = [k.upper().replace("_", " ") for k in keys if not k.startswith("tensor_")]
    tensor = [k[len("tensor_") :].upper().replace("_", " ") for k in keys if k.startswith("tensor_")]
    parts = (["/".join(plain)] if plain else []) + (["/".join(tensor) + " tensor"] if tensor else [])
    return ", ".join(parts)


def _roofs(peaks: Any) -> list[tuple[float, str]]:
    """Every positive FLOP peak, equal peaks merged into one labelled roof, lowest first."""
    if not isinstance(peaks, dict):
        return []
    vals = [(v, str(k)) for k, v in ((k, _number(v)) for k, v in peaks.items()) if v is not None and v > 0]
    vals.sort(key=lambda t: t[0])  # stable: equal peaks keep the device's order
    merged: list[tuple[float, list[str]]] = []
    for v, k in vals:
        if merged and abs(v - merged[-1][0]) <= 1e-3 * v:
            merged[-1][1].append(k)
        else:
            merged.append((v, [k]))
    out = []
    for v, keys in merged:
        out.append((v, _peak_label(keys)))
    return out


def _si_tick(v: float) -> str:
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:g} {prefix}"
    return f"{v:g}"


def _x_tick(e: int) -> str:
    return f"{10.0**e:g}" if -3 <= e <= 4 else f"1e{e}"


def _f(v: float) -> str:
    return f"{v:.1f}"


def roofline_chart(result: dict[str, Any], limit: int | None = CHART_POINTS) -> dict[str, Any]:
    """SVG primitives for the log-log roofline: grid, ceilings, one point per kernel (strip for FLOP-less ones).

    Only the first `limit` kernels (the result orders them by time) are placed; `shown` says how many of how many."""
    report = result.get("report") or {}
    device = report.get("device") or {}
    bw = _number(device.get("peak_dram_bytes_per_s"))
    bw = bw if bw and bw > 0 else None
    roofs = _roofs(device.get("peak_flops_per_s"))
    every = result.get("kernels") or []
    kernels = every if limit is None else every[:limit]
    shown = None
    if len(kernels) < len(every):
        share = sum(_number(k.get("time_share")) or 0.0 for k in kernels if isinstance(k, dict))
        shown = {"count": len(kernels), "total": len(every), "share": share}

    placed, strip, unplaced = [], [], []
    for i, k in enumerate(kernels):
        if not isinstance(k, dict):
            continue
        rl = k.get("roofline") or {}
        inten = _number(rl.get("intensity"))
        perf = _number(rl.get("achieved_flops_per_s"))
        if inten is not None and perf is not None and inten > 0 and perf > 0:
            placed.append((i, k, inten, perf))
        else:
            peak_bw = _number(rl.get("peak_dram_bytes_per_s")) or bw
            got = _number(rl.get("achieved_dram_bytes_per_s"))
            if got is not None and peak_bw:
                strip.append((i, k, max(0.0, min(1.0, got / peak_bw)), got))
            else:
                unplaced.append((i, k))

    # axis ranges in decades
    xs = [p[2] for p in placed]
    if bw:
        xs += [v / bw for v, _ in roofs]
    xs = [x for x in xs if x > 0]
    xlo = math.floor(math.log10(min(xs + [0.1])))
    xhi = math.ceil(math.log10(max(xs + [1000.0]) * 1.5))
    xlo = max(xlo, xhi - MAX_DECADES)
    ys = [p[3] for p in placed] + [v for v, _ in roofs]
    top = max(ys) if ys else (bw * 10.0**xhi if bw else 1e12)
    yhi = math.ceil(math.log10(top * 1.5))
    low_cands = [p[3] / 1.5 for p in placed]
    if bw:
        low_cands.append(bw * 10.0**xlo)
    ylo = math.floor(math.log10(min(low_cands))) if low_cands else yhi - 5
    ylo = max(min(ylo, yhi - 3), yhi - MAX_DECADES)

    x0 = (STRIP_X + STRIP_W + STRIP_GAP if strip else 0) + Y_TICKS
    x1, y0, y1 = W - RIGHT, TOP, H - BOTTOM  # plot box: x0..x1, y0 (top)..y1 (bottom)

    def px(x: float) -> float:
        lx = math.log10(x)
        return x0 + (min(max(lx, xlo), xhi) - xlo) / (xhi - xlo) * (x1 - x0)

    def py(y: float) -> float:
        ly = math.log10(y)
        return y1 - (min(max(ly, ylo), yhi) - ylo) / (yhi - ylo) * (y1 - y0)

    grid, ticks = [], []
    for e in range(xlo, xhi + 1):
        x = _f(px(10.0**e))
        grid.append({"x1": x, "y1": _f(y0), "x2": x, "y2": _f(y1)})
        ticks.append({"x": x, "y": _f(y1 + 16), "text": _x_tick(e), "anchor": "middle"})
    for e in range(ylo, yhi + 1):
        y = _f(py(10.0**e))
        grid.append({"x1": _f(x0), "y1": y, "x2": _f(x1), "y2": y})
        ticks.append({"x": _f(x0 - 6), "y": _f(py(10.0**e) + 4), "text": _si_tick(10.0**e), "anchor": "end"})

    ceilings, labels, roof_labels = [], [], []
    top_roof = roofs[-1][0] if roofs else None
    if bw:
        xa = max(10.0**xlo, 10.0**ylo / bw)
        xb = min(10.0**xhi, (top_roof or 10.0**yhi) / bw, 10.0**yhi / bw)
        if xb > xa:
            ceilings.append(
                {"x1": _f(px(xa)), "y1": _f(py(bw * xa)), "x2": _f(px(xb)), "y2": _f(py(bw * xb)), "cls": "ceil-mem"}
            )
            # the label sits along the slope, a third of the way up
            xm = 10 ** (math.log10(xa) + (math.log10(xb) - math.log10(xa)) * 0.3)
            ppd_x = (x1 - x0) / (xhi - xlo)
            ppd_y = (y1 - y0) / (yhi - ylo)
            angle = -math.degrees(math.atan2(ppd_y, ppd_x))
            lx, ly = px(xm), py(bw * xm) - 6
            labels.append(
                {
                    "x": _f(lx),
                    "y": _f(ly),
                    "text": f"DRAM {fmt_rate(bw, 'B/s')}",
                    "anchor": "middle",
                    "transform": f"rotate({angle:.1f} {lx:.1f} {ly:.1f})",
                    "cls": "lbl-mem",
                }
            )
    for v, name in roofs:
        if not (ylo <= math.log10(v) <= yhi):
            continue
        xa = max(10.0**xlo, v / bw) if bw else 10.0**xlo
        if xa >= 10.0**xhi:
            continue
        y = py(v)
        ceilings.append({"x1": _f(px(xa)), "y1": _f(y), "x2": _f(x1), "y2": _f(y), "cls": "ceil-flop"})
        roof_labels.append([y + 4, f"{name} · {fmt_rate(v, 'FLOP/s')}"])
    # ceiling labels sit right of the plot, pushed apart so none overlap
    roof_labels.sort()
    for n in range(len(roof_labels) - 2, -1, -1):  # from the bottom up: keep each above the next
        roof_labels[n][0] = min(roof_labels[n][0], roof_labels[n + 1][0] - LABEL_GAP)
    for y, text in roof_labels:
        labels.append(
            {"x": _f(x1 + 6), "y": _f(y), "text": text, "anchor": "start", "transform": "", "cls": "lbl-flop"}
        )

    def point(i: int, k: dict[str, Any], cx: float, cy: float, lx: float, ly: float, extra: str) -> dict[str, Any]:
        """One kernel's dot: area by its time share, colour by its bound, a link to its card, a tooltip."""
        share = _number(k.get("time_share")) or 0.0
        name = k.get("demangled") or k.get("name") or "?"
        shape = f"grid {k.get('grid')} block {k.get('block')}\n" if k.get("grid") else ""
        return {
            "cx": _f(cx),
            "cy": _f(cy),
            "r": _f(4 + 10 * math.sqrt(max(0.0, min(1.0, share)))),
            "cls": bound_class(k.get("bound")),
            "label": f"#{i}",
            "lx": _f(lx),
            "ly": _f(ly),
            "href": f"#{k.get('id') or 'k' + str(i)}",
            "title": f"#{i} {name}\n{shape}{extra}",
        }

    points = []
    for n, (i, k, inten, perf) in enumerate(placed):
        cx, cy = px(inten), py(perf)
        points.append(
            point(
                i,
                k,
                cx,
                cy,
                cx + 9,
                cy - 7 if n % 2 == 0 else cy + 14,
                f"{inten:.3g} FLOP/byte, {fmt_rate(perf, 'FLOP/s')} achieved, {k.get('bound') or 'unknown'} bound",
            )
        )
    strip_box = None
    if strip:
        sx0, sx1 = STRIP_X, STRIP_X + STRIP_W
        strip_box = {
            "x": _f(sx0),
            "y": _f(y0),
            "w": _f(sx1 - sx0),
            "h": _f(y1 - y0),
            "cx": _f((sx0 + sx1) / 2),
            "label_y": _f(y1 + 16),
            "ticks": [
                {"y": _f(y1 - f * (y1 - y0)), "ty": _f(y1 - f * (y1 - y0) + 4), "text": f"{f:.0%}"}
                for f in (0.0, 0.5, 1.0)
            ],
        }
        cols = 3
        for n, (i, k, frac, got) in enumerate(strip):
            cx = sx0 + 14 + (n % cols) * ((sx1 - sx0 - 28) / (cols - 1))
            cy = y1 - frac * (y1 - y0)
            points.append(
                point(i, k, cx, cy, cx + 6, cy - 8, f"no FLOPs; DRAM {fmt_rate(got, 'B/s')} ({frac:.0%} of peak)")
            )

    return {
        "w": W,
        "h": H,
        "plot": {"x": _f(x0), "y": _f(y0), "w": _f(x1 - x0), "h": _f(y1 - y0)},
        "x_label": {"x": _f((x0 + x1) / 2), "y": _f(H - 14)},
        "y_label": {"x": _f(x0 - Y_TICKS + 14), "y": _f((y0 + y1) / 2)},
        "grid": grid,
        "ticks": ticks,
        "ceilings": ceilings,
        "labels": labels,
        "points": points,
        "strip": strip_box,
        "unplaced": [
            {"index": i, "id": k.get("id") or f"k{i}", "name": k.get("name"), "demangled": k.get("demangled")}
            for i, k in unplaced
        ],
        "empty": not placed and not strip,
        "no_ceilings": not ceilings,
        "shown": shown,
    }


# ----------------------------------------------------------------------------------------------- entry point


def page_layout(result: dict[str, Any], full_cards: int = FULL_CARDS) -> dict[str, Any]:
    """Which kernels get a full card and which one row in "Other kernels" (indices into result["kernels"]).

    The first `full_cards` kernels by time get cards, and so does every kernel a "where to start" action links to;
    the rest (the long tail) are rows, each with the kernel's id so links still land on it."""
    kernels = result.get("kernels") or []
    ids = [(k.get("id") if isinstance(k, dict) else None) or f"k{i}" for i, k in enumerate(kernels)]
    wanted = {a.get("kernel_id") for a in result.get("top_actions") or [] if isinstance(a, dict)}
    cards = [i for i in range(len(kernels)) if i < full_cards or ids[i] in wanted]
    carded = set(cards)
    tail = [i for i in range(len(kernels)) if i not in carded]
    share = sum(_number(kernels[i].get("time_share")) or 0.0 for i in tail if isinstance(kernels[i], dict))
    duration = sum(_number(kernels[i].get("duration_ns")) or 0.0 for i in tail if isinstance(kernels[i], dict))
    return {"cards": cards, "tail": tail, "tail_share": share, "tail_duration_ns": duration}


def render_html(
    result: dict,
    full_cards: int = FULL_CARDS,
    chart_points: int | None = CHART_POINTS,
    json_limit: int = JSON_EMBED_LIMIT,
) -> str:
    """The page. The limits keep a big report under 5 MB; a report under all of them renders every kernel in full."""
    env = environment(autoescape=True)
    env.filters.update(
        {
            "num": fmt_num,
            "pct100": fmt_pct100,
            "width": css_width,
            "sname": safe_short_name,
            "bound_class": bound_class,
            "css_token": css_token,
            "basename": basename,
            "clip": clip,
        }
    )
    env.globals.update(
        {"times": times, "high_headroom": is_high_headroom, "empty": _Rec(), "shape_tag": shape_tag_lookup(result)}
    )
    template = env.get_template(TEMPLATE)
    text = _compact_json(result)
    json_bytes = len(text.encode())
    return template.render(
        r=_view(result),
        chart=roofline_chart(result, chart_points),
        layout=page_layout(result, full_cards),
        result_json=script_json(result, text) if json_bytes <= json_limit else None,
        json_bytes=json_bytes,
        open_cards=OPEN_CARDS,
        program_kernels_shown=PROGRAM_KERNELS_SHOWN,
        tail_title_chars=TAIL_TITLE_CHARS,
    )
