"""Every error ncuadvisor reports, each with its exit code and meaning: the only exit-code table.

The command line turns an `AdvisorError` into one line on stderr, `ncuadvisor: <label>: <message>`, and its
`exit_code`; anything else is an internal error (exit code 3). docs/usage.md's "Exit codes" table is `exit_code_table()`
(a test keeps them equal; `python -m ncuadvisor.errors` prints it).
"""

from __future__ import annotations

from typing import ClassVar

SUCCESS_MEANING = "success"


class AdvisorError(Exception):
    """Base of every error ncuadvisor reports as one line; `exit_code` is what the command returns.

    `label` is the word after `ncuadvisor:` on that line; `meaning` is the class's row of the exit-code table."""

    exit_code: ClassVar[int] = 1
    label: ClassVar[str] = "error"
    meaning: ClassVar[str] = ""


class GateFailed(AdvisorError):
    """`diff --fail-on`: the diff shows a regression (or new findings)."""

    exit_code = 1
    meaning = "`diff --fail-on regression` found a regression (or `--fail-on findings` new findings)"


class InputError(AdvisorError):
    """Unusable input: a missing path, a directory, a file that is not a readable ncu report."""

    exit_code = 2
    meaning = (
        "unusable input: a missing file, a directory, a pipe or device, not a report, a report cut inside its header "
        "(one cut inside its results is analysed, exit 0, and its first warning says how many whole results it held); "
        "for `profile`, the program not found or options that do not fit together"
    )


class OutputError(AdvisorError):
    """The output cannot be written (or would overwrite something without --force)."""

    exit_code = 2
    meaning = "output that cannot be written (exists without `--force`, unknown extension)"


class RuleError(AdvisorError):
    """A rule file that cannot be loaded (syntax error, missing fields)."""

    exit_code = 2
    meaning = "a rule file that cannot be loaded"


class ConfigError(AdvisorError):
    """A configuration (`[tool.ncuadvisor]`, `--config`, `--select`, `--ignore`) that cannot be applied."""

    exit_code = 2
    meaning = "a configuration that cannot be applied (unknown key, rule code or threshold, a value of the wrong type)"


class InternalError(AdvisorError):
    """A bug: an exception nothing else accounts for (the command line wraps it in this)."""

    exit_code = 3
    label = "internal error"
    meaning = "internal error (a bug: `NCUADVISOR_DEBUG=1` shows the traceback)"


class PartialResult(AdvisorError):
    """`profile` wrote its report, but it is incomplete: the program failed, or no chosen kernel was profiled."""

    exit_code = 4
    label = "warning"
    meaning = (
        "`profile`: written but incomplete (the program exited non-zero or crashed, or no chosen kernel could be "
        "profiled in depth)"
    )


class ProfileError(AdvisorError):
    """ncu could not profile (permissions, no GPU, ncu's own errors)."""

    exit_code = 6
    meaning = (
        "`profile`: ncu could not profile (`ERR_NVGPUCTRPERM`: counters restricted to admin users; no usable GPU; "
        "another ncu error, shown verbatim)"
    )


class NcuMissingError(ProfileError):
    """ncu is not installed where we look, or is too old."""

    exit_code = 5
    meaning = "`profile`: ncu not found, or older than 2022.1"


class NcuNotFound(NcuMissingError):
    """ncu is nowhere we looked; `searched` lists where."""

    meaning = ""  # NcuMissingError's row

    def __init__(self, searched: list[str], hint: str = ""):
        where = ", ".join(searched[:6]) + (" …" if len(searched) > 6 else "")
        super().__init__(f"ncu (Nsight Compute) not found (looked in: {where})" + (f": {hint}" if hint else ""))
        self.searched = searched


class NothingProfiledError(ProfileError):
    """ncu ran but no kernel launch matched, or the program ended before its first kernel."""

    exit_code = 7
    meaning = "`profile`: nothing profiled (no launch matched the NVTX range, kernel filter or launch skip)"


class ProfileInterrupted(ProfileError):
    """Ctrl-C before ncu saved anything."""

    exit_code = 130
    meaning = "interrupted (`profile` still analyzes and writes what was collected)"


class Interrupted(AdvisorError):
    """Ctrl-C: `profile` analysed and wrote what was collected before it; the message says where."""

    exit_code = 130
    label = "interrupted"
    meaning = ""  # ProfileInterrupted's row


def error_classes() -> list[type[AdvisorError]]:
    """Every error class of this module, the base excluded, in the order they are defined."""
    out: list[type[AdvisorError]] = []
    todo = list(AdvisorError.__subclasses__())
    while todo:
        cls = todo.pop(0)
        if cls not in out and cls.__module__ == __name__:
            out.append(cls)
            todo[:0] = cls.__subclasses__()
    return out


def exit_codes() -> dict[int, str]:
    """Exit code -> its meaning: success, then the meanings of the classes of each code, in code order."""
    rows: dict[int, list[str]] = {0: [SUCCESS_MEANING]}
    for cls in error_classes():
        if cls.meaning:
            rows.setdefault(cls.exit_code, []).append(cls.meaning)
    return {code: "; ".join(rows[code]) for code in sorted(rows)}


def exit_code_table() -> str:
    """The "Exit codes" table of docs/usage.md, in markdown."""
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {meaning} |" for code, meaning in exit_codes().items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(exit_code_table(), end="")
