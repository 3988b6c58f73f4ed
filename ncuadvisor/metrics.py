"""Metric names the analysis reads, as constants grouped by the ncu section that collects them.

One class per section (its `SECTION` is ncu's section identifier, what `--section` takes); `Device` holds device
attributes, which every section carries. The names are ncu's own, so a rule's `requires = (Occupancy.THEORETICAL_PCT,)`
and its evidence show the metric a user can look up in Nsight Compute. tests/test_metrics.py checks that each name
exists in a report captured with the sections `ncuadvisor profile` asks for, except the half-precision roofline
metrics, whose section it does not ask for (they are read when a report has them).

Per-instruction metrics (Source Counters: one value per SASS instruction) are marked as such: a rule lists them in
`per_instruction`, not in `requires`.
"""

from __future__ import annotations

from typing import Final


class SpeedOfLight:
    """GPU Speed Of Light Throughput: duration, clocks and each unit's throughput as a % of its peak."""

    SECTION: Final = "SpeedOfLight"
    DURATION: Final = "gpu__time_duration.sum"
    MEMORY_PCT: Final = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    COMPUTE_PCT: Final = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    DRAM_PCT: Final = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    L2_PCT: Final = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
    L1_PCT: Final = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
    # the busiest SM's L1 throughput while it is active (a grid that leaves SMs idle lowers the average only)
    L1_MAX_ACTIVE_PCT: Final = "l1tex__throughput.max.pct_of_peak_sustained_active"
    ELAPSED_CYCLES_MAX: Final = "gpc__cycles_elapsed.max"
    SM_ACTIVE_CYCLES_MAX: Final = "sm__cycles_active.max"
    SM_CLOCK_HZ: Final = "sm__cycles_elapsed.avg.per_second"
    # the L2 slices' atomic units, busy % of elapsed: the slices' mean and the busiest (Speed Of Light's breakdown)
    L2_ATOMIC_INPUT_PCT: Final = "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"
    L2_ATOMIC_INPUT_MAX_PCT: Final = "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"
    # pipe utilisation of Speed Of Light's breakdown (% of elapsed), which ncu's basic set has
    FMA_PIPE_ELAPSED_PCT: Final = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"
    # the L2 slices' tag lookups (one per request) and sectors, each % of its own peak (Speed Of Light's breakdown):
    # their ratio × the sector peak per slice and cycle (not in the basic set) is the sectors per L2 request
    L2_TAG_REQUESTS_PCT: Final = "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed"
    L2_SECTORS_PCT: Final = "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"
    DRAM_CLOCK_HZ: Final = "dram__cycles_elapsed.avg.per_second"


class RooflineChart:
    """GPU Speed Of Light Roofline Chart: FP32 and FP64 thread instructions and their peaks, DRAM's peak."""

    SECTION: Final = "SpeedOfLight_RooflineChart"
    FFMA_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"
    FADD_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"
    FMUL_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"
    DFMA_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed"
    DADD_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed"
    DMUL_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed"
    FFMA_PEAK_PER_CYCLE: Final = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"
    DFMA_PEAK_PER_CYCLE: Final = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained"
    DRAM_PEAK_BYTES_PER_CYCLE: Final = "dram__bytes.sum.peak_sustained"


class HalfRooflineChart:
    """GPU Speed Of Light Hierarchical Roofline Chart (Half Precision): packed FP16 thread instructions. `ncuadvisor
    profile` does not ask for this section; the roofline counts FP16 work when a report has it."""

    SECTION: Final = "SpeedOfLight_HierarchicalHalfRooflineChart"
    HFMA_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"
    HADD_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed"
    HMUL_PER_CYCLE: Final = "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed"
    HFMA_PEAK_PER_CYCLE: Final = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained"


