"""The Python API: `ncuadvisor.analyze(path)` and `ncuadvisor.diff(a, b)` for notebooks and programs; the command line,
the digest and the MCP server are layers over the same calls.

`analyze` returns a `Result`: the typed result of the analysis (`.record`, the JSON's dataclasses) with what a reader
asks of it: `.kernels`, `.where_to_start`, `.kernel(name)`, `.to_pandas()`, `.digest()`, and in Jupyter the HTML report
(`_repr_html_`). A `Kernel` is one kernel group's entry (its fields read through: `k.bound`, `k.findings`), shown in
Jupyter as its card and the roofline. `diff` returns a `Diff`, shown as the diff page. docs/api.md has a worked example.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ncuadvisor.errors import InputError
from ncuadvisor.result.lookup import find_kernel
from ncuadvisor.result.types import KernelEntry, LaunchInterval, TopAction
from ncuadvisor.result.types import Result as ResultRecord

if TYPE_CHECKING:
    import pandas

    from ncuadvisor.comparison.types import DiffResult

PathLike = str | os.PathLike[str]
NOTEBOOK_CARDS = 20  # kernels with a full card in a result's notebook display (the rest one row each)
FRAME_HEIGHT_PX = 640  # the height of the frame a page is shown in, in a notebook


def _rules(
    rules_dir: Sequence[PathLike] | PathLike | None,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    config: PathLike | None,
) -> list[Any]:
    """The rules under the configuration in effect, the arguments replacing the file's (as on the command line)."""
    from ncuadvisor.rulekit.config import configured_rules, resolve_config

    folders = [rules_dir] if isinstance(rules_dir, (str, os.PathLike)) else rules_dir
    resolved = resolve_config(
        Path(config) if config is not None else None,
        list(select) if select is not None else None,
        list(ignore) if ignore is not None else None,
        [Path(f) for f in folders] if folders is not None else None,
    )
    return configured_rules(resolved)


GIVEN = "given with --launch-interval-us"


def given_interval(launch_interval_us: float | None) -> LaunchInterval | None:
    """The host's launch interval a user gives, in µs, as the program rules read it; a value that is not a positive
    number under 1000 µs raises `InputError` (one line)."""
    from ncuadvisor.load.launchinterval import valid_interval_ns

    if launch_interval_us is None:
        return None
    us = launch_interval_us
    ns = valid_interval_ns(us * 1000.0) if isinstance(us, (int, float)) and not isinstance(us, bool) else None
    if ns is None:
        raise InputError(f"--launch-interval-us {us!r}: give the host's launch interval in µs, above 0 and under 1000")
    return LaunchInterval(interval_ns=ns, source=GIVEN)


def result_record(
    path: PathLike,
    rules: list[Any] | None = None,
    host_trace: PathLike | None = None,
    launch_interval_us: float | None = None,
) -> ResultRecord:
    """The typed result of a report (analysed with `rules`, default the configured ones) or of a saved result JSON
    (read as it is). The command line's `report` and `diff` call this. `launch_interval_us`: the host's launch
    interval (PRG004), else the one `ncuadvisor profile` kept beside the report, if any."""
    interval = given_interval(launch_interval_us)
    p = Path(path)
    if p.suffix.lower() == ".json":
        from ncuadvisor.saved.validate import REPORT_KIND, load_saved

        saved = load_saved(p, want=(REPORT_KIND,))
        assert isinstance(saved, ResultRecord)
        return saved
    from ncuadvisor.pipeline.analyze import analyze as analyze_report

    timeline = None
    if host_trace is not None:
        from ncuadvisor.analysis.hosttrace import read_trace

        timeline = read_trace(Path(host_trace))
    rules = rules if rules is not None else _rules(None, None, None, None)
    return analyze_report(p, rules=rules, host=timeline, launch_interval=interval)


