"""Several processes in one report (ncu --target-processes all): which process each result comes from, kernels
split per process, ranks from the environment that `profile` records. The multi-process fixture is a real capture:
fixtures/multiproc.ncu-rep.xz (workloads/cuda/multiproc.cu, 2 worker processes, on an H200)."""

import json
import os
import shutil
import subprocess
import sys
import time

from ncuadvisor.load.processes import process_label, read_sidecar, sidecar_path, write_sidecar
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.profile.ranks import ProcessWatcher
from ncuadvisor.reportfile.blocks import result_processes
from tests.synthetic import typed_result

# the order ncu profiled them in: the two processes alternate, the rank-specific copies come last
NAMES = ["scale_add"] * 8 + ["copy_strided_rank", "copy_vec4_rank"]


def test_result_processes_of_a_two_process_report(report_path):
    import ncu_report

    path = report_path("multiproc")
    procs = result_processes(path)
    assert procs is not None and len(procs) == 10
    pids = [p.pid for p in procs]
    assert len(set(pids)) == 2
    assert pids[0::2] == [pids[0]] * 5 and pids[1::2] == [pids[1]] * 5  # they alternate, as ncu's log shows
    assert all(p.executable.endswith("/multiproc") and p.host for p in procs)
    # the file order is the order ncu_report lists the results in
    ctx = ncu_report.load_report(str(path))
    rng = ctx.range_by_idx(0)
    assert [rng.action_by_idx(i).name() for i in range(rng.num_actions())] == NAMES


def test_single_process_reports_have_one_pid(report_path):
    for name in ("flaws", "tiny_phase1", "torch_eager"):
        procs = result_processes(report_path(name))
        assert procs is not None and len({p.pid for p in procs}) == 1, name


def test_not_a_report_gives_none(tmp_path):
    for data in (b"", b"NVR\0", b"NVR\0\x02\0\0\0\x08\x07\xff\xff\xff\xff", os.urandom(4096), b"hello world" * 100):
        p = tmp_path / "x.ncu-rep"
        p.write_bytes(data)
        assert result_processes(p) is None