class TensorRooflineChart:
    """GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core): tensor-core operations by source type, their
    peaks, and the L2 clock."""

    SECTION: Final = "SpeedOfLight_HierarchicalTensorRooflineChart"
    # precision -> the tensor path's operations (FLOPs); `<path>.peak_sustained` is its peak per cycle
    OPS: Final = {
        "tensor_fp16": "sm__ops_path_tensor_src_fp16.sum",
        "tensor_bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        "tensor_tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "tensor_fp64": "sm__ops_path_tensor_src_fp64.sum",
        "tensor_fp8": "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
        "tensor_int8": "sm__ops_path_tensor_src_int8.sum",
    }
    PEAK_PER_CYCLE: Final = {precision: ops + ".peak_sustained" for precision, ops in OPS.items()}
    L2_CLOCK_HZ: Final = "lts__cycles_elapsed.avg.per_second"


class LaunchStats:
    """Launch Statistics: the launch configuration."""

    SECTION: Final = "LaunchStats"
    GRID_SIZE: Final = "launch__grid_size"
    BLOCK_SIZE: Final = "launch__block_size"
    GRID_DIM_X: Final = "launch__grid_dim_x"
    GRID_DIM_Y: Final = "launch__grid_dim_y"
    GRID_DIM_Z: Final = "launch__grid_dim_z"
    BLOCK_DIM_X: Final = "launch__block_dim_x"
    BLOCK_DIM_Y: Final = "launch__block_dim_y"
    BLOCK_DIM_Z: Final = "launch__block_dim_z"
    REGISTERS_PER_THREAD: Final = "launch__registers_per_thread"
    SHARED_MEM_STATIC: Final = "launch__shared_mem_per_block_static"
    SHARED_MEM_DYNAMIC: Final = "launch__shared_mem_per_block_dynamic"
    WAVES_PER_SM: Final = "launch__waves_per_multiprocessor"
    STREAM_ID: Final = "launch__stream_id"
    # the context's per-thread stack limit at the launch (bytes; ncu 2025.1 on): CUDA's default is 1024, and the driver
    # raises it, for good, at the first launch of a kernel whose per-thread frame (local arrays, spills) is larger
    STACK_SIZE: Final = "launch__stack_size"


class Occupancy:
    """Occupancy: theoretical and achieved warps per SM, and what limits the blocks per SM."""

    SECTION: Final = "Occupancy"
    THEORETICAL_PCT: Final = "sm__maximum_warps_per_active_cycle_pct"
    ACHIEVED_PCT: Final = "sm__warps_active.avg.pct_of_peak_sustained_active"
    # blocks per SM that each resource allows; the smallest is the limiter
    LIMIT_REGISTERS: Final = "launch__occupancy_limit_registers"
    LIMIT_SHARED_MEM: Final = "launch__occupancy_limit_shared_mem"
    LIMIT_WARPS: Final = "launch__occupancy_limit_warps"
    LIMIT_BLOCKS: Final = "launch__occupancy_limit_blocks"


class MemoryWorkloadAnalysis:
    """Memory Workload Analysis (and its chart): DRAM bytes, cache hit rates, L2 sectors by source."""

    SECTION: Final = "MemoryWorkloadAnalysis"
    DRAM_BYTES_READ: Final = "dram__bytes_read.sum"
    DRAM_BYTES_WRITE: Final = "dram__bytes_write.sum"
    DRAM_BYTES_PER_S: Final = "dram__bytes.sum.per_second"
    L1_HIT_RATE_PCT: Final = "l1tex__t_sector_hit_rate.pct"
    L2_SECTORS_FROM_L1: Final = "lts__t_sectors_srcunit_tex.sum"
    L2_SECTORS_FROM_L1_READ: Final = "lts__t_sectors_srcunit_tex_op_read.sum"
    L2_SECTORS: Final = "lts__t_sectors.sum"
    L2_SECTORS_PER_SLICE: Final = "lts__t_sectors.avg"
    L2_SECTORS_PEAK_PER_SLICE_CYCLE: Final = "lts__t_sectors.avg.peak_sustained"
    TMA_LOAD_BYTES: Final = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"