def analyze(
    path: PathLike,
    rules_dir: Sequence[PathLike] | PathLike | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    config: PathLike | None = None,
    host_trace: PathLike | None = None,
    launch_interval_us: float | None = None,
) -> Result:
    """Analyze an Nsight Compute report (.ncu-rep, .ncu-repz, .xz/.gz of one), or read a saved result (.json).

    `rules_dir`: folders of your own rules; `select`/`ignore`: rule codes or prefixes (replacing the configuration's,
    as `--select`/`--ignore` do); `config`: a pyproject.toml or ncuadvisor.toml (default: the nearest one);
    `host_trace`: a torch.profiler trace of the same program, for wall-time savings; `launch_interval_us`: the host's
    launch interval where the program runs (PRG004's saving; default: the one `ncuadvisor profile` measured and
    kept beside the report, else unknown). A report that cannot be read raises `ncuadvisor.errors.InputError` (one
    line that says why)."""
    return Result(result_record(path, _rules(rules_dir, select, ignore, config), host_trace, launch_interval_us))


def diff(
    before: PathLike | Result,
    after: PathLike | Result,
    threshold: float | None = None,
    rules_dir: Sequence[PathLike] | PathLike | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
) -> Diff:
    """Compare two reports (or saved results, or `Result`s) of the same program: time, bound and findings per kernel,
    the verdict. `threshold`: the noise threshold as a fraction (default 5%)."""
    from ncuadvisor.comparison import compare

    rules = _rules(rules_dir, select, ignore, None)
    sides = [s.record if isinstance(s, Result) else result_record(s, rules) for s in (before, after)]
    return Diff(compare(sides[0], sides[1], threshold=threshold))


def _frame(page: str) -> str:
    """A whole HTML page inside an iframe (`srcdoc`), so that its stylesheet stays out of the notebook's."""
    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:{FRAME_HEIGHT_PX}px;'
        'border:1px solid #ddd" sandbox=""></iframe>'
    )


class Kernel:
    """One kernel group of a result: the fields of its entry (`ncuadvisor.result.types.KernelEntry`) read through
    (`k.name`, `k.bound`, `k.headroom`, `k.roofline`, `k.findings`), its digest, and its card in Jupyter."""

    def __init__(self, entry: KernelEntry, result: Result) -> None:
        self.entry = entry
        self._result = result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.entry, name)

    def __repr__(self) -> str:
        e = self.entry
        first = e.findings[0].rule if e.findings else "no finding"
        return f"<Kernel {e.id} {e.name}: {e.bound}-bound, {e.duration_ns / 1e3:.1f} µs, {first}>"

    def to_dict(self) -> dict[str, Any]:
        """The kernel's entry as in the result's JSON."""
        return self.entry.to_dict()

    def digest(self) -> str:
        """The kernel's digest (`--kernel NAME --format digest`)."""
        from ncuadvisor.render.digest import render_digest

        return render_digest(self._result.record, kernel=self.entry)

    def digest_json(self) -> dict[str, Any]:
        """The kernel's digest as data (`--kernel NAME --format digest-json`)."""
        from ncuadvisor.render.digest import digest_data

        return digest_data(self._result.record, kernel=self.entry)

    def html(self) -> str:
        """A page of this kernel alone: its card, the roofline with its point, its "where to start" entries."""
        from ncuadvisor.render.html import render_html

        rec = self._result.record
        alone = replace(
            rec,
            kernels=[self.entry],
            program_findings=[],
            top_actions=[a for a in rec.top_actions if a.kernel_id == self.entry.id],
        )
        return render_html(alone)

    def _repr_html_(self) -> str:
        return _frame(self.html())


