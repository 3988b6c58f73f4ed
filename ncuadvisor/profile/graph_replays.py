"""The torch runner's part for kernels replayed from CUDA graphs (`ncuadvisor profile --python-lines`).

A CUDA graph replays its kernels without Python, so without the ranges the runner pushes around each ATen op and
Triton launch. This part wraps every replay (`torch.cuda.CUDAGraph.replay`, which cudagraph trees of
torch.compile(mode="reduce-overhead"), the cudagraphs backend, `make_graphed_callables` and a user's `g.replay()` go
through; `torch.accelerator.Graph.replay` where it exists) in an NVTX range naming the user's line that led to it,
"pygraph:<line>:<function>:<file>": the first frame outside torch, the standard library, the runner, installed
packages and Dynamo's rewrite of a compiled function (whose frame stands at the function's first line while its graph
runs), so the line calling the compiled function. In backward (autograd's thread, no user frame) the range is
"pygraphbwd:<node>:<line>:<function>:<file>", the node's forward line, else the `.backward()` call. ncu (its default
`--graph-profiling node`) profiles each kernel of the graph as its own result, with the NVTX stack of the graph's
launch, so every kernel of it takes that line, cuBLAS's included; `profile.pylines` reads it back, and a kernel that
has a more precise line keeps it.

The text joins the runner (`profile.target.TORCH_RUNNER`) between its frame walk and its main part: the walk and the
range text need no torch (tests run them without it); `_graph_replay_lines()`, called by the main part under
"lines", reads the runner's globals (torch, _nvtx, _current_node, _node_of, _BACKWARD_CALL, _where, _is_compiling) when
called.
"""

TORCH_RUNNER_GRAPHS = r"""
_DYNAMO_UTILS = "torch._dynamo.utils"  # the module whose orig_code_map Dynamo fills (read where it is loaded)


def _transformed(code):
    # Dynamo's rewrite of a compiled function's code: its frame runs the compiled graph in place of the function (the
    # frame's line is the function's first); False while Dynamo is not loaded
    codes = getattr(sys.modules.get(_DYNAMO_UTILS), "orig_code_map", None)
    try:
        return codes is not None and code in codes
    except Exception:
        return False


def _installed(filename):
    return any(d in filename for d in (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep))


def _replay_where(frame):
    # the user's line that led to a CUDA graph replay: the first frame outside torch, the standard library, the
    # runner, installed packages and Dynamo's rewrite of a compiled function, so the line calling the compiled
    # function (mode="reduce-overhead": cudagraph trees replay from inside it), or the user's own `g.replay()`
    while frame is not None:
        code = frame.f_code
        if not (_skipped(code.co_filename) or _installed(code.co_filename) or _transformed(code)):
            return "%d:%s:%s" % (frame.f_lineno, getattr(code, "co_qualname", code.co_name), code.co_filename)
        frame = frame.f_back
    return None


def _graph_range_text(where, node=None):
    return ("pygraphbwd:%s:%s" % (node, where)) if node else ("pygraph:" + where)


def _graph_replay_lines():
    # each replay inside the range of the line that led to it (forward: the frame walk; backward: the node)
    def _replay_range():
        node = _current_node() if _current_node is not None else None
        if node is None:
            frame = sys._getframe()
            where = _replay_where(frame) or _where(frame)
            return _graph_range_text(where) if where else None
        name, stored = _node_of(node)
        where = stored or _BACKWARD_CALL[0]
        return _graph_range_text(where, name) if where else None

    def _replay_with_line(replay, compiling=_is_compiling):
        # `compiling` held by the closure: Dynamo, tracing a replay inside compiled code, finds no global of the runner
        def _replay(self, *args, **kwargs):
            if compiling():
                return replay(self, *args, **kwargs)
            try:
                text = _replay_range()
            except Exception:
                text = None
            if text is None:
                return replay(self, *args, **kwargs)
            _nvtx.range_push(text)
            try:
                return replay(self, *args, **kwargs)
            finally:
                _nvtx.range_pop()

        _replay.__wrapped__ = replay
        return _replay

    for graph in (getattr(torch.cuda, "CUDAGraph", None), getattr(getattr(torch, "accelerator", None), "Graph", None)):
        if graph is not None and callable(getattr(graph, "replay", None)):
            try:
                graph.replay = _replay_with_line(graph.replay)
            except Exception:
                pass
"""