class MemoryTables:
    """Memory Workload Analysis Tables: L1 requests and sectors per memory space and operation."""

    SECTION: Final = "MemoryWorkloadAnalysis_Tables"
    GLOBAL_LOAD_REQUESTS: Final = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
    GLOBAL_STORE_REQUESTS: Final = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
    GLOBAL_ATOMIC_REQUESTS: Final = "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
    GLOBAL_REDUCTION_REQUESTS: Final = "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"
    GLOBAL_LOAD_SECTORS: Final = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    GLOBAL_STORE_SECTORS: Final = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
    LOCAL_LOAD_SECTORS: Final = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
    LOCAL_STORE_SECTORS: Final = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
    # the shared-memory table: wavefronts, and the replays bank conflicts add to them (each conflict one more wavefront)
    SHARED_WAVEFRONTS: Final = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    SHARED_BANK_CONFLICTS: Final = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
    # the bytes the threads used of each 32-byte sector they touched (32 when coalesced), global loads and stores
    GLOBAL_LOAD_BYTES_PER_SECTOR: Final = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"
    GLOBAL_STORE_BYTES_PER_SECTOR: Final = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"


class OlderMemoryTables:
    """The same memory-table metrics under the names ncu gave them before 2024 (2023.1 and older): the share of
    each sector's bytes used, in %. Read when a report has them; today's ncu does not collect these names."""

    SECTION: Final = "MemoryWorkloadAnalysis_Tables"
    GLOBAL_LOAD_BYTES_PER_SECTOR_PCT: Final = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
    GLOBAL_STORE_BYTES_PER_SECTOR_PCT: Final = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"


class SourceCounters:
    """Source Counters: totals of the memory tables' sector and wavefront counts, and per-instruction metrics (one
    value per SASS instruction, for `per_instruction`)."""

    SECTION: Final = "SourceCounters"
    L2_SECTORS_GLOBAL: Final = "memory_l2_theoretical_sectors_global"
    L2_SECTORS_GLOBAL_IDEAL: Final = "memory_l2_theoretical_sectors_global_ideal"
    L2_SECTORS_GLOBAL_EXCESSIVE: Final = "derived__memory_l2_theoretical_sectors_global_excessive"
    SHARED_WAVEFRONTS: Final = "memory_l1_wavefronts_shared"
    SHARED_WAVEFRONTS_IDEAL: Final = "memory_l1_wavefronts_shared_ideal"
    SHARED_WAVEFRONTS_EXCESSIVE: Final = "derived__memory_l1_wavefronts_shared_excessive"
    # per instruction too: L1's tag lookups of global accesses, one per 128-byte line a request touches
    L1_TAG_REQUESTS_GLOBAL: Final = "memory_l1_tag_requests_global"
    # per instruction
    INST_EXECUTED: Final = "inst_executed"
    MEMORY_TYPE: Final = "memory_type"  # an enumeration: MEMORY_TYPE_GLOBAL for global loads and stores
    MEMORY_ACCESS_SIZE_TYPE: Final = "memory_access_size_type"
    AVG_THREADS_EXECUTED: Final = "derived__avg_thread_executed"
    SHARED_CONFLICTS_NWAY: Final = "derived__memory_l1_conflicts_shared_nway"
    SAMPLED_STALL_LONG_SCOREBOARD: Final = "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
    SAMPLED_STALL_BARRIER: Final = "smsp__pcsamp_warps_issue_stalled_barrier"
    SAMPLES: Final = "smsp__pcsamp_sample_count"  # the warps sampled at the instruction, whatever their state


# Not an ncu metric: the per-thread stack limit (LaunchStats.STACK_SIZE) of the launch just before a kernel's first
# launch in its process, added to the kernel's row by the analysis (`pipeline.analyze`); absent for the first launch
# of a process, whose limit before is CUDA's default. A limit above it rose at that launch: the kernel needed it.
STACK_SIZE_BEFORE: Final = "stack_size_before"
MEMORY_TYPE_GLOBAL: Final = 4  # the value of SourceCounters.MEMORY_TYPE for global accesses


class WarpStateStats:
    """Warp State Statistics: why warps stall, per issued instruction, and threads active per instruction."""

    SECTION: Final = "WarpStateStats"
    THREADS_PER_INST: Final = "smsp__thread_inst_executed_per_inst_executed.ratio"
    # the stall reasons, as ncu names them; `stall(reason)` is the metric of one
    STALL_REASONS: Final = (
        "long_scoreboard",
        "barrier",
        "mio_throttle",
        "lg_throttle",
        "short_scoreboard",
        "math_pipe_throttle",
        "wait",
        "not_selected",
        "selected",
        "membar",
        "drain",
        "no_instruction",
        "dispatch_stall",
        "tex_throttle",
        "branch_resolving",
        "imc_miss",
        "misc",
        "sleeping",
    )

    @staticmethod
    def stall(reason: str) -> str:
        """The metric of one stall reason: cycles warps spent stalled for it, per issued instruction."""
        return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


