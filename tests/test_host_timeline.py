"""The host timeline (analysis.hosttrace) and its replay (analysis.replay), on the real torch.profiler traces of
fixtures/host-trace-2026-12-02 (CUDA activities, 10 calls of each planted case on an H200 host), and on tiny
hand-made traces for the edge cases the fixtures lack (labelled as such)."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import pytest

from ncuadvisor.analysis.hosttrace import read_trace, timeline_of
from ncuadvisor.analysis.replay import plan, replay
from ncuadvisor.errors import InputError

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "host-trace-2026-12-02"
NAMES = sorted(p.name.removesuffix(".json.xz") for p in TRACES.glob("trace_*.json.xz"))


def trace(name: str):
    return read_trace(TRACES / f"{name}.json.xz")


def test_every_fixture_trace_is_read():
    assert len(NAMES) == 7
    t = trace("trace_train_step_planted")
    # 10 steps of 52 kernels and 6 memsets, from the main thread and autograd's, every one joined to its launch call
    assert len(t.kernels) == 520 and len(t.ops) == 580
    assert len({c.thread for c in t.calls}) == 2
    assert all(o.call is not None and t.calls[o.call].correlation == o.correlation for o in t.ops)
    assert all(o.grid and o.block for o in t.kernels)
    assert [round(b - a) for a, b in t.overhead] == [2289595]  # the profiler's buffer request inside the window


@pytest.mark.parametrize("name", NAMES)
def test_the_replay_with_the_measured_durations_gives_back_the_measured_window(name):
    """Each operation keeps the bound that held in the trace: the replay reproduces the measured wall time (trace
    span) to a nanosecond; with every operation at the trace's median latency and gap instead, within 12%
    (fp32_matmul's twin: its first launch waited 482 µs for the profiler's start, the median launch 10 µs)."""
    t = trace(name)
    assert replay(plan(t)).wall_ns == pytest.approx(t.window_ns, abs=1.0)
    typical = replay(plan(t, typical=True)).wall_ns
    assert abs(typical / t.window_ns - 1) < 0.12


@pytest.mark.parametrize("name", NAMES)
def test_faster_kernels_never_make_the_replay_slower_nor_faster_than_the_host(name):
    t = trace(name)
    p = plan(t)
    base = replay(p)
    halved = replay(p, [o.dur_ns / 2 for o in t.ops])
    gone = replay(p, [0.0] * len(t.ops))
    assert gone.wall_ns <= halved.wall_ns <= base.wall_ns
    assert gone.gpu_busy_ns == 0.0 and gone.wall_ns > 0.5 * max(c.end_ns for c in t.calls[:-2])


def test_a_gpu_bound_loop_follows_its_kernels_and_a_host_bound_one_its_host():
    """fp32_matmul's planted loop keeps the GPU busy (the host waits in cudaEventSynchronize): halving the GEMM
    halves the window's GPU part. The TF32 training step's host issues ~60 launches a step at ~55 µs each while its
    kernels take 27% of the time: halving the kernels changes nothing."""
    gpu_bound = trace("trace_fp32_matmul_planted")
    p = plan(gpu_bound)
    base, halved = replay(p), replay(p, [o.dur_ns / 2 for o in gpu_bound.ops])
    kernels = sum(o.dur_ns for o in gpu_bound.ops)
    assert base.wall_ns - halved.wall_ns == pytest.approx(kernels / 2, rel=0.03)
    host_bound = trace("trace_train_step_tf32")
    p = plan(host_bound)
    base, halved = replay(p), replay(p, [o.dur_ns / 2 for o in host_bound.ops])
    assert base.wall_ns - halved.wall_ns < 0.01 * base.wall_ns


def test_the_profilers_buffer_request_is_taken_out_of_the_hosts_time():
    """The planted training step's host stalled 2.29 ms in a CUPTI buffer request during its first step (no host
    call ran): hidden, the window is that much shorter, the host being the one that sets the pace there."""
    t = trace("trace_train_step_planted")
    p = plan(t)
    kept, hidden = replay(p), replay(p, hide_profiler=True)
    assert kept.wall_ns - hidden.wall_ns == pytest.approx(2_289_595, rel=0.01)
    assert replay(plan(trace("trace_norm_chain_twin")), hide_profiler=True).wall_ns == pytest.approx(
        trace("trace_norm_chain_twin").window_ns, abs=1.0
    )  # no buffer request inside that window


def test_graphs_issue_every_launch_between_blocking_calls_at_once():
    """As CUDA graphs, a host-bound window shrinks to about its GPU work; a GPU-bound one hardly moves."""
    host_bound = trace("trace_train_step_tf32")
    p = plan(host_bound)
    graphs = replay(p, graphs=True)
    busy = replay(p).gpu_busy_ns
    assert busy <= graphs.wall_ns < 1.3 * busy
    gpu_bound = trace("trace_fp32_matmul_planted")
    p = plan(gpu_bound)
    assert replay(p, graphs=True).wall_ns > 0.95 * replay(p).wall_ns


# -- tiny hand-made traces (labelled): the edge cases the fixtures lack -------------------------------------------


def _call(name, ts, dur, corr, tid=1):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {"correlation": corr}}  # fmt: skip


def _kernel(ts, dur, corr, stream=7, cat="kernel", name="k"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "stream": stream, "device": 0, "grid": [1, 1, 1], "block": [32, 1, 1]}}  # fmt: skip


def test_hand_made_a_blocking_call_moves_the_host_calls_after_it():
    """Hand-made: launch a 100 µs kernel, synchronize, launch another. The sync returned 2 µs after the kernel; with
    the first kernel at 50 µs the second launch comes 50 µs earlier, and the window is 100 µs shorter."""
    events = [
        _call("cudaLaunchKernel", 0, 5, 1),
        _kernel(10, 100, 1),
        _call("cudaDeviceSynchronize", 6, 106, 2),  # returns at 112 = kernel end 110 + 2
        _call("cudaLaunchKernel", 120, 5, 3),
        _kernel(130, 100, 3),
    ]
    t = timeline_of(events)
    p = plan(t)
    assert replay(p).wall_ns == pytest.approx(230_000)
    faster = replay(p, [50_000.0, 100_000.0])
    assert faster.wall_ns == pytest.approx(180_000)
    assert faster.op_start_ns[1] == pytest.approx(80_000)  # 130 - 50
    assert replay(p, [50_000.0, 50_000.0]).wall_ns == pytest.approx(130_000)


def test_hand_made_a_copy_that_returns_after_its_own_memcpy_is_blocking():
    """Hand-made: a cudaMemcpyAsync into pageable memory returns after its copy, which waited for a kernel: a faster
    kernel brings the host's next call forward."""
    events = [
        _call("cudaLaunchKernel", 0, 5, 1),
        _kernel(10, 100, 1),
        _call("cudaMemcpyAsync", 6, 110, 2),
        _kernel(110, 4, 2, cat="gpu_memcpy", name="Memcpy DtoH (Device -> Pageable)"),
        _call("cudaLaunchKernel", 120, 5, 3),
        _kernel(130, 10, 3),
    ]
    p = plan(timeline_of(events))
    assert list(p.blocks) == [1]  # the copy call (calls sorted by start: launch, copy, launch)
    assert replay(p, [50_000.0, 4_000.0, 10_000.0]).wall_ns == pytest.approx(replay(p).wall_ns - 50_000, abs=500)


