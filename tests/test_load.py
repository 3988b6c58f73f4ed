"""Loading real reports through the real ncu_report."""

import math
from pathlib import Path

import pytest

from ncuadvisor.errors import InputError
from ncuadvisor.load import ReportReader
from ncuadvisor.load.deep import every_result
from ncuadvisor.model import Table, group_kernels
from ncuadvisor.pipeline.locate import source_line


def test_results_frame_has_one_row_per_launch(report_path):
    reader = ReportReader(report_path("probe"))
    frame = reader.results(["gpu__time_duration.sum", "launch__registers_per_thread", "no_such_metric.sum"])
    assert list(frame["name"]) == ["copy_vec4", "copy_strided", "transpose_conflict", "fma_loop"]
    assert frame.row(1)["demangled"] == "copy_strided(const float *, float *, int, int)"
    assert frame.row(2)["grid"] == "(256, 256, 1)" and frame.row(2)["block"] == "(32, 8, 1)"
    assert all(50_000 <= t <= 2_000_000 for t in frame["gpu__time_duration.sum"])
    assert frame["no_such_metric.sum"] == [None] * 4  # absent metrics are gaps, not an error


def test_device_and_header(report_path):
    reader = ReportReader(report_path("probe"))
    dev = reader.device()
    assert dev["name"] == "NVIDIA H200" and dev["sm_count"] == 132 and dev["compute_capability"] == "9.0"
    assert reader.ncu_version == "2025.3.1.0"
    assert "--clock-control none" in reader.command_line


def test_source_lines_resolve_to_the_cuda_file(report_path):
    reader = ReportReader(report_path("probe"))
    detail = reader.details([2], ["derived__memory_l1_wavefronts_shared_excessive"])[2]  # transpose_conflict
    lines = detail.per_instruction["derived__memory_l1_wavefronts_shared_excessive"]
    pcs = [e.pc for e in lines]
    assert lines and all(e.file is None and e.sass is None for e in lines)  # plain data: read when asked for
    where, texts = reader.locations({2: (pcs, [])})[2]
    assert all(where[pc][0].endswith("probe.cu") for pc in pcs)
    assert {where[pc][1] for pc in pcs} == {23}  # the transposed read from tile[threadIdx.x][...]
    disassembled = ReportReader(report_path("probe")).details(
        [2], ["derived__memory_l1_wavefronts_shared_excessive"], sass_for=every_result
    )[2]
    assert all(
        e.sass.startswith("LDS") for e in disassembled.per_instruction["derived__memory_l1_wavefronts_shared_excessive"]
    )
    assert "tile[threadIdx.x][threadIdx.y + j]" in source_line(texts, where[pcs[0]][0], 23)
    assert detail.first_file.endswith("probe.cu") and detail.entry[0].endswith("probe.cu")
    assert any(r["rule_identifier"] == "SharedMemoryConflicts" for r in detail.ncu_rules)


def test_group_kernels_orders_by_total_time(report_path):
    frame = ReportReader(report_path("probe")).results(["gpu__time_duration.sum"])
    kernels = group_kernels(frame)
    assert [k.name for k in kernels][:2] == ["copy_strided", "transpose_conflict"]
    assert all(k.launches == 1 for k in kernels)
    doubled = Table([*frame, {**frame.row(0), "result_id": 99}], frame.columns)
    grouped = {k.name: k for k in group_kernels(doubled)}
    assert grouped["copy_vec4"].launches == 2 and grouped["copy_vec4"].result_ids == [0, 99]
    assert grouped["copy_vec4"].duration_ns == pytest.approx(2 * frame.row(0)["gpu__time_duration.sum"])


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        (b"", "empty file"),
        (b"hello, not a report\n", "unknown file format"),
        (bytes(range(256)) * 20, "unknown file format"),
    ],
)
def test_unusable_input_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "x.ncu-rep"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        ReportReader(path)


