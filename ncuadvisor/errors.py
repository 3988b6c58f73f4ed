"""The small typed error hierarchy the CLI maps to exit codes (see README, "Exit codes")."""


class AdvisorError(Exception):
    """Base of every error ncuadvisor reports as one line; `exit_code` is what the CLI returns."""

    exit_code = 1


class InputError(AdvisorError):
    """Unusable input: a missing path, a directory, a file that is not a readable ncu report."""

    exit_code = 2


class OutputError(AdvisorError):
    """The output cannot be written (or would overwrite something without --force)."""

    exit_code = 2


class RuleError(AdvisorError):
    """A rule file that cannot be loaded (syntax error, missing fields)."""

    exit_code = 2
