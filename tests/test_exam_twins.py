"""benchmarks/exam_twins.py: the exam's estimates against measured twins. The pairs file against the labels, the
device script's log parser on run logs written the way the programs print (three formats), the JSONL pooled across
calls, and the scorer on real exam reports (fixtures/exam-h100-2026-12-06) read by the real library through the
command line, with a small hand-written TIMES.jsonl."""

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import exam  # benchmarks/ is on sys.path (tests/conftest.py)
import exam_twins
import pytest

from tests.conftest import FIXTURES, ROOT


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


def _pair(program, kernel, source, fix, rules, twin=None, also="", before=1):
    """One [[pair]] of an exam_twins.toml: a twin version, or none (`twin` None)."""
    end = f"twin = {twin}\nalso = {also!r}" if twin is not None else 'no_twin = "none"'
    return (
        f"[[pair]]\nprogram = {program!r}\nbefore = {before}\nkernel = {kernel!r}\nsource = {source!r}\n"
        f"fix = {fix!r}\nfix_rules = {rules!r}\n{end}\n"
    ).replace("'", '"')


GELU = ("gelu_forward", "gelu_forward_kernel1")
TWINS = "\n".join(
    [
        "[block_size]\ndefault = 256\n",
        _pair(
            "layernorm_forward",
            "layernorm_forward_kernel1",
            "label",
            "a warp per row",
            ["LCH001", "MEM001"],
            3,
            "rsqrtf",
        ),
        _pair("layernorm_forward", "layernorm_forward_kernel1", "code", "more blocks only", ["LCH001"], 3),
        _pair(*GELU, "label", "16-byte accesses", ["MEM003"], 2),
        _pair(*GELU, "code", "a fix the tool does not name here", ["ATM001"], 2),
        _pair(*GELU, "code", "a twin that was not timed", ["MEM003"], 9),
        _pair(*GELU, "label", "no version does it", ["MEM003"]),
        _pair(
            "encoder_backward", "encoder_backward_kernel1", "label", "a report that is not in the folder", ["ATM001"], 2
        ),
        _pair("gelu_forward", "no_such_kernel", "label", "a kernel that is not in the report", ["MEM003"], 2),
    ]
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Three of the real exam reports, unpacked from the fixture."""
    folder = tmp_path_factory.mktemp("exam-reports")
    with tarfile.open(FIXTURES / "exam-h100-2026-12-06" / "exam_reports.tar.xz") as tar:
        for name in ("layernorm_forward_v1.ncu-rep", "gelu_forward_v1.ncu-rep", "gelu_forward_v2.ncu-rep"):
            member = next(m for m in tar.getmembers() if m.name.endswith("/" + name) or m.name == name)
            (folder / name).write_bytes(tar.extractfile(member).read())
    return folder


def test_score_compares_only_estimates_of_the_pairs_fix_on_real_exam_reports(reports, tmp_path, capsys):
    twins = tmp_path / "twins.toml"
    twins.write_text(TWINS)
    times = tmp_path / "times.jsonl"
    rows = [
        ("layernorm_forward", 1, [0.60, 0.58, 0.62]),
        ("layernorm_forward", 3, [0.021]),
        ("gelu_forward", 1, [0.0200, 0.0190, 0.0250]),
        ("gelu_forward", 2, [0.0100]),
        ("encoder_backward", 2, [5.1]),
    ]
    times.write_text(
        "\n".join(json.dumps({"program": p, "version": v, "block_size": 256, "runs": r}) for p, v, r in rows)
    )
    out_json = tmp_path / "scores.json"
    argv = ["score", str(reports), str(times), "--twins", str(twins), "--json", str(out_json)]
    assert exam_twins.main(argv) == 0
    text = capsys.readouterr().out
    s = json.loads(out_json.read_text())
    warp, blocks, gelu, other, untimed, lone, absent, missing = s
    # the first finding on kernel1 is one of the pair's rules: compared, before / twin from the medians
    assert warp["status"] == "first" and warp["first"] in ("LCH001", "MEM001")
    assert warp["measured"] == pytest.approx(0.60 / 0.021)
    assert warp["estimate"] > 1 and warp["error"] == pytest.approx(
        (warp["estimate"] - warp["measured"]) / warp["measured"]
    )
    # the same kernel, a fix that is not the first finding but a later one: its own estimate, scored apart
    if blocks["first"] != "LCH001":
        assert blocks["status"] == "later" and blocks["estimate"] != warp["estimate"]
    assert gelu["status"] == "first" and gelu["measured"] == pytest.approx(2.0)  # median 0.0200 / 0.0100
    assert gelu["estimate"] == pytest.approx(gelu["first_estimate"])
    assert other["status"] == "other fix" and other["error"] is None and other["first"] == gelu["first"]
    assert untimed["status"] == "no time" and untimed["twin_ms"] is None
    assert lone["status"] == "no twin" and lone["first"] == gelu["first"]
    assert absent["status"] == "no report" and missing["status"] == "not found"
    compared = [x for x in s if x["status"] == "first"]
    within = sum(abs(x["error"]) <= 0.30 for x in compared)
    assert f"first finding is the pair's fix: {within}/{len(compared)} within ±30%" in text
    assert "first finding for another fix (not comparable): 1: gelu_forward v1 (ATM001)" in text
    assert "gelu_forward v1→v2" in text and "why no twin" in text


def test_score_refuses_a_missing_folder_and_bad_times_in_one_line(tmp_path, capsys):
    assert exam_twins.main(["score", str(tmp_path / "none"), str(tmp_path / "t.jsonl")]) == 2
    bad = tmp_path / "t.jsonl"
    bad.write_text("not json\n")
    assert exam_twins.main(["score", str(tmp_path), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not a folder" in err[0] and "t.jsonl:1" in err[1]


FAKE_NVCC = r"""#!/bin/bash
# a stand-in for nvcc: the "program" it writes prints the timing lines of the .cu it was given
[ "$1" = --version ] && { echo "stub nvcc"; exit 0; }
while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; *.cu) src=$1;; esac; shift; done
name=$(basename "$src" .cu)
cat > "$out" <<PROG
#!/bin/bash
echo "Using kernel \$1"
[ "$name" = matmul_backward_bias ] && [ "\$1" = 8 ] && { echo "[CUDA ERROR] an illegal memory access"; exit 1; }
echo "All results match. Starting benchmarks."
case $name in
  matmul_forward) printf "sqrt_block_size %4d | time %.4f ms | tflops 1.0\n" 4 9.0 16 \$(( 40 + \$1 ));;
  *) printf "block_size %4d | time %.4f ms | bandwidth 1.0 GB/s\n" 128 9.0 256 \$(( 20 / \$1 ));;
