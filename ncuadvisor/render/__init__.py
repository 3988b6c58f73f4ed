"""Renderers: a result (or a diff) as HTML, markdown, SARIF, JSON or terminal text; they format, never compute.

Each renderer reads a view (`render.view`, `render.diff_view`): plain objects with every default filled. The
templates share one Jinja2 environment: autoescape on for HTML, StrictUndefined everywhere (a misspelt field is an
error, not an empty string), and the named filters of `ncuadvisor.units` for numbers and units.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from ncuadvisor.errors import AdvisorError
from ncuadvisor.units import (
    basename,
    basename_loc,
    clip,
    compact_name,
    fmt_bytes,
    fmt_change,
    fmt_delta_ns,
    fmt_hz,
    fmt_ns,
    fmt_num,
    fmt_pct,
    fmt_pct100,
    fmt_rate,
    fmt_threshold,
    fmt_x,
    number,
    short_name,
)

if TYPE_CHECKING:
    import jinja2
    from rich.console import Console

# C0 and C1 control characters (ESC, BEL, CSI, OSC ...) but tab and newline: from a kernel name or a saved result
# they would reach the terminal as escape sequences (window titles, hyperlinks, a cleared screen).
# Also the invisible format characters that reorder or hide what follows (bidirectional overrides and isolates,
# zero-width spaces and joiners, the byte-order mark): a name holding U+202E reads backwards.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
# line and paragraph breaks in one item of data: a kernel name must not start a line of its own (a forged line, or
# markup split between two lines)
_BREAK_RE = re.compile("[\n\u2028\u2029]")


def escape_terminal(text: object) -> str:
    """Any text bound for the terminal: control and invisible format characters shown as `?`, line breaks as
    spaces, rich markup escaped."""
    from rich.markup import escape

    return escape(_BREAK_RE.sub(" ", _CONTROL_RE.sub("?", str(text))))


# The number, unit and name filters every template may use (templates/_base.html.j2 and the markdown ones).
# per-instruction metrics in words, for the source tables' "share of the kernel's" column
SOURCE_METRIC_WORDS = {
    "inst_executed": "executed instructions",
    "derived__memory_l2_theoretical_sectors_global_excessive": "excess L2 sectors",
    "derived__memory_l1_wavefronts_shared_excessive": "excess shared-memory wavefronts",
    "memory_l2_theoretical_sectors_global": "L2 sectors",
}
STALL_SAMPLES = "smsp__pcsamp_warps_issue_stalled_"

# evidence: words for the metric names rules use without a label of their own
METRIC_WORDS = {
    "dram_fraction_of_peak": "DRAM throughput, of its peak",
    "time_share": "share of the program's GPU time",
    "headroom": "headroom (measured time ÷ roofline floor)",
    "fp64_flop_share": "FP64 share of the FLOPs",
    "long_scoreboard_share": "stalls on memory (long scoreboard), share",
    "exchange_stall_share": "stalls on shared-memory exchange, share",
    "overhead_instruction_share": "overhead instructions, share",
    "loads_per_warp": "loads per warp",
    "loads_per_fma": "loads per FMA",
    "atomic_per_load": "atomics per load",
    "shared_per_global_load": "shared-memory loads per global load",
    "shared_wavefronts_per_flop": "shared-memory wavefronts per FLOP",
    "global_load_bytes_per_flop": "global load bytes per FLOP",
}


def metric_words(key: Any) -> str:
    """A per-instruction metric in words: 'inst_executed' -> 'executed instructions',
    'smsp__pcsamp_warps_issue_stalled_long_scoreboard' -> 'long-scoreboard stall samples'; else the key."""
    k = "" if key is None else str(key)
    if k in SOURCE_METRIC_WORDS:
        return SOURCE_METRIC_WORDS[k]
    if k.startswith(STALL_SAMPLES):
        return k[len(STALL_SAMPLES) :].replace("_", "-") + " stall samples"
    return k


def precision_words(key: Any) -> str:
    """A precision key in words: 'fp32' -> 'FP32', 'tensor_bf16' -> 'BF16 tensor'; '' for none."""
    k = "" if key is None else str(key)
    return f"{k[len('tensor_') :].upper()} tensor" if k.startswith("tensor_") else k.upper()


FILTERS = {
    "metric_words": metric_words,
    "precision": precision_words,
    "ns": fmt_ns,
    "dns": fmt_delta_ns,
    "pct": fmt_pct,
    "pct100": fmt_pct100,
    "chg": fmt_change,
    "thr": fmt_threshold,
    "bytes": fmt_bytes,
    "rate": fmt_rate,
    "x": fmt_x,
    "num": fmt_num,
    "sname": short_name,
    "cname": compact_name,  # a kernel's short name, as the terminal shows it
    "clip": clip,
    "basename": basename,
    "basename_loc": basename_loc,
    "hz": fmt_hz,
}


BOUNDS = ("memory", "compute", "latency", "launch")
# what the markdown and the terminal say when no entry is worth fixing first
NOTHING_FIRST = "Nothing to fix first: every kernel is near its roofline bound, is library code left at its shape, or has no finding."


def bound_class(v: Any) -> str:
    """A kernel's bound as a CSS class suffix: one of BOUNDS, else 'unknown'."""
    return v if isinstance(v, str) and v in BOUNDS else "unknown"


