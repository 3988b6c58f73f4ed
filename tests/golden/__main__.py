"""`python3 -m tests.golden`: regenerate every golden file (runs the golden tests with NCUADVISOR_REGEN_GOLDEN=1)."""

import os
import subprocess
import sys

from tests.golden import REGEN_ENV, ROOT

TESTS = ["tests/test_render_golden.py", "tests/test_diff.py", "tests/test_sarif.py", "tests/test_render_cmd.py"]

if __name__ == "__main__":
    env = dict(os.environ, **{REGEN_ENV: "1"})
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-q", "-k", "golden", *TESTS, *sys.argv[1:]], cwd=ROOT, env=env
    )
    if code == 0:
        print("golden files regenerated under tests/golden/: review them with `git diff tests/golden`")
    sys.exit(code)
