"""The torch runner's feature "hosttime" (`profile --host-time`, `profile.hosttime`): the whole script under
torch.profiler with CUDA activities alone (every runtime and driver call on the host, every kernel, memset and copy on
the GPU, joined by correlation ids; with CPU ops too the profiler's own cost per op doubles the host's time),
exported as a Chrome trace to $NCUADVISOR_HOST_TRACE when the script ends (returns, raises or calls sys.exit).

Then the profiler's own cost per CUDA call on this host is measured (`_profiler_cost`): a one-element tensor's
`add_(1)` (one kernel launch, one runtime call) in a loop of `COST_CALLS` calls, timed plain, under the profiler, and
plain again, the fastest of `COST_REPEATS` loops each. The host pays it on every call of the trace (CUPTI's callbacks
and activity records: 2.1-4.8 µs a call on the H200 host, fixtures/wall-twins-2026-12-02); `analysis.replay` takes
it out of the host's time. Written as JSON to $NCUADVISOR_HOST_TRACE.cost.json; `profile.hosttime.keep_trace` puts
it into the kept trace, under the key `hosttrace.COST_KEY`. It is measured after the script, on the device the script left
current, and only where the script used CUDA (no context is made for it).
"""

COST_CALLS = 1000
COST_REPEATS = 5

TORCH_RUNNER_HOSTTIME = r"""
def _profiler_cost(trace):
    import json, time
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_initialized():
        return
    x = torch.zeros(1, device=torch.cuda.current_device())

    def loop(n):
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - t) / n

    def best():
        loop(100)
        return min(loop(COST_CALLS) for _ in range(COST_REPEATS))

    plain = best()
    with profile(activities=[ProfilerActivity.CUDA]):
        traced = best()
    plain = min(plain, best())
    cost = {"plain_ns_per_call": plain, "traced_ns_per_call": traced, "calls": COST_CALLS, "repeats": COST_REPEATS}
    with open(trace + ".cost.json", "w") as f:
        json.dump(cost, f)


def _host_time_profile():
    import contextlib

    @contextlib.contextmanager
    def _profiled():
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
        try:
            yield
        finally:
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
            prof.__exit__(None, None, None)
            trace = os.environ["NCUADVISOR_HOST_TRACE"]
            prof.export_chrome_trace(trace)
            try:
                _profiler_cost(trace)
            except Exception as exc:  # the timeline stands without it
                print("ncuadvisor: --host-time could not measure the profiler's own cost per call (%s)" % exc,
                      file=sys.stderr)

    return _profiled()
""".replace("COST_CALLS", str(COST_CALLS)).replace("COST_REPEATS", str(COST_REPEATS))