def css_width(v: Any, scale: float = 100.0) -> str:
    """A bar width for a style attribute: always a clamped number, never text from the result."""
    f = number(v)
    return "0" if f is None else f"{max(0.0, min(100.0, f * scale)):.1f}"


def css_token(v: Any) -> str:
    """A category as a CSS class suffix: letters, digits and dashes only."""
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in str(v or ""))[:40] or "none"


_BREAK_AFTER = re.compile(r"(::|[_<,/(])")


def break_points(v: Any) -> Markup:
    """A long name, escaped, with a line-break opportunity (<wbr>) after `_`, `::`, `<`, `,`, `/` and `(`, so that
    a narrow cell breaks it between words, never mid-word."""
    parts = _BREAK_AFTER.split("" if v is None else str(v))
    return Markup("").join(Markup(escape(p)) + (Markup("<wbr>") if n % 2 else Markup("")) for n, p in enumerate(parts))


# The HTML pages' own filters (templates/_base.html.j2 and the pages that extend it).
def sort_key(v: Any) -> str:
    """A number as a table's sort key (a `data-` attribute the page's script compares): six significant digits (ties
    keep the kernels' order; thousands of rows stay small), "" when it is none."""
    f = number(v)
    return "" if f is None or f != f or f in (float("inf"), float("-inf")) else f"{f:.6g}"


HTML_FILTERS = {
    "sortkey": sort_key,
    "width": css_width,
    "bound_class": bound_class,
    "css_token": css_token,
    "wbr": break_points,
}

PIPE_WIDTH = 4096  # the console width when stdout is not a terminal: no line is wrapped
HIGH_HEADROOM = 2.0  # measured time ÷ roofline floor at which the headroom is shown in bold


def high_headroom(v: Any) -> bool:
    """Whether a headroom is worth pointing out (the templates' test `is high_headroom`)."""
    f = number(v)
    return f is not None and f >= HIGH_HEADROOM


def templates_dir() -> Path:
    """templates/ inside the installed package, or the repository's top-level templates/ in a source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise AdvisorError("the templates folder is missing from this installation (reinstall ncuadvisor)")


_BYTECODE: list[str | None] = [None]


def use_template_cache(folder: str | None) -> None:
    """Cache the templates' compiled code in `folder` (the command line passes the user's cache folder; None: every
    run compiles them): compiling the HTML page's templates costs ~0.25 s, more than rendering them. Keyed by each
    template's source, so an edited template is compiled again."""
    _BYTECODE[0] = folder


def _bytecode_cache(variant: str = "") -> jinja2.BytecodeCache | None:
    """jinja2's cache in the folder `use_template_cache` set, where a cache file that cannot be read or written (the
    folder gone, the disk full) only means that the template is compiled. `variant` names what the compiled code
    depends on besides the template's source (the HTML's `finalize` is compiled in): its own files."""
    import jinja2

    class QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket: Any) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:
                pass

        def dump_bytecode(self, bucket: Any) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    pattern = f"__jinja2_{variant}_%s.cache" if variant else "__jinja2_%s.cache"
    return QuietBytecodeCache(_BYTECODE[0], pattern) if _BYTECODE[0] else None


class Prose(str):
    """Text the view marks as prose (a fix, a finding's message, a warning), where `code` in backticks is code: the
    HTML shows it in <code> (`prose_html`), markdown and the terminal as the text it is."""


CODE_SPAN = re.compile(r"`([^`\n]+)`")


def prose_html(value: Any) -> Any:
    """The HTML templates' finalize: prose (`Prose`) escaped, its `code` spans as <code>; anything else as it is
    (autoescape escapes it)."""
    if not isinstance(value, Prose):
        return value
    return Markup(CODE_SPAN.sub(r"<code>\1</code>", str(escape(str(value)))))


def environment(autoescape: bool, filters: dict[str, Any] | None = None) -> jinja2.Environment:
    """The templates' environment: autoescape for HTML (off for markdown, which escapes with its own filters),
    StrictUndefined, the number filters and a format's own `filters`; compiled templates are cached
    (`_bytecode_cache`)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=_bytecode_cache("prose" if autoescape else ""),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=prose_html if autoescape else None,
    )
    env.filters.update(FILTERS)
    env.tests["high_headroom"] = high_headroom
    env.globals["NOTHING_FIRST"] = NOTHING_FIRST
    env.filters.update(filters or {})
    return env


def to_json(result: Any, indent: int | None = 2) -> str:
    """A result or diff dict as JSON text (NaN is refused: the caller sanitizes)."""
    return json.dumps(result, indent=indent, ensure_ascii=False, allow_nan=False, default=_json_default)


def _json_default(o: Any) -> Any:
    try:
        return float(o)
    except (TypeError, ValueError):
        return str(o)


def console_for_output() -> Console:
    """A console for the terminal renderers on stdout: the terminal's width; piped or redirected, wide enough that
    nothing wraps (a line per item, whatever reads it) and no colour codes."""
    from rich.console import Console

    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=PIPE_WIDTH, no_color=True)
