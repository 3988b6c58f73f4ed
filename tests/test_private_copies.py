"""A compressed report is read from a private decompressed copy (`reportfile.sniff.private_dir`): the copy goes with
the reader that made it, not at the process's exit, which pool and forked workers never reach (`os._exit`)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, tmp: Path) -> subprocess.CompletedProcess:
    """`code` in a Python of its own with `tmp` as its temporary folder; it must succeed."""
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_the_decompressed_copy_goes_with_its_analysis_even_when_the_process_ends_by_os_exit(tmp_path):
    code = (
        "import os, ncuadvisor\n"
        "for _ in range(2):\n"
        "    assert ncuadvisor.analyze('fixtures/probe.ncu-rep.xz').kernels\n"
        "print(sorted(p for p in os.listdir(os.environ['TMPDIR']) if p.startswith('ncuadvisor-')))\n"
        "os._exit(0)\n"
    )
    done = _run(code, tmp_path)
    assert done.stdout.strip() == "[]"  # nothing left while the process still ran, after two analyses
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("ncuadvisor-")]


def test_a_forked_child_leaves_its_parents_copy_alone(tmp_path):
    code = (
        "import os, ncuadvisor, gc\n"
        "from ncuadvisor.load.reader import ReportReader\n"
        "r = ReportReader('fixtures/probe.ncu-rep.xz')\n"
        "local = r._local\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    del r; gc.collect(); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(os.path.exists(local))\n"
        "del r; gc.collect()\n"
        "print(os.path.exists(local))\n"
    )
    done = _run(code, tmp_path)
    assert done.stdout.split() == ["True", "False"]