esac
PROG
chmod +x "$out"
"""


def _exam_times(tmp_path: Path, nvcc: str, **settings: str) -> None:
    """benchmarks/device/exam_times.sh run with nvcc (the given stub) and nvidia-smi stubbed, BUDGET 100 s, its $OUT
    tmp_path/out."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvcc").write_text(nvcc)
    (stubs / "nvidia-smi").write_text("#!/bin/bash\necho stub-gpu\n")
    for f in stubs.iterdir():
        f.chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}",
        OUT=str(tmp_path / "out"),
        EXAM_WORK=str(tmp_path / "work"),
        BUDGET="100",
        **settings,
    )
    p = subprocess.run(
        ["bash", "benchmarks/device/exam_times.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr


def test_device_script_times_the_paired_versions_first_and_writes_one_line_per_version(tmp_path):
    """benchmarks/device/exam_times.sh with nvcc and nvidia-smi stubbed: the builds, the rounds (paired versions first),
    a failing version kept with its rc and no time, the profiled block size per program, and the packed logs."""
    out = tmp_path / "out"
    _exam_times(
        tmp_path, FAKE_NVCC, ONLY="gelu_forward matmul_forward_v1 matmul_forward_v2 matmul_backward_bias_v8", REPS="2"
    )
    recs = {
        (r["program"], r["version"]): r for r in map(json.loads, (out / "exam_times.jsonl").read_text().splitlines())
    }
    assert set(recs) == {("gelu_forward", 1), ("gelu_forward", 2), ("matmul_forward", 1), ("matmul_forward", 2)} | {
        ("matmul_backward_bias", 8)
    }
    assert recs[("gelu_forward", 1)]["time_ms"] == 20.0 and recs[("gelu_forward", 2)]["runs"] == [10.0, 10.0]
    assert recs[("matmul_forward", 1)]["block_size"] == 16 and recs[("matmul_forward", 1)]["time_ms"] == 41.0
    assert recs[("matmul_backward_bias", 8)]["time_ms"] is None and recs[("matmul_backward_bias", 8)]["rc"] == [1, 1]
    runs = [
        line.split("] ", 1)[1].split(" rc=")[0]
        for line in (out / "steps.log").read_text().splitlines()
        if line.startswith("[") and " run " in line
    ]
    # the paired versions (gelu 1 and 2, matmul_forward 1) in rounds, then the others (matmul_forward 2, bias 8)
    assert runs[:6] == [
        f"{v} run {r}" for v, r in [("gelu_forward_v1", 1), ("gelu_forward_v2", 1), ("gelu_forward_v1", 2)]
    ] + [
        "gelu_forward_v2 run 2",
        "matmul_forward_v1 run 1",
        "matmul_forward_v1 run 2",
    ]
    assert set(runs[6:]) == {f"{v} run {r}" for v in ("matmul_forward_v2", "matmul_backward_bias_v8") for r in (1, 2)}
    assert (out / "exam_time_logs.tar.xz").stat().st_size > 0 and "stub nvcc" in (out / "env.txt").read_text()


def test_exam_py_scores_the_twins_after_the_labels_with_the_same_analyses(reports, tmp_path, capsys):
    times = tmp_path / "times.jsonl"
    rows = [("gelu_forward", 1, [0.0200]), ("gelu_forward", 2, [0.0100])]
    times.write_text(
        "\n".join(json.dumps({"program": p, "version": v, "block_size": 256, "runs": r}) for p, v, r in rows)
    )
    labels = tmp_path / "labels.toml"
    labels.write_text(
        '[[kernel]]\ncorpus = "llm.c"\nreport = "gelu_forward_v1"\nkernel = "gelu_forward_kernel1"\n'
        'expected = ["MEM003"]\nmechanism = "2-byte accesses"\n'
    )
    assert exam.main([str(reports), "--labels", str(labels), "--twins", str(times)]) == 0
    text = capsys.readouterr().out
    assert text.index("scored 1 of 1 labelled kernels") < text.index("gelu_forward v1→v2")
    gelu = next(line for line in text.splitlines() if line.startswith("gelu_forward v1→v2"))
    assert "2.00×" in gelu and gelu.split()[-2:] == ["first", "yes"]  # measured 0.0200 / 0.0100; the twin's .cs hint
    assert "a version not timed" in text  # the real pairs whose versions this TIMES.jsonl lacks
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    assert exam.main([str(reports), "--labels", str(labels), "--twins", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("exam.py: cannot read the pairs or the times: ")


def test_preview_from_reports_takes_each_versions_profiled_duration(reports, tmp_path, capsys):
    twins = tmp_path / "twins.toml"
    twins.write_text(TWINS.split("[[pair]]")[0] + "[[pair]]" + TWINS.split("[[pair]]")[3])  # gelu 1 -> 2, MEM003
    out_json = tmp_path / "preview.json"
    argv = ["score", str(reports), "--from-reports", "--twins", str(twins), "--json", str(out_json)]
    assert exam_twins.main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("times: each version's kernel durations in its own report (a preview")
    (gelu,) = json.loads(out_json.read_text())
    assert gelu["status"] == "first" and gelu["before_ms"] == pytest.approx(gelu["duration_us"] / 1e3)
    assert 0.002 < gelu["twin_ms"] < gelu["before_ms"]  # kernel2's own report, a few µs
    assert gelu["measured"] == pytest.approx(gelu["before_ms"] / gelu["twin_ms"])
    # the times or the preview, not both and not neither
    assert exam_twins.main(["score", str(reports), "--twins", str(twins)]) == 2
    assert exam_twins.main(["score", str(reports), str(out_json), "--from-reports", "--twins", str(twins)]) == 2
    assert "one of the two" in capsys.readouterr().err


def test_softmax_fix_alone_call_times_versions_1_2_9_at_the_one_block_size(tmp_path):
    """The call that times softmax's fix-alone twin (version 9) beside versions 1 and 2: with nvcc stubbed by a program
    that prints a time only at the block size EXAM_BLOCK_SIZE names, each of the three versions gets its 3 runs in
    rounds, so the variable reaches the programs; and every version a pair compares is one the script runs."""
    script = (ROOT / "benchmarks" / "device" / "exam_times.sh").read_text()
    listed = dict(re.findall(r"\[(\w+)\]=\"([\d ]+)\"", script))
    pairs, _ = exam_twins.load_twins()
    for p in pairs:
        for v in [p["before"]] + ([p["twin"]] if "twin" in p else []):
            assert str(v) in listed[p["program"]].split(), (p["program"], v)
    assert any(p["program"] == "softmax_forward" and p.get("twin") == 9 and p["also"] == "" for p in pairs)
    out = tmp_path / "out"
    _exam_times(
        tmp_path,
        FAKE_NVCC.replace("128 9.0 256 ", r"\${EXAM_BLOCK_SIZE:-512} "),
        ONLY="softmax_forward_v1 softmax_forward_v2 softmax_forward_v9",
        EXAM_BLOCK_SIZE="256",
        REPS="3",
    )
    recs = {r["version"]: r for r in map(json.loads, (out / "exam_times.jsonl").read_text().splitlines())}
    assert set(recs) == {1, 2, 9}
    assert [recs[v]["runs"] for v in (1, 2, 9)] == [[20.0] * 3, [10.0] * 3, [2.0] * 3]
    runs = [
        line.split("] ", 1)[1].split(" rc=")[0]
        for line in (out / "steps.log").read_text().splitlines()
        if line.startswith("[") and " run " in line
    ]
    assert runs == [f"softmax_forward_v{v} run {r}" for r in (1, 2, 3) for v in (1, 2, 9)]


def test_a_twin_that_changes_more_gives_way_to_the_fix_alone_once_timed(reports, tmp_path, capsys):
    """Two twins of one kernel's fix (same rules): one that changes more (`also`) and one that applies the fix alone.
    Once the fix alone is timed it is scored and the other is kept in the table, its error shown, as "changes more";
    before that the other is scored. A twin for other rules of the same kernel is left as it is."""
    kernel = ("layernorm_forward", "layernorm_forward_kernel1")
    twins = tmp_path / "twins.toml"
    twins.write_text(
        "\n".join(
            [
                "[block_size]\ndefault = 256\n",
                _pair(*kernel, "label", "a warp per row", ["LCH001", "MEM001"], 3, "rsqrtf"),
                _pair(*kernel, "label", "a warp per row alone", ["MEM001", "LCH001"], 9),
                _pair(*kernel, "code", "more blocks only", ["LCH001"], 4, "the owner of a row"),
            ]
        )
    )
    rows = [("layernorm_forward", 1, [0.60]), ("layernorm_forward", 3, [0.020]), ("layernorm_forward", 4, [0.3])]
    times = tmp_path / "times.jsonl"
    out_json = tmp_path / "scores.json"
    argv = ["score", str(reports), str(times), "--twins", str(twins), "--json", str(out_json)]

    def score(rows):
        times.write_text(
            "\n".join(json.dumps({"program": p, "version": v, "block_size": 256, "runs": r}) for p, v, r in rows)
        )
        assert exam_twins.main(argv) == 0
        return json.loads(out_json.read_text()), capsys.readouterr().out

    (more, alone, blocks), text = score(rows)
    assert more["status"] in ("first", "later") and not more["fix_alone"]  # v9 not timed: v3 scored
    assert alone["status"] == "no time" and "not scored" not in text
    (more, alone, blocks), text = score(rows + [("layernorm_forward", 9, [0.025])])
    assert alone["status"] in ("first", "later") and alone["measured"] == pytest.approx(24.0)
    assert more["status"] == "changes more" and more["fix_alone"] == [9]
    assert more["error"] == pytest.approx((more["estimate"] - 30.0) / 30.0)  # shown, not scored
    assert not blocks["fix_alone"] and blocks["status"] != "changes more"
    assert "not scored: layernorm_forward v1→v3" in text and "scored instead against v9, the card's fix alone" in text
    line = next(x for x in text.splitlines() if x.startswith("layernorm_forward v1→v3"))
    assert "no: v9 is the card's fix alone" in line
    if alone["status"] == "first":
        assert "first finding is the pair's fix: " + ("1/1" if abs(alone["error"]) <= 0.3 else "0/1") in text


def test_of_two_fix_alone_twins_the_one_written_as_the_cards_code_is_scored(reports, tmp_path, capsys):
    """Two twins that apply one fix alone in different forms (a block per row; a warp per row, as the card's code
    writes it, `card = true`): once the card's form is timed it is scored, the other is shown as "another form" with
    its error, and a twin that changes more points at the card's form."""
    kernel = ("layernorm_forward", "layernorm_forward_kernel1")
    twins = tmp_path / "twins.toml"
    card = _pair(*kernel, "label", "a warp per row alone", ["LCH001", "MEM001"], 10) + "card = true\n"
    twins.write_text(
        "\n".join(
            [
                "[block_size]\ndefault = 256\n",
                _pair(*kernel, "label", "a warp per row", ["LCH001", "MEM001"], 3, "rsqrtf"),
                _pair(*kernel, "label", "a block per row alone", ["LCH001", "MEM001"], 9),
                card,
            ]
        )
    )
    times = tmp_path / "times.jsonl"
    out_json = tmp_path / "scores.json"
    rows = [(1, [0.60]), (3, [0.020]), (9, [0.05]), (10, [0.025])]
    times.write_text(
        "\n".join(
            json.dumps({"program": "layernorm_forward", "version": v, "block_size": 256, "runs": r}) for v, r in rows
        )
    )
    assert exam_twins.main(["score", str(reports), str(times), "--twins", str(twins), "--json", str(out_json)]) == 0
    more, block, warp = json.loads(out_json.read_text())
    text = capsys.readouterr().out
    assert warp["status"] in ("first", "later") and not warp["fix_alone"]
    assert block["status"] == "another form" and block["fix_alone"] == [10]
    assert more["status"] == "changes more" and more["fix_alone"] == [10]
    assert "not scored: layernorm_forward v1→v9" in text and "in another form than the card's code" in text


FAKE_NCU = r"""#!/bin/bash
# a stand-in for ncu: writes the report -o names and logs its arguments
case $1 in --version) echo "stub ncu"; exit 0;; --help) echo "--kill"; exit 0;; esac
echo "$*" >> "$NCU_CALLS"
while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; esac; shift; done
echo report > "$out.ncu-rep"
echo "==PROF== Profiling \"kernel\": 0%....50%....100% - 38 passes"
"""


def test_softmax_forms_call_times_1_9_10_then_profiles_9_and_10(tmp_path):
    """benchmarks/device/softmax_forms.sh with nvcc, ncu and nvidia-smi stubbed: versions 1, 9 and 10 timed 3 times
    each at the block size EXAM_BLOCK_SIZE names, then versions 9 and 10 profiled (their own kernels, the launch at
    block size 256: three calls skipped, so without EXAM_BLOCK_SIZE), each step's outputs in an archive of its own."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvcc").write_text(FAKE_NVCC.replace("128 9.0 256 ", r"\${EXAM_BLOCK_SIZE:-512} "))
    (stubs / "ncu").write_text(FAKE_NCU)
    (stubs / "nvidia-smi").write_text("#!/bin/bash\necho stub-gpu\n")
    for f in stubs.iterdir():
        f.chmod(0o755)
    out, calls = tmp_path / "out", tmp_path / "ncu_calls.txt"
    env = dict(os.environ, PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", OUT=str(out), BUDGET="300")
    env.update(EXAM_WORK=str(tmp_path / "work"), NCU_CALLS=str(calls), EXAM_BLOCK_SIZE="128")  # the script sets 256
    p = subprocess.run(
        ["bash", "benchmarks/device/softmax_forms.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["reports.tar", "steps.log", "times.tar"]
    with tarfile.open(out / "times.tar") as tar:
        recs = [json.loads(x) for x in tar.extractfile("times/exam_times.jsonl").read().decode().splitlines()]
    assert {r["version"]: (r["block_size"], r["runs"]) for r in recs} == {
        1: (256, [20.0] * 3),
        9: (256, [2.0] * 3),
        10: (256, [2.0] * 3),
    }
    with tarfile.open(out / "reports.tar") as tar:
        with tarfile.open(fileobj=tar.extractfile("reports/exam_reports.tar.xz")) as reports:
            names = sorted(m.name.rsplit("/", 1)[-1] for m in reports.getmembers() if m.isfile())
    assert names == ["softmax_forward_v10.ncu-rep", "softmax_forward_v9.ncu-rep"]
    ncu = calls.read_text().splitlines()
    assert len(ncu) == 2
    for line, v in zip(ncu, (9, 10)):
        assert f"regex:^softmax_forward_kernel{v}$" in line and "--launch-skip 3 --launch-count 1" in line
        assert line.endswith(f"softmax_forward {v}")