def test_directory_and_truncated_report(tmp_path, report_path):
    with pytest.raises(InputError, match="is a directory"):
        ReportReader(tmp_path)
    truncated = tmp_path / "t.ncu-rep"
    truncated.write_bytes(report_path("probe").read_bytes()[:100_000])
    with pytest.raises(InputError, match="no whole kernel result"):
        ReportReader(truncated)


def test_reads_xz_compressed_report_directly():
    from tests.conftest import FIXTURES

    reader = ReportReader(FIXTURES / "probe.ncu-rep.xz")
    assert len(reader.results([])) == 4


def test_large_reports_are_read_in_workers_with_the_same_result(report_path, monkeypatch):
    import ncuadvisor.load.reader as load

    metrics = ["gpu__time_duration.sum", "launch__registers_per_thread", "dram__bytes_read.sum"]
    in_process = ReportReader(report_path("flaws")).results(metrics)
    monkeypatch.setattr(load, "IN_PROCESS_MAX", 0)
    monkeypatch.setattr(load, "CHUNK", 7)  # 31 results: 5 worker tasks
    in_workers = ReportReader(report_path("flaws")).results(metrics)
    assert in_process.columns == in_workers.columns
    assert len(in_process) == 31
    for a, b in zip(in_process, in_workers):
        assert a.keys() == b.keys()
        assert all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def _report_json(path, tmp_path, name, capsys):
    """`ncuadvisor report PATH -o x.json`, run in this process (so that monkeypatched thresholds apply), as a dict
    without its `created` timestamp."""
    import json
    import sys

    from ncuadvisor.cli import main

    out = tmp_path / f"{name}.json"
    argv = sys.argv
    sys.argv = ["ncuadvisor", "report", str(path), "-o", str(out), "-q"]
    try:
        main()
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr().err
    finally:
        sys.argv = argv
    result = json.loads(out.read_text())
    result.pop("created")
    return result