class InstructionStats:
    """Instruction Statistics: executed warp instructions by kind."""

    SECTION: Final = "InstructionStats"
    GLOBAL_LOAD_INST: Final = "smsp__sass_inst_executed_op_global_ld.sum"
    SHARED_LOAD_INST: Final = "smsp__sass_inst_executed_op_shared_ld.sum"
    SHARED_ATOMIC_INSTRUCTIONS: Final = "smsp__inst_executed_op_shared_atom.sum"  # ATOMS, per warp


class ComputeWorkloadAnalysis:
    """Compute Workload Analysis: how busy each pipe is."""

    SECTION: Final = "ComputeWorkloadAnalysis"
    FMA_PIPE_PCT: Final = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
    FP64_PIPE_PCT: Final = "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"
    XU_PIPE_PCT: Final = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"


class SchedulerStats:
    """Scheduler Statistics: how often the warp schedulers issue an instruction."""

    SECTION: Final = "SchedulerStats"
    ISSUE_ACTIVE_PCT: Final = "smsp__issue_active.avg.pct_of_peak_sustained_active"
    ISSUE_ACTIVE_MAX_PCT: Final = "smsp__issue_active.max.pct_of_peak_sustained_active"


class Device:
    """Device attributes (every result carries them, whatever its sections)."""

    SM_COUNT: Final = "device__attribute_multiprocessor_count"
    NAME: Final = "device__attribute_display_name"
    CHIP: Final = "device__attribute_chip"
    CC_MAJOR: Final = "device__attribute_compute_capability_major"
    CC_MINOR: Final = "device__attribute_compute_capability_minor"
    L2_BYTES: Final = "device__attribute_l2_cache_size"
    MAX_WARPS_PER_SM: Final = "device__attribute_max_warps_per_multiprocessor"
    MAX_THREADS_PER_SM: Final = "device__attribute_max_threads_per_multiprocessor"
    MAX_BLOCKS_PER_SM: Final = "device__attribute_max_blocks_per_multiprocessor"
    MAX_REGISTERS_PER_SM: Final = "device__attribute_max_registers_per_multiprocessor"
    MAX_SHARED_MEM_PER_SM: Final = "device__attribute_max_shared_memory_per_multiprocessor"
    MAX_SHARED_MEM_PER_BLOCK_OPTIN: Final = "device__attribute_max_shared_memory_per_block_optin"
    MEMORY_BUS_WIDTH: Final = "device__attribute_global_memory_bus_width"
    MAX_GPU_FREQUENCY_KHZ: Final = "device__attribute_max_gpu_frequency_khz"
    MAX_MEM_FREQUENCY_KHZ: Final = "device__attribute_max_mem_frequency_khz"


SECTIONS: Final = (
    SpeedOfLight,
    RooflineChart,
    HalfRooflineChart,
    TensorRooflineChart,
    LaunchStats,
    Occupancy,
    MemoryWorkloadAnalysis,
    MemoryTables,
    OlderMemoryTables,
    SourceCounters,
    WarpStateStats,
    InstructionStats,
    ComputeWorkloadAnalysis,
    SchedulerStats,
    Device,
)


def names(group: type) -> list[str]:
    """Every metric name a group declares: its string constants, the values of its mappings, and for
    WarpStateStats each stall reason's metric."""
    out: list[str] = []
    for attr, value in vars(group).items():
        if not attr.isupper() or attr == "SECTION":
            continue
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            out.extend(value.values())
    if group is WarpStateStats:
        out.extend(WarpStateStats.stall(r) for r in WarpStateStats.STALL_REASONS)
    return out


def section_of(name: str) -> str | None:
    """The ncu section that collects a metric this module names (`--section` takes it), None for a device attribute
    or a name it does not declare."""
    for group in SECTIONS:
        if name in names(group):
            return getattr(group, "SECTION", None)
    return None
