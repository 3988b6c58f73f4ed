"""Loading real reports through the real ncu_report."""

import pandas as pd
import pytest

from ncuadvisor.errors import InputError
from ncuadvisor.load import ReportReader, read_profile
from ncuadvisor.model import group_kernels


def test_results_frame_has_one_row_per_launch(report_path):
    reader = ReportReader(report_path("probe"))
    frame = reader.results(["gpu__time_duration.sum", "launch__registers_per_thread", "no_such_metric.sum"])
    assert list(frame["name"]) == ["copy_vec4", "copy_strided", "transpose_conflict", "fma_loop"]
    assert frame.loc[1, "demangled"] == "copy_strided(const float *, float *, int, int)"
    assert frame.loc[2, "grid"] == "(256, 256, 1)" and frame.loc[2, "block"] == "(32, 8, 1)"
    assert frame["gpu__time_duration.sum"].between(50_000, 2_000_000).all()
    assert frame["no_such_metric.sum"].isna().all()  # absent metrics are None, not an error


def test_device_and_header(report_path):
    reader = ReportReader(report_path("probe"))
    dev = reader.device()
    assert dev["name"] == "NVIDIA H200" and dev["sm_count"] == 132 and dev["compute_capability"] == "9.0"
    assert reader.ncu_version == "2025.3.1.0"
    assert "--clock-control none" in reader.command_line


def test_source_lines_resolve_to_the_cuda_file(report_path):
    profile = read_profile(
        report_path("probe"), ["gpu__time_duration.sum"], ["derived__memory_l1_wavefronts_shared_excessive"]
    )
    detail = profile.details[2]  # transpose_conflict
    lines = detail.per_instruction["derived__memory_l1_wavefronts_shared_excessive"]
    assert lines and all(e.file.endswith("probe.cu") for e in lines)
    assert {e.line for e in lines} == {23}  # the transposed read from tile[threadIdx.x][...]
    assert all(e.sass.startswith("LDS") for e in lines)
    assert "tile[threadIdx.x][threadIdx.y + j]" in profile.source_code(lines[0].file, 23)
    assert any(r["rule_identifier"] == "SharedMemoryConflicts" for r in detail.ncu_rules)


def test_group_kernels_orders_by_total_time(report_path):
    frame = ReportReader(report_path("probe")).results(["gpu__time_duration.sum"])
    kernels = group_kernels(frame)
    assert [k.name for k in kernels][:2] == ["copy_strided", "transpose_conflict"]
    assert all(k.launches == 1 for k in kernels)
    doubled = pd.concat([frame, frame.iloc[[0]].assign(result_id=99)], ignore_index=True)
    grouped = {k.name: k for k in group_kernels(doubled)}
    assert grouped["copy_vec4"].launches == 2
    assert grouped["copy_vec4"].duration_ns == pytest.approx(2 * frame.loc[0, "gpu__time_duration.sum"])


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        (b"", "empty file"),
        (b"hello, not a report\n", "unknown file format"),
        (bytes(range(256)) * 20, "unknown file format"),
    ],
)
def test_unusable_input_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "x.ncu-rep"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        ReportReader(path)


def test_directory_and_truncated_report(tmp_path, report_path):
    with pytest.raises(InputError, match="is a directory"):
        ReportReader(tmp_path)
    truncated = tmp_path / "t.ncu-rep"
    truncated.write_bytes(report_path("probe").read_bytes()[:100_000])
    with pytest.raises(InputError, match="truncated or corrupt"):
        ReportReader(truncated)


def test_reads_xz_compressed_report_directly():
    from tests.conftest import FIXTURES

    reader = ReportReader(FIXTURES / "probe.ncu-rep.xz")
    assert len(reader.results([])) == 4


def test_large_reports_are_read_in_workers_with_the_same_result(report_path, monkeypatch):
    import ncuadvisor.load as load

    metrics = ["gpu__time_duration.sum", "launch__registers_per_thread", "dram__bytes_read.sum"]
    in_process = ReportReader(report_path("flaws")).results(metrics)
    monkeypatch.setattr(load, "IN_PROCESS_MAX", 0)
    monkeypatch.setattr(load, "CHUNK", 7)  # 31 results: 5 worker tasks
    in_workers = ReportReader(report_path("flaws")).results(metrics)
    pd.testing.assert_frame_equal(in_process, in_workers)