# `ncuadvisor report` as a big report runs it: results and deep data in worker processes (thresholds lowered), in a
# fresh process like the command line's. Prints what the parent opened, the fetch passes and the start methods used.
WORKER_DRIVER = """
import json, sys
import ncuadvisor.load.reader as reader
import ncuadvisor.load.workers as workers
from ncuadvisor.cli import main

reader.IN_PROCESS_MAX, reader.DETAIL_IN_PROCESS_MAX, reader.DETAIL_CHUNK = 1, 2, int(sys.argv[1])
opened, passes, methods = [], [], []
action, in_workers, start = reader.ReportReader._action, reader.in_workers, workers._start_method
reader.ReportReader._action = lambda self, rid: opened.append(rid) or action(self, rid)
reader.in_workers = lambda fn, tasks, failure: passes.append(fn.__name__) or in_workers(fn, tasks, failure)
workers._start_method = lambda: methods.append(start()) or methods[-1]
sys.argv = ["ncuadvisor", "report", sys.argv[2], "-o", sys.argv[3], "-q"]
try:
    main()
finally:
    print(json.dumps({"opened": sorted(set(opened)), "passes": passes, "methods": sorted(set(methods))}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("fixture, detail_chunk", [("flaws", 7), ("torch_eager", 4)])
def test_deep_data_read_in_workers_gives_the_same_report(report_path, tmp_path, capsys, fixture, detail_chunk):
    import json
    import subprocess
    import sys

    path = report_path(fixture)
    in_process = _report_json(path, tmp_path, "in_process", capsys)
    if fixture == "flaws":  # findings show source lines (torch_eager's kernels are libraries: none)
        assert any(f["source"] for k in in_process["kernels"] for f in k["findings"])

    out = tmp_path / "in_workers.json"
    run = subprocess.run(
        [sys.executable, "-c", WORKER_DRIVER, str(detail_chunk), str(path), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    in_workers = json.loads(out.read_text())
    in_workers.pop("created")

    assert in_workers == in_process
    # the parent opened no result: the file reader's rows are checked against ncu_report's in a worker (the first and
    # the last result, one per kind of naming: ReportReader.confirm), the deep data is read in workers
    assert seen["opened"] == [], seen["opened"]
    # one pass of workers over the deep data the file does not give (the lines of the findings read in it: flaws'
    # CUDA kernels; torch_eager's ATen and cuBLAS kernels have no lines, their deep data is read from the file), then,
    # for the kernels a rule's gate admits (`Rule.sass_when`: their SASS was not read in the first pass), one pass for
    # their SASS
    deep_passes = [p for p in seen["passes"] if p != "read_rows_task"]
    first = ["read_deep_task"] if fixture == "flaws" else []
    assert deep_passes in (first, first + ["read_sass_task"]), seen["passes"]
    assert seen["methods"] == ["fork"]


def test_workers_start_from_a_fork_server_once_this_process_disassembled(report_path, tmp_path, monkeypatch, capsys):
    import multiprocessing

    import ncuadvisor.load.reader as load
    import ncuadvisor.load.workers as workers

    path = report_path("probe")
    in_process = _report_json(path, tmp_path, "in_process", capsys)  # reads SASS here: forking is no longer safe
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver start method on this platform")
    assert workers._start_method() == "forkserver"
    monkeypatch.setattr(load, "IN_PROCESS_MAX", 1)
    monkeypatch.setattr(load, "DETAIL_IN_PROCESS_MAX", 1)
    monkeypatch.setattr(load, "DETAIL_CHUNK", 2)
    assert _report_json(path, tmp_path, "in_workers", capsys) == in_process


def test_deep_data_of_results_already_opened_is_read_in_process(report_path, monkeypatch):
    import ncuadvisor.load.reader as load

    def no_workers(*args):
        raise AssertionError("no worker process expected")

    monkeypatch.setattr(load, "DETAIL_IN_PROCESS_MAX", 1)
    monkeypatch.setattr(load, "in_workers", no_workers)
    monkeypatch.setattr(load, "FILE_READER", False)  # the rows through ncu_report: every result opened here
    reader = ReportReader(report_path("probe"))
    reader.results(["gpu__time_duration.sum"])  # 4 results: opened in this process
    details = reader.details(range(4), ["inst_executed"])
    pc = details[0].per_instruction["inst_executed"][0].pc
    assert reader.locations({0: ([pc], [])})[0][0][pc][0].endswith("probe.cu")


def test_workers_forked_from_the_reader_use_the_report_it_loaded(report_path, tmp_path, monkeypatch):
    """A worker forked from the reader opens results through the ncu_report context it inherited, without loading
    the report again; where the file changed since the reader loaded it, the worker loads it itself."""
    import os
    import shutil

    import ncu_report

    import ncuadvisor.load.reader as load
    from ncuadvisor.load import workers

    path = tmp_path / "probe.ncu-rep"
    shutil.copy(report_path("probe"), path)
    metrics = ["inst_executed", "derived__memory_l1_wavefronts_shared_excessive"]
    expected = ReportReader(path).details(range(4), metrics)  # in this process
    monkeypatch.setattr(workers, "_disassembled_here", False)  # workers are forked
    monkeypatch.setattr(load, "DETAIL_IN_PROCESS_MAX", 0)
    reader = ReportReader(path)

    def loaded_again(*args):
        raise RuntimeError("the report was loaded again")

    monkeypatch.setattr(ncu_report, "load_report", loaded_again)
    assert reader.details(range(4), metrics) == expected
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(InputError, match="the report was loaded again"):
        reader.details(range(4), metrics)


def _slow_square(x):
    import time

    time.sleep(0.2)
    return x * x


def test_in_workers_runs_meanwhile_once_while_the_workers_run():
    import time

    from ncuadvisor.load.workers import in_workers

    seen = []
    t0 = time.perf_counter()
    got = in_workers(_slow_square, [1, 2, 3], "failed", lambda: seen.append(time.perf_counter() - t0))
    assert got == [1, 4, 9] and len(seen) == 1 and seen[0] < 0.2  # before the first worker was done


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_preload_library_loads_the_library_ncu_report_opens_results_with():
    import subprocess
    import sys

    code = (
        "from ncuadvisor.load.native import preload_library\n"
        "import ncu_report\n"
        "loaded = lambda: 'libnvperf_host' in open('/proc/self/maps').read()\n"
        "before = loaded(); preload_library(); print(before, loaded())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, failure, message",
    [
        ("deep_data", "raise", "reading the per-instruction data failed (RuntimeError: boom)"),
        ("read_deep_task", "die", "reading the per-instruction data failed (a worker process died, exit code 9)"),
        # the SASS and the source lines of the listed instructions are read in the same pass as the deep data
        ("sass_of", "raise", "reading the per-instruction data failed (RuntimeError: boom)"),
        ("locations_of", "raise", "reading the per-instruction data failed (RuntimeError: boom)"),
        ("read_rows_task", "die", "reading the results failed (a worker process died, exit code 9)"),
    ],
)
def test_worker_failures_are_one_clear_line(report_path, target, failure, message):
    import subprocess
    import sys

    # in a fresh process, as the command line runs it: nothing disassembled yet, so workers are forked and run the
    # patched function (a process that disassembled starts them from a fork server, which does not see the patch)
    driver = f"""
