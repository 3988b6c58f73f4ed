"""The data model: what a report holds, as plain data free of `ncu_report` (dataclasses and one table of results).

`Profile.results` has one row per result (kernel launch) and one column per metric the analysis asked for, plus the
identity columns `ID_COLUMNS`. Non-scalar data (per-instruction source metrics, NCU's own rule results) lives in
`ResultDetail`, read only for the results the analysis looks at closely.
"""

from ncuadvisor.model.grouping import (
    LAUNCH_PICKS,
    VARIANT_GAP,
    VARIANT_MIN_SHARE,
    VARIANT_MIN_STEP_NS,
    group_kernels,
    launch_clusters,
    split_variants,
)
from ncuadvisor.model.table import Table
from ncuadvisor.model.types import (
    ID_COLUMNS,
    LAUNCH_SPREAD,
    Instruction,
    Kernel,
    Profile,
    ResultDetail,
    SourceLine,
    Variant,
    num,
    spread_note,
)

__all__ = [
    "ID_COLUMNS",
    "LAUNCH_PICKS",
    "LAUNCH_SPREAD",
    "VARIANT_GAP",
    "VARIANT_MIN_SHARE",
    "VARIANT_MIN_STEP_NS",
    "Instruction",
    "Kernel",
    "Profile",
    "ResultDetail",
    "SourceLine",
    "Table",
    "Variant",
    "group_kernels",
    "launch_clusters",
    "num",
    "spread_note",
    "split_variants",
]
