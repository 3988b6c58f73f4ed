"""benchmarks/exam_twins.py: the exam's estimates against measured twins. The pairs file against the labels, the
device script's log parser on run logs written the way the programs print (three formats), the JSONL pooled across
calls, and the scorer on real exam reports (fixtures/exam-h100-2026-12-06) read by the real library through the
command line, with a small hand-written TIMES.jsonl."""

import json
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import exam
    import exam_twins
finally:
    sys.path.pop(0)


def test_every_labelled_llmc_fix_has_a_pair_and_every_pair_a_label():
    pairs, sizes = exam_twins.load_twins()
    assert sizes["default"] == 256 and sizes["matmul_forward"] == 16
    labels = {(lab["report"], lab["kernel"]): lab for lab in exam.load_labels()}
    for p in pairs:
        lab = labels[(f"{p['program']}_v{p['before']}", p["kernel"])]  # the pair's kernel is a labelled one
        assert ("twin" in p) != ("no_twin" in p), p
        assert p["fix_rules"] and p["fix"] and p["source"] in ("label", "code")
        if p["source"] == "label":
            assert set(p["fix_rules"]) & set(lab["expected"]), p
        if "twin" in p:
            assert p["twin"] != p["before"] and isinstance(p.get("also"), str)
    # each llm.c kernel whose expected first finding names a fix has a pair for that fix
    for (report, kernel), lab in labels.items():
        if lab["corpus"] != "llm.c" or lab["expected"][0] in ("ROOF001", "NONE"):
            continue
        assert any(
            f"{p['program']}_v{p['before']}" == report
            and p["kernel"] == kernel
            and lab["expected"][0] in p["fix_rules"]
            for p in pairs
        ), (report, kernel)


def test_the_versions_the_device_script_times_first_are_the_pairs_before_and_twin():
    pairs, _ = exam_twins.load_twins()
    words = exam_twins.paired_versions(pairs)
    assert "gelu_forward_v1" in words and "gelu_forward_v2" in words
    assert "encoder_backward_v1" not in words  # a pair without a twin times nothing first
    assert len(words) == len(set(words))


def test_parse_run_reads_the_three_timing_formats_and_the_trailer():
    text = "\n".join(
        [
            "Using kernel 1",
            "Checking block size 256.",
            "All results match. Starting benchmarks.",
            "block_size  256 | time 0.5890 ms | bandwidth 85.44 GB/s",
            "block_size 512 time 0.1485 ms",
            "sqrt_block_size   16 | time 42.7412 ms | tflops 0.91",
            "# rc=0 seconds=3",
        ]
    )
    times, lines, rc, secs = exam_twins.parse_run(text)
    assert times == {256: 0.589, 512: 0.1485, 16: 42.7412}
    assert len(lines) == 3 and (rc, secs) == (0, 3)
    assert exam_twins.parse_run("[CUDA ERROR] an illegal memory access\n") == ({}, [], None, None)


def _log(path, rows, rc=0, fmt="block_size {bs:4d} | time {t:.4f} ms | bandwidth 1.0 GB/s"):
    body = ["Using kernel 1", "All results match. Starting benchmarks."]
    body += [fmt.format(bs=bs, t=t) for bs, t in rows]
    path.write_text("\n".join([*body, f"# rc={rc} seconds=2", ""]))


def test_collect_times_keeps_the_median_at_the_profiled_block_size(tmp_path):
    _log(tmp_path / "gelu_forward_v1_r1.log", [(128, 0.5), (256, 0.030)])
    _log(tmp_path / "gelu_forward_v1_r2.log", [(128, 0.5), (256, 0.010)])
    _log(tmp_path / "gelu_forward_v1_r3.log", [(128, 0.5), (256, 0.020)])
    (tmp_path / "gelu_forward_v2_r1.log").write_text("Using kernel 2\n[CUDA ERROR]\n# rc=1 seconds=1\n")
    _log(
        tmp_path / "matmul_forward_v1_r1.log", [(8, 60.0), (16, 42.5)], fmt="sqrt_block_size {bs:4d} | time {t:.4f} ms"
    )
    (tmp_path / "notes.txt").write_text("not a run")
    recs = {
        (r["program"], r["version"]): r
        for r in exam_twins.collect_times(tmp_path, {"default": 256, "matmul_forward": 16})
    }
    g = recs[("gelu_forward", 1)]
    assert g["time_ms"] == 0.020 and g["runs"] == [0.030, 0.010, 0.020] and g["rc"] == [0, 0, 0]
    assert g["block_size"] == 256 and len(g["lines"]) == 3 and len(g["lines"][0]) == 2
    failed = recs[("gelu_forward", 2)]
    assert failed["time_ms"] is None and failed["runs"] == [] and failed["rc"] == [1]
    assert recs[("matmul_forward", 1)]["block_size"] == 16 and recs[("matmul_forward", 1)]["time_ms"] == 42.5


def test_times_command_writes_jsonl_that_load_times_pools(tmp_path, capsys):
    _log(tmp_path / "gelu_forward_v1_r1.log", [(256, 0.030)])
    assert exam_twins.main(["times", str(tmp_path)]) == 0
    first = tmp_path / "a.jsonl"
    first.write_text(capsys.readouterr().out)
    second = tmp_path / "b.jsonl"
    second.write_text(json.dumps({"program": "gelu_forward", "version": 1, "block_size": 256, "runs": [0.010, 0.012]}))
    pooled = exam_twins.load_times([first, second])
    assert pooled[("gelu_forward", 1, 256)]["runs"] == [0.030, 0.010, 0.012]
    assert pooled[("gelu_forward", 1, 256)]["time_ms"] == 0.012
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"program": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        exam_twins.load_times([bad])
    assert exam_twins.main(["times", str(tmp_path / "absent")]) == 2
