"""The scalar metrics read straight from the report file (ncuadvisor/reportfile/fastread.py) against ncu_report, on every real
report in fixtures/: every result, every metric the analysis reads, the same values to the last digit."""

import json
import os

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.load import native
from ncuadvisor.load import reader as load
from ncuadvisor.pipeline.analyze import CARD_METRICS, analyze
from ncuadvisor.reportfile import fastread
from ncuadvisor.rulekit import engine

FIXTURES = [
    "cache",
    "flaws",
    "flaws_basic",
    "model_step_315",
    "multiproc",
    "multiproc_phase1",
    "pipeline_v0",
    "probe",
    "target_exit3",
    "tiny_phase1",
    "tiny_sections",
    "torch_compile",
    "torch_dynshapes",
    "torch_eager",
    "torch_train_phase1_all",
]
METRICS = list(dict.fromkeys(roofline.METRICS + CARD_METRICS + engine.required_metrics(engine.discover([]))))


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("model_step") else n for n in FIXTURES]
)
def test_rows_equal_ncu_report(report_path, name):
    reader = load.ReportReader(report_path(name))
    items = [(rid, r, a) for rid, (r, a) in enumerate(reader._index)]
    rows = reader._results_from_file(items, METRICS)
    assert rows is not None, "the file reader refused a report of the fixtures' ncu version"
    assert len(rows) == len(items)
    step = max(1, len(items) // 150)  # every result of the small reports, 150 spread over the big ones
    for rid, r, a in items[::step]:
        ref = native.row(reader._ncu, reader._action(rid), rid, r, a, METRICS)
        for key, value in ref.items():
            if key == "nvtx":
                continue  # read through ncu_report for the first launch of each kernel only (next test)
            assert native.same(value, rows[rid].get(key)), (name, rid, key, value, rows[rid].get(key))


@pytest.mark.parametrize("name", ["flaws", "multiproc", "torch_eager", "torch_train_phase1_all"])
def test_modules_read_with_the_rows_are_the_walks(report_path, name):
    """The module each result names, read with its row, is the one the walk over the file's modules reads from the
    result (`modules.module_facts`), which the reader then asks for the modules alone: the results without lines are
    the same either way."""
    from ncuadvisor.reportfile.modules import module_facts

    path = report_path(name)
    fast = fastread.read_rows(path, [])
    walked = module_facts(path)
    assert fast is not None and walked is not None
    assert [f["module_id"] for f in fast] == walked[0] and any(m is not None for m in walked[0])
    ids = list(range(len(fast)))
    with_rows = load.ReportReader(path, METRICS)  # the rows read from the file, with the modules
    with_rows.results(METRICS)
    assert with_rows._file_modules == walked[0]
    alone = load.ReportReader(path)
    assert alone._file_modules is None
    assert with_rows.without_lines(ids) == alone.without_lines(ids)
    assert with_rows._module == alone._module and with_rows._size == alone._size


@pytest.mark.parametrize("name", ["torch_eager", "torch_compile", "multiproc", "probe", "torch_train_phase1_all"])
def test_nvtx_ranges_equal_ncu_report(report_path, name):
    """The NVTX ranges decoded from the file are ncu_report's, on every result (each thread sees its own push/pop
    ranges: the training step's backward kernels, launched from autograd's thread, only the start/end range)."""
    reader = load.ReportReader(report_path(name))
    fast = fastread.read_rows(reader._local, [])
    assert fast is not None and len(fast) == len(reader._index)
    texts = [native.nvtx(reader._action(rid)) for rid in range(len(fast))]
    assert [f["nvtx_text"] for f in fast] == texts
    if name == "torch_train_phase1_all":
        assert {"step > step_all_threads", "step_all_threads"} <= set(texts)


def test_undecodable_nvtx_ranges_come_from_ncu_report(report_path, monkeypatch):
    """A result whose ranges the file reader cannot decode (None) sends every range to ncu_report, as before."""
    orig = fastread.read_rows

    def undecided(*args, **kwargs):
        rows = orig(*args, **kwargs)
        rows[-1]["nvtx_text"] = None
        return rows

    path = report_path("torch_eager")
    reader = load.ReportReader(path)
    items = [(rid, r, a) for rid, (r, a) in enumerate(reader._index)]
    good = reader._results_from_file(items, ["gpu__time_duration.sum"])
    monkeypatch.setattr("ncuadvisor.reportfile.fastread.read_rows", undecided)
    again = load.ReportReader(path)._results_from_file(items, ["gpu__time_duration.sum"])
    assert good is not None and again is not None
    assert [r["nvtx"] for r in again] == [r["nvtx"] for r in good] and any(r["nvtx"] for r in good)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("torch_eager", marks=pytest.mark.slow),  # the PyTorch reports analysed again: seconds each
        pytest.param("torch_dynshapes", marks=pytest.mark.slow),
        "torch_train_phase1_all",
        "multiproc_phase1",
    ],
)
def test_analysis_identical_through_the_file_reader(report_path, name, monkeypatch):
    """The whole result (NVTX ranges of every kernel included) is the same whichever way the rows were read."""
    path = report_path(name)
    used = []
    orig = load.ReportReader._results_from_file

    def spy(self, items, metrics):
        rows = orig(self, items, metrics)
        used.append(rows is not None)
        return rows

    monkeypatch.setattr(load, "IN_PROCESS_MAX", 0)
    monkeypatch.setattr(load.ReportReader, "_results_from_file", spy)
    fast = analyze(path).to_dict()
    assert used == [True]
    monkeypatch.setattr(load, "IN_PROCESS_MAX", 10**9)
    monkeypatch.setattr(load, "FILE_READER", False)
    slow = analyze(path).to_dict()
    for r in (fast, slow):
        r.pop("created")
    assert json.dumps(fast, sort_keys=True, default=str) == json.dumps(slow, sort_keys=True, default=str)
    if name == "torch_eager":
        assert all(k["nvtx"] for k in fast["kernels"])  # the NVTX ranges did come through