def test_hand_made_a_second_stream_does_not_wait_for_the_first():
    events = [
        _call("cudaLaunchKernel", 0, 5, 1),
        _kernel(10, 100, 1, stream=7),
        _call("cudaLaunchKernel", 6, 5, 2),
        _kernel(16, 10, 2, stream=8),
    ]
    r = replay(plan(timeline_of(events)))
    assert r.op_start_ns[1] == pytest.approx(16_000) and r.wall_ns == pytest.approx(110_000)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"not json at all", "not a JSON trace"),
        (b'{"schemaVersion": 1}', "not a Chrome trace"),
        (b'{"traceEvents": []}', "no CUDA runtime or driver call"),
        (json.dumps({"traceEvents": [_call("cudaLaunchKernel", 0, 5, 1)]}).encode(), "no kernel, memset or memcpy"),
        (lzma.compress(b"[1, 2"), "not a JSON trace"),
        (b"\xfd7zXZ\x00garbage", "cannot read the trace"),
        # damaged deflate data in a gzip stream (zlib's error, not an OSError)
        (gzip.compress(b"[1, 2, 3]" * 100, mtime=0)[:10] + b"\xff" * 20, "cannot read the trace"),
    ],
)
def test_what_is_not_a_usable_trace_is_one_clear_error(tmp_path, content, words):
    path = tmp_path / "trace.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=words) as err:
        read_trace(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_a_gzip_trace_reads_as_the_same_timeline(tmp_path):
    raw = lzma.decompress((TRACES / "trace_norm_chain_planted.json.xz").read_bytes())
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(raw))
    a, b = read_trace(path), trace("trace_norm_chain_planted")
    assert a.ops == b.ops and a.calls == b.calls


