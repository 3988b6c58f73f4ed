"""One line per kernel of an `ncuadvisor profile --python-lines` result: its share, name, launches, the Python line
(file:line, function, the backward node, the line that replayed its CUDA graph) and the PyTorch context (ATen op,
module, NVTX); then the share of the GPU time placed at a line (and replayed from CUDA graphs) and the first "where to
start" entries. Used by the device scripts python_line.sh and compiled_lines.sh.

    python3 benchmarks/device/lines_table.py RESULT.json
"""

import json
import os
import sys


def main() -> None:
    with open(sys.argv[1]) as f:
        res = json.load(f)
    for k in res["kernels"]:
        pl = k.get("python_line") or {}
        print(
            f"{k['time_share']:6.1%} {k['name'][:58]:58} x{k.get('launches')} {k['grid']:>16} "
            f"{os.path.basename(pl.get('file') or '-')}:{pl.get('line')} {pl.get('function')} "
            f"bwd={pl.get('backward_of')} graph={(pl.get('graph_replay') or {}).get('line')} "
            f"op={k.get('torch_op')} mod={k.get('torch_module')} "
            f"code={pl.get('code')!r} profiled={k.get('profiled')} "
            f"first={[f['rule'] for f in k['findings']][:2]} nvtx={k.get('nvtx')!r}"
        )
    placed = [k for k in res["kernels"] if k.get("python_line")]
    replayed = [k for k in placed if k["python_line"].get("graph_replay")]
    print(
        f"placed: {sum(k['time_share'] for k in placed):.1%} of GPU time ({len(placed)} of {len(res['kernels'])} "
        f"kernel groups); replayed from CUDA graphs: {sum(k['time_share'] for k in replayed):.1%} ({len(replayed)})"
    )
    for a in res.get("top_actions", [])[:5]:
        print("action:", a.get("scope"), a.get("rule"), a.get("kernel"), a.get("title"))


if __name__ == "__main__":
    main()