import os, sys
import ncuadvisor.load.deep as deep
import ncuadvisor.load.reader as load
from ncuadvisor.cli import main

def broken(*args, **kwargs):
    if {failure!r} == "die":
        os._exit(9)  # as a worker killed for memory, or one crashing in the native library
    raise RuntimeError("boom")

deep.{target} = broken
# the rows through ncu_report in workers, as before the report-file reader (which needs no worker)
load.ReportReader._results_from_file = lambda self, items, metrics: None
load.IN_PROCESS_MAX = load.DETAIL_IN_PROCESS_MAX = 1
sys.argv = ["ncuadvisor", "report", sys.argv[1], "--format", "json"]
main()
"""
    path = report_path("probe")
    run = subprocess.run([sys.executable, "-c", driver, str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert run.stderr == f"ncuadvisor: error: {path}: {message}\n"


def test_kernel_groups_whose_launches_differ_say_so(analyzed):
    """One name and launch shape can hold several problem sizes or call sites (the training step's direct-copy
    ATen kernel takes 14 µs at 24 launches and 28 µs at 4; a cuBLAS kernel 24 and 49 µs): the kernel says its launches
    differ and that the analysis looks at one; kernels whose launches are alike say nothing."""
    res = analyzed("torch_train_phase1_all")
    copy = next(k for k in res["kernels"] if "direct_copy_kernel" in k["demangled"] and k["grid"] == "(8192, 1, 1)")
    lo, hi = copy["launch_range_ns"]
    assert 13_000 < lo < 15_000 and 28_000 < hi < 30_000
    assert copy["launch_note"].startswith("launches take 13.9 µs to 28.9 µs")
    alike = [k for k in res["kernels"] if k["launches"] > 1 and k["launch_range_ns"][1] < 1.2 * k["launch_range_ns"][0]]
    assert alike and all(k["launch_note"] is None for k in alike)


def test_locations_of_listed_instructions_come_from_the_deep_pass(report_path, monkeypatch):
    """The deep pass locates every listed instruction: the findings' lines are then answered without opening the
    results again, and equal what a fresh lookup through ncu_report gives."""
    import ncuadvisor.load.deep as deep
    import ncuadvisor.load.reader as load

    path = report_path("probe")
    reader = ReportReader(path)
    details = reader.details(range(4), ["inst_executed"])
    wanted = {rid: ([e.pc for e in d.per_instruction["inst_executed"][:5]], []) for rid, d in details.items()}
    assert any(pcs for pcs, _ in wanted.values())

    def reopened(*args):
        raise AssertionError("the results were opened again")

    monkeypatch.setattr(deep, "locations_of", reopened)
    monkeypatch.setattr(load, "in_workers", reopened)
    cached = reader.locations(wanted)
    monkeypatch.undo()
    fresh = ReportReader(path)
    expected = {rid: deep.locations_of(fresh._action(rid), p, f) for rid, (p, f) in wanted.items() if p}
    assert cached == expected
    assert any(file and file.endswith("probe.cu") for where, _ in cached.values() for file, _ in where.values())


def test_deep_chunks_hold_about_as_many_bytes_each(report_path, monkeypatch):
    """The deep data of many results is read in chunks of about as many bytes of the report file each (opening a
    result costs with its size), every result once and a module's results side by side; without the sizes, chunks
    of as many results."""
    import ncuadvisor.load.reader as load

    monkeypatch.setattr(load, "DETAIL_CHUNK", 32)
    reader = ReportReader(report_path("torch_train"))
    ids = list(range(len(reader)))  # 52 results, 0.1-2.9 MB each
    reader.without_lines(ids)  # the modules and sizes, from the file
    modules = {rid: mod for rid in ids if (mod := reader._module.get(rid)) is not None}
    chunks = reader._module_chunks(dict.fromkeys(ids, ()), modules, True)
    assert sorted(item[0] for chunk in chunks for item in chunk) == ids
    weights = [sum(reader._size[item[0]] for item in chunk) for chunk in chunks]
    assert len(chunks) == 2 and max(weights) - min(weights) <= max(reader._size.values())
    order = [modules.get(item[0]) for chunk in chunks for item in chunk]
    assert order == sorted(order, key=list(dict.fromkeys(order)).index)  # one module's results side by side
    reader._size.clear()
    assert [len(c) for c in reader._module_chunks(dict.fromkeys(ids, ()), modules, True)] == [26, 26]


def test_results_read_from_the_file_with_the_metrics_of_their_language(report_path, monkeypatch):
    """A result read from the file (no source lines, no SASS) named in `only` holds the per-instruction metrics it
    maps to alone (none: no opcode counts either, as `unread`), their values those of a full read, the other results
    as before; and the analysis, which maps an ATen kernel to the metrics of the PyTorch rules and the roofline, is
    the same as one that reads every metric of every result (ISU001 fires on three of torch_eager's ATen kernels)."""
    import json

    import ncuadvisor.pipeline.analyze as analysis
    from ncuadvisor.pipeline.analyze import analyze

    path = report_path("torch_eager")
    metrics = ["inst_executed", "memory_type", "derived__avg_thread_executed"]
    reader = ReportReader(path)
    ids = list(range(len(reader)))
    assert reader.without_lines(ids) == frozenset(ids)  # all read from the file
    full = reader.details(ids, metrics)
    narrowed = ReportReader(path).details(ids, metrics, only={0: ["inst_executed"], 1: []})
    assert narrowed[0].per_instruction == {"inst_executed": full[0].per_instruction["inst_executed"]}
    assert narrowed[1].per_instruction == {} and narrowed[1].opcodes is None and full[1].opcodes
    assert narrowed[0].opcodes == full[0].opcodes and all(narrowed[i] == full[i] for i in ids[2:])
    assert full[0].per_instruction["derived__avg_thread_executed"]  # a metric the narrowed read left out

    def scrubbed(result):
        return json.dumps(dict(result.to_dict(), created="X"), sort_keys=True, default=str)

    narrow = scrubbed(analyze(path))
    details = ReportReader.details

    def every_metric(self, ids, per_instruction, sass_for=None, unread=(), only=None):
        return details(self, ids, per_instruction, sass_for, unread)

    monkeypatch.setattr(ReportReader, "details", every_metric)
    assert scrubbed(analysis.analyze(path)) == narrow
