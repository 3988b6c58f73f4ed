"""Loading reports: the only code that imports `ncu_report` (`native`), reading in this process or in workers."""

from ncuadvisor.load.reader import ReportReader, RowsDisagree
from ncuadvisor.load.scalars import read_results

__all__ = ["ReportReader", "RowsDisagree", "read_results"]