def test_unknown_layouts_give_none(report_path, tmp_path):
    data = report_path("pipeline_v0").read_bytes()
    cases = {
        "empty": b"",
        "magic only": b"NVR\0",
        "random": os.urandom(5000),
        "text": b"hello\n" * 100,
        "truncated": data[: len(data) // 2],
        "cut by 3 bytes": data[:-3],
    }
    for label, blob in cases.items():
        p = tmp_path / "x.ncu-rep"
        p.write_bytes(blob)
        assert fastread.read_rows(p, ["gpu__time_duration.sum"]) is None, label


def make_durations_one_ns_longer(monkeypatch):
    """The file reader made to disagree with ncu_report: every duration it reads 1 ns longer; returns the reader as
    it was."""
    orig = fastread.read_rows

    def off_by_one(*args, **kwargs):
        rows = orig(*args, **kwargs)
        for r in rows or []:
            if "gpu__time_duration.sum" in r:
                r["gpu__time_duration.sum"] += 1.0
        return rows

    monkeypatch.setattr("ncuadvisor.reportfile.fastread.read_rows", off_by_one)
    return orig


def test_a_disagreeing_file_reader_is_not_used(report_path, monkeypatch):
    """If the file's values ever differ from ncu_report's (another ncu version's layout), the rows come from
    ncu_report: here the file reader is made to report every duration 1 ns longer."""
    make_durations_one_ns_longer(monkeypatch)
    reader = load.ReportReader(report_path("tiny_sections"))
    items = [(rid, r, a) for rid, (r, a) in enumerate(reader._index)]
    assert reader._results_from_file(items, ["gpu__time_duration.sum"]) is None


def _broken_check(task):
    raise RuntimeError("boom")


def test_the_deferred_check_gives_the_same_analysis(report_path, monkeypatch):
    """The analysis checks the file's rows in a worker while it goes on (`ReportReader.confirm`): the device and the
    result are those of the check made at once; where the rows disagree with ncu_report's (every duration made 1 ns
    longer), the analysis starts again without deferring and gives the result of the rows read through ncu_report."""
    path = report_path("torch_eager")
    metrics = ["gpu__time_duration.sum"]
    deferred = load.ReportReader(path, metrics, defer_check=True)
    deferred.results(metrics)
    assert deferred.check_pending and deferred.device() == {}
    at_once = load.ReportReader(path, metrics)
    at_once.results(metrics)
    assert not at_once.check_pending and deferred.confirm() == at_once.device()

    def scrubbed(result):
        return json.dumps(dict(result.to_dict(), created="X"), sort_keys=True, default=str)

    runs: list[bool] = []
    original = load.ReportReader.__init__

    def init(self, *args, **kwargs):
        runs.append(kwargs.get("defer_check", False))
        original(self, *args, **kwargs)

    monkeypatch.setattr(load.ReportReader, "__init__", init)
    fast = scrubbed(analyze(path))
    assert runs == [True]
    orig = make_durations_one_ns_longer(monkeypatch)
    runs.clear()
    assert scrubbed(analyze(path)) == fast
    assert runs == [True, False]
    # a check whose worker fails: checked again at once, the same result
    monkeypatch.setattr("ncuadvisor.reportfile.fastread.read_rows", orig)
    monkeypatch.setattr(load.deep, "check_rows_task", _broken_check)
    runs.clear()
    assert scrubbed(analyze(path)) == fast
    assert runs == [True, False]


def test_the_deferred_check_loads_the_report_in_its_worker_alone(report_path):
    """With the rows' check deferred, the reader leaves loading the report through ncu_report to the check's worker
    until it opens a result itself: the deep data of torch_eager's kernels (no source lines, no SASS read) all comes
    from the file, so the report is never loaded here, and the check tells the library's version; opening a result
    loads it then, the same results as a reader that loaded it at once."""
    path = report_path("torch_eager")
    metrics = ["gpu__time_duration.sum"]
    at_once = load.ReportReader(path, metrics)
    deferred = load.ReportReader(path, metrics, defer_check=True)
    assert deferred.results(metrics).rows() == at_once.results(metrics).rows()
    ids = list(range(len(deferred)))
    assert deferred.without_lines(ids) == frozenset(ids)
    assert deferred.details(ids, ["inst_executed"]) == at_once.details(ids, ["inst_executed"])
    assert deferred._library is None and deferred.reader_version is None
    assert deferred.confirm() == at_once.device()
    assert deferred._library is None and deferred.reader_version == at_once.reader_version is not None
    assert deferred.device() == at_once.device()  # a result opened: the report loaded now
    assert deferred._library is not None and deferred._index == at_once._index


def test_results_the_file_holds_that_ncu_report_does_not_read_start_again(report_path):
    """The results the deferred reader takes from the file are checked against ncu_report's: where they differ (here
    one result fewer), `confirm` and a load of the report alike raise RowsDisagree, which starts the analysis again
    without deferring."""
    path = report_path("torch_eager")
    metrics = ["gpu__time_duration.sum"]
    for ask in ("confirm", "device"):
        reader = load.ReportReader(path, metrics, defer_check=True)
        reader.results(metrics)
        reader._index = reader._index[:-1]
        if ask == "device":
            reader._pending = None  # as where the check was made at once: opening a result loads the report
        with pytest.raises(load.RowsDisagree, match="other results than the file holds"):
            reader.confirm() if ask == "confirm" else reader.device()


def test_file_view_reads_like_bytes(report_path):
    """FileView (the reports' headers and payloads read on demand instead of through an mmap, whose touched pages
    all count as resident memory: 1 GB on a 1,253-result report) gives the same bytes as the file, and the same blocks."""
    import random

    from ncuadvisor.reportfile.blocks import FileView, iter_blocks

    path = report_path("flaws")
    data = path.read_bytes()
    rnd = random.Random(7)
    with path.open("rb") as fh:
        view = FileView(fh)
        assert len(view) == len(data)
        for _ in range(300):
            a = rnd.randrange(len(data))
            b = a + rnd.choice([0, 1, 4, 100, 70_000, 2_000_000])
            assert view[a:b] == data[a:b]
            assert view[a] == data[a] and view[-1] == data[-1]
        assert list(iter_blocks(view)) == list(iter_blocks(data))


@pytest.mark.parametrize("name", ["torch_train_phase1_all", "tiny_phase1"])
def test_rows_read_in_parts_equal_one_pass(report_path, name):
    """A big report's rows are parsed in worker processes, a range of results each: the same rows, in the same order,
    as one pass over the file."""
    reader = load.ReportReader(report_path(name))
    assert len(reader) >= load.FILE_SPLIT_MIN
    whole = fastread.read_rows(reader._local, METRICS, ["launch__grid_dim_x"])
    assert whole is not None
    parts = load.rows_in_parts(reader._local, len(reader), METRICS, ["launch__grid_dim_x"])
    assert json.dumps(parts, default=str) == json.dumps(whole, default=str)
    assert fastread.read_rows(reader._local, METRICS, part=(3, 5)) == [
        {k: v for k, v in row.items() if k != "launch__grid_dim_x"} for row in whole[3:5]
    ]