def test_hand_made_the_profilers_cost_per_call_comes_out_of_a_host_bound_loop(tmp_path):
    """Hand-made: ten launches 20 µs apart, each kernel 2 µs: the host sets the pace. The trace says the profiler cost
    the host 5 µs a call (13 traced against 8 plain, as `profile --host-time` measures it): hidden, every launch after
    the first comes 5 µs earlier per call before it, the window 45 µs shorter; kept, nothing moves."""
    events = []
    for i in range(10):
        events += [_call("cudaLaunchKernel", 20 * i, 6, i + 1), _kernel(20 * i + 10, 2, i + 1)]
    path = tmp_path / "trace.json"
    cost = {"plain_ns_per_call": 8000.0, "traced_ns_per_call": 13000.0, "calls": 1000, "repeats": 5}
    path.write_text(json.dumps({"ncuadvisorProfilerCost": cost, "traceEvents": events}))
    t = read_trace(path)
    assert t.call_cost_ns == pytest.approx(5000.0)
    p = plan(t)
    kept, hidden = replay(p), replay(p, hide_profiler=True)
    assert kept.wall_ns == pytest.approx(t.window_ns)
    assert kept.wall_ns - hidden.wall_ns == pytest.approx(45_000)
    assert hidden.op_start_ns[9] == pytest.approx(kept.op_start_ns[9] - 45_000)
    assert replay(p, graphs=True, hide_profiler=True).wall_ns < replay(p, graphs=True).wall_ns


@pytest.mark.parametrize(
    "entry",
    [None, "fast", {"plain_ns_per_call": 8000.0}, {"plain_ns_per_call": -1, "traced_ns_per_call": 9000.0},
     {"plain_ns_per_call": 8000.0, "traced_ns_per_call": True}],
)  # fmt: skip
def test_a_trace_without_a_usable_cost_entry_keeps_the_profilers_cost_in(tmp_path, entry):
    events = [_call("cudaLaunchKernel", 0, 5, 1), _kernel(10, 100, 1)]
    data: dict = {"traceEvents": events}
    if entry is not None:
        data["ncuadvisorProfilerCost"] = entry
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data))
    assert read_trace(path).call_cost_ns is None


def test_the_measured_cost_is_put_into_the_kept_trace_without_changing_its_events(tmp_path):
    """`profile --host-time` keeps the trace with the runner's measurement as its first key (profile.hosttime
    .keep_trace): a real trace, kept, reads as the same timeline with the cost; without the runner's file it is kept
    as it was."""
    from ncuadvisor.profile.hosttime import keep_trace, measured_cost

    raw = tmp_path / "host_trace.json"
    raw.write_bytes(lzma.decompress((TRACES / "trace_norm_chain_planted.json.xz").read_bytes()))
    assert measured_cost(raw) is None
    plain = keep_trace(raw, tmp_path / "plain.json.gz", False, measured_cost(raw))
    assert gzip.decompress(plain.read_bytes()) == raw.read_bytes()
    (tmp_path / "host_trace.json.cost.json").write_text('{"plain_ns_per_call": 4100.0, "traced_ns_per_call": 7600.5}')
    kept = keep_trace(raw, tmp_path / "kept.json.gz", False, measured_cost(raw))
    a, b = read_trace(kept), trace("trace_norm_chain_planted")
    assert a.ops == b.ops and a.calls == b.calls
    assert a.call_cost_ns == pytest.approx(3500.5) and b.call_cost_ns is None