class Result:
    """The analysis of one report: `kernels` by total GPU time, `where_to_start`, `kernel(name)`, `to_pandas()`, the
    digest, and the HTML report in Jupyter. `record` is the typed result itself (`to_dict()` is the JSON)."""

    def __init__(self, record: ResultRecord) -> None:
        self.record = record

    def __repr__(self) -> str:
        rep = self.record.report
        return (
            f"<ncuadvisor.Result {rep.name}: {len(self.record.kernels)} kernels, {rep.total_duration_ns / 1e6:.2f} ms>"
        )

    @property
    def kernels(self) -> list[Kernel]:
        """Every kernel group, the largest total GPU time first."""
        return [Kernel(k, self) for k in self.record.kernels]

    @property
    def where_to_start(self) -> list[TopAction]:
        """The fixes ranked by the time they save (kernel and program findings)."""
        return list(self.record.top_actions)

    @property
    def program_findings(self) -> list[Any]:
        return list(self.record.program_findings)

    @property
    def report(self) -> Any:
        """The report analysed: path, device, total time, sections, warnings."""
        return self.record.report

    def kernel(self, name: str) -> Kernel:
        """A kernel by id (`k3`), name, demangled or display name, or a part of one that only it has. InputError
        (`ncuadvisor.errors`) when none matches or several do (it lists them with their ids)."""
        return Kernel(find_kernel(self.record, name), self)

    def to_dict(self) -> dict[str, Any]:
        """The result's JSON as a dict (what `ncuadvisor report --format json` writes)."""
        return self.record.to_dict()

    def to_json(self) -> str:
        from ncuadvisor.render import to_json

        return to_json(self.record.to_dict()) + "\n"

    def digest(self, top: int | None = None) -> str:
        """The digest (`--format digest`): where to start and the top kernels, within 6,000 characters."""
        from ncuadvisor.render.digest import DEFAULT_TOP, render_digest

        return render_digest(self.record, top=DEFAULT_TOP if top is None else top)

    def digest_json(self, top: int | None = None) -> dict[str, Any]:
        """The digest as data (`--format digest-json`)."""
        from ncuadvisor.render.digest import DEFAULT_TOP, digest_data

        return digest_data(self.record, top=DEFAULT_TOP if top is None else top)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per kernel group: its identity, time, bound, headroom, limiter, occupancy and first finding.
        Needs pandas (`pip install 'ncuadvisor[pandas]'`)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "Result.to_pandas() needs pandas, an optional extra: pip install 'ncuadvisor[pandas]'"
            ) from exc
        return pd.DataFrame([_row(k) for k in self.record.kernels], columns=list(ROW_COLUMNS))

    def html(self) -> str:
        """The HTML report (`--format html`)."""
        from ncuadvisor.render.html import render_html

        return render_html(self.record)

    def _repr_html_(self) -> str:
        from ncuadvisor.render.html import render_html

        return _frame(render_html(self.record, full_cards=NOTEBOOK_CARDS))


ROW_COLUMNS = (
    "id",
    "name",
    "demangled",
    "language",
    "launches",
    "duration_ns",
    "per_launch_ns",
    "time_share",
    "bound",
    "limiter",
    "headroom",
    "theoretical_ns",
    "achieved_occupancy_pct",
    "findings",
    "first_rule",
    "first_title",
    "estimated_speedup",
    "estimated_saving_ns",
    "location",
)


def _row(k: KernelEntry) -> dict[str, Any]:
    first = k.findings[0] if k.findings else None
    speedup = first.estimated_speedup if first is not None else None
    return {
        "id": k.id,
        "name": k.name,
        "demangled": k.demangled,
        "language": k.language,
        "launches": k.launches,
        "duration_ns": k.duration_ns,
        "per_launch_ns": k.per_launch_ns,
        "time_share": k.time_share,
        "bound": k.bound,
        "limiter": k.roofline.limiter,
        "headroom": k.headroom,
        "theoretical_ns": k.roofline.theoretical_ns,
        "achieved_occupancy_pct": k.launch.achieved_occupancy_pct,
        "findings": len(k.findings),
        "first_rule": first.rule if first is not None else None,
        "first_title": first.title if first is not None else None,
        "estimated_speedup": speedup,
        "estimated_saving_ns": k.analysed_duration_ns * speedup if speedup is not None else None,
        "location": first.location if first is not None else None,
    }


class Diff:
    """The comparison of two results: `record` (the typed diff: `verdict`, `summary`, `kernels`, `total`), its JSON
    (`to_dict()`), and the diff page in Jupyter."""

    def __init__(self, record: DiffResult) -> None:
        self.record = record

    def __repr__(self) -> str:
        s = self.record.summary
        return (
            f"<ncuadvisor.Diff {self.record.verdict}: {s.improved} improved, {s.regressed} regressed, "
            f"{s.unchanged} unchanged; {s.resolved_findings} findings resolved, {s.new_findings} new>"
        )

    @property
    def verdict(self) -> str:
        return str(self.record.verdict)

    def to_dict(self) -> dict[str, Any]:
        return self.record.to_dict()

    def html(self) -> str:
        from ncuadvisor.render.diff_render import render_diff_html

        return render_diff_html(self.record)

    def markdown(self) -> str:
        from ncuadvisor.render.diff_render import render_diff_markdown

        return render_diff_markdown(self.record)

    def _repr_html_(self) -> str:
        return _frame(self.html())


__all__ = ["Diff", "InputError", "Kernel", "Result", "analyze", "diff"]