def test_truncated_report_gives_none(report_path, tmp_path):
    data = report_path("multiproc").read_bytes()
    for cut in (100, len(data) // 2, len(data) - 10):
        p = tmp_path / "cut.ncu-rep"
        p.write_bytes(data[:cut])
        assert result_processes(p) is None


def test_analysis_splits_kernels_per_process(analyzed):
    res = analyzed("multiproc")
    procs = res["report"]["processes"]
    assert len(procs) == 2 and {p["kernels"] for p in procs} == {2}
    assert sum(p["launches"] for p in procs) == 10
    assert abs(sum(p["duration_ns"] for p in procs) - res["report"]["total_duration_ns"]) < 1
    # scale_add ran in both processes: one kernel entry per process
    scale = [k for k in res["kernels"] if k["name"] == "scale_add"]
    assert len(scale) == 2 and {k["process"]["pid"] for k in scale} == {p["pid"] for p in procs}
    assert all(k["launches"] == 4 for k in scale)
    strided = next(k for k in res["kernels"] if k["name"] == "copy_strided_rank")
    vec4 = next(k for k in res["kernels"] if k["name"] == "copy_vec4_rank")
    assert strided["process"]["pid"] != vec4["process"]["pid"]
    assert strided["findings"][0]["category"] == "coalescing"
    assert strided["process_label"] == f"pid {strided['process']['pid']}"
    # every kernel, in each process, got its deep data (sections, NCU's rules)
    assert all(k["sections"] and k["ncu_rules"] for k in res["kernels"])


def test_single_process_analysis_has_no_process_fields(analyzed):
    res = analyzed("pipeline_v0")
    assert res["report"]["processes"] == []
    assert all("process" not in k for k in res["kernels"])


def test_ranks_recorded_beside_the_report_are_shown(report_path, tmp_path):
    src = report_path("multiproc")
    path = tmp_path / "mp.ncu-rep"
    shutil.copyfile(src, path)
    pids = sorted({p.pid for p in result_processes(path)})
    ranks = {
        pids[0]: {"rank": 0, "local_rank": 0, "world_size": 2},
        pids[1]: {"rank": 1, "local_rank": 1, "world_size": 2},
    }
    written = write_sidecar(path, ranks)
    assert written == sidecar_path(path) == tmp_path / "mp.ncu-rep.processes.json"
    assert sidecar_path(tmp_path / "mp.ncu-rep.xz") == written  # a compressed copy finds the same file
    assert read_sidecar(path) == ranks
    res = analyze(path).to_dict()
    labels = {p["pid"]: p["label"] for p in res["report"]["processes"]}
    assert labels == {pids[0]: f"rank 0 (pid {pids[0]})", pids[1]: f"rank 1 (pid {pids[1]})"}
    strided = next(k for k in res["kernels"] if k["name"] == "copy_strided_rank")
    assert strided["process"]["rank"] == 0  # rank 0 runs the strided copy (multiproc.cu)


def test_broken_sidecar_is_ignored(report_path, tmp_path):
    path = tmp_path / "mp.ncu-rep"
    shutil.copyfile(report_path("multiproc"), path)
    sidecar_path(path).write_text("{not json")
    assert read_sidecar(path) == {}
    res = analyze(path).to_dict()
    assert all(p["label"].startswith("pid ") for p in res["report"]["processes"])


def test_process_label():
    assert process_label({"pid": 7, "rank": 2}) == "rank 2 (pid 7)"
    assert process_label({"pid": 7}) == "pid 7"
    assert process_label(None) == ""


def test_watcher_reads_rank_of_descendants():
    # a child that starts a grandchild with RANK set, as torchrun starts its workers
    code = (
        "import os, subprocess, sys, time; env = dict(os.environ, RANK='3', LOCAL_RANK='1', WORLD_SIZE='4'); "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1.5)'], env=env); "
        "print(p.pid, flush=True); p.wait()"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    watcher = ProcessWatcher(child.pid, fast_interval_s=0.05).start()
    grandchild = int(child.stdout.readline())
    time.sleep(0.5)
    child.wait()
    found = watcher.stop()
    assert found[grandchild]["rank"] == 3 and found[grandchild]["local_rank"] == 1
    assert found[grandchild]["world_size"] == 4
    assert child.pid not in found  # no RANK in its environment


def test_watcher_records_the_rank_of_a_short_lived_child_and_stops_when_its_root_exits():
    # as under ncu: the root (ncu here, bash) starts a worker with RANK set, and exits when its workers are done
    root = subprocess.Popen(["bash", "-c", "RANK=3 WORLD_SIZE=4 sleep 0.5 & wait"])
    watcher = ProcessWatcher(root.pid).start()  # the defaults profile uses
    os.waitid(os.P_PID, root.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet waited for: a zombie, as ncu is then
    assert not watcher.root_running()
    watcher._thread.join(timeout=2.0)
    assert not watcher._thread.is_alive()  # it stopped polling by itself, before stop()
    found = watcher.stop()
    root.wait()
    assert len(found) == 1
    (info,) = found.values()
    assert info["rank"] == 3 and info["world_size"] == 4 and "local_rank" not in info
    assert os.path.basename(info["executable"]) == "sleep"


def test_watcher_reads_a_child_again_after_it_execs():
    # a launcher's child is seen between fork and exec with the launcher's environment (no RANK): here for 0.4 s,
    # then the same pid execs with RANK=2
    root = subprocess.Popen(["bash", "-c", "(sleep 0.4; RANK=2 exec sleep 0.4) & wait"])
    watcher = ProcessWatcher(root.pid, fast_interval_s=0.05).start()
    root.wait()
    found = watcher.stop()
    assert [info["rank"] for info in found.values()] == [2]


def test_watcher_polls_fast_first_then_slowly():
    watcher = ProcessWatcher(os.getpid())
    assert [watcher.interval_s(t) for t in (0.0, 1.99, 2.0, 600.0)] == [0.2, 0.2, 1.0, 1.0]


def test_watcher_survives_processes_that_vanish_while_it_reads():
    # 300 short-lived children with RANK=1, polled back to back: most exit between the /proc listing and the reads
    root = subprocess.Popen(["bash", "-c", "for i in $(seq 300); do RANK=1 true & done; wait"])
    watcher = ProcessWatcher(root.pid)
    polls = 0
    while root.poll() is None:
        watcher.poll()
        polls += 1
    assert polls > 0 and all(info["rank"] == 1 for info in watcher.found.values())
    gone = ProcessWatcher(root.pid)  # a root already waited for: nothing to read, nothing raised
    assert not gone.root_running()
    gone.poll()
    assert gone.found == {}
    assert gone.start().stop() == {}


def test_dynamic_shapes_program_finding(analyzed):
    res = analyzed("torch_dynshapes")
    dyn = [f for f in res["program_findings"] if f["rule"] == "PRG003"]
    assert len(dyn) == 1  # one finding for the program, not one per kernel
    f = dyn[0]
    assert "5 or more launch shapes" in f["title"] and "about 5 problem sizes" in f["message"]
    assert len(f["kernels"]) >= 5 and "vectorized_layer_norm_kernel" in f["kernels"]
    json.dumps(f)


def test_process_labels_are_rendered(analyzed):
    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown

    res = analyzed("multiproc")
    pids = [p["pid"] for p in res["report"]["processes"]]
    html = render_html(typed_result(res))
    md = render_markdown(typed_result(res))
    for pid in pids:
        assert f"pid {pid}" in html and f"pid {pid}" in md
    assert "2 processes in this report" in html


def test_two_gpu_report(analyzed):
    """fixtures/multigpu.ncu-rep.xz: the same program on a 2-GPU H200 machine, rank r on GPU r."""
    from ncuadvisor.render.markdown import render_markdown

    res = analyzed("multigpu")
    assert res["report"]["devices"] == [0, 1]
    assert len(res["report"]["processes"]) == 2
    by_pid = {}
    for k in res["kernels"]:
        by_pid.setdefault(k["process"]["pid"], set()).add(k["device_id"])
    assert sorted(tuple(v) for v in by_pid.values()) == [(0,), (1,)]  # each process on its own GPU
    strided = next(k for k in res["kernels"] if k["name"] == "copy_strided_rank")
    assert strided["device_id"] == 0 and strided["findings"][0]["category"] == "coalescing"
    assert "· GPU 1" in render_markdown(typed_result(res))


def test_single_gpu_report_has_no_device_fields(analyzed):
    res = analyzed("multiproc")
    assert res["report"]["devices"] == [0]
    assert all("device_id" not in k for k in res["kernels"])


def test_phase1_and_phase2_kernels_are_matched_by_rank(report_path, tmp_path):
    """profile's merge on the two real multi-process captures (different pids in each run, as in a real profile):
    with the ranks recorded beside both reports, every phase-1 kernel gets the deep data of its own rank."""
    from ncuadvisor.profile.merge import merge_results

    runs = {}
    for name in ("multiproc_phase1", "multiproc"):
        path = tmp_path / f"{name}.ncu-rep"
        shutil.copyfile(report_path(name), path)
        pids = sorted({p.pid for p in result_processes(path)})  # fork order: rank 0 first (multiproc.cu)
        write_sidecar(path, {pid: {"rank": r, "local_rank": r, "world_size": 2} for r, pid in enumerate(pids)})
        runs[name] = (path, analyze(path))
    p1_path, phase1_result = runs["multiproc_phase1"]
    p2_path, deep_result = runs["multiproc"]
    phase1, deep = phase1_result.to_dict(), deep_result.to_dict()
    assert {p["pid"] for p in phase1["report"]["processes"]}.isdisjoint({p["pid"] for p in deep["report"]["processes"]})
    merged = merge_results(phase1_result, [(str(p2_path), deep_result)]).to_dict()
    assert all(k["profiled"] for k in merged["kernels"])
    assert merged["report"]["processes"] == phase1["report"]["processes"]
    deep_by = {(k["name"], k["process"]["rank"]): k for k in deep["kernels"]}
    for k in merged["kernels"]:
        rank = k["process"]["rank"]
        src = deep_by[(k["name"], rank)]
        assert k["process"]["pid"] in {p["pid"] for p in phase1["report"]["processes"]}  # phase 1's pid is kept
        assert k["deep_result_ids"] == src["result_ids"]  # the deep data of the same rank
        assert k["process_label"] == f"rank {rank} (pid {k['process']['pid']})"
    strided = next(k for k in merged["kernels"] if k["name"] == "copy_strided_rank")
    assert strided["process"]["rank"] == 0 and strided["findings"][0]["category"] == "coalescing"
