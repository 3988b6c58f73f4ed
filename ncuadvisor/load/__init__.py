"""Loading reports: the only code that imports `ncu_report` (`native`), reading in this process or in workers."""

from ncuadvisor.load.reader import ReportReader, read_results

__all__ = ["ReportReader", "read_results"]
