"""`--format csv`: one row per kernel that reads back as it was written (RFC 4180), on a real PyTorch report whose
kernel signatures are C++ templates full of commas, spaces and brackets."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ncuadvisor.render import formats
from ncuadvisor.render.csv_table import COLUMNS


def test_every_kernel_reads_back_with_its_full_signature(typed):
    result = typed("torch_eager")
    text = formats.render_report(formats.get("csv"), result, formats.RenderOptions())
    assert text.endswith("\r\n") and "\r\n" in text.rstrip("\r\n")  # CRLF line ends, RFC 4180
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert list(rows[0]) == list(COLUMNS) and len(rows) == len(result.kernels)
    assert any("," in k.demangled for k in result.kernels)  # the case this format must survive
    for row, k in zip(rows, result.kernels, strict=True):
        assert (row["id"], row["kernel"], row["demangled"], row["language"]) == (k.id, k.name, k.demangled, k.language)
        assert int(row["launches"]) == k.launches and int(row["time_ns"]) == round(k.duration_ns)
        assert row["rule"] == (k.findings[0].rule if k.findings else "")
        assert row["title"] == (k.findings[0].title if k.findings else "")
        if k.findings and k.findings[0].estimated_speedup > 0:
            assert 0 < float(row["saving"]) <= 1 and 0 < float(row["saving_ns"]) <= k.duration_ns


def test_quotes_in_a_name_are_doubled(typed):
    """A demangled name may hold quotes (a char template argument, 'x'; a string literal): quoted, its quotes doubled."""
    result = typed("pipeline_v2")
    k = result.kernels[0]
    k.demangled = "void f<'\"', 2>(char const*)"
    text = formats.render_report(formats.get("csv"), result, formats.RenderOptions())
    assert '"void f<\'""\', 2>(char const*)"' in text
    assert next(csv.DictReader(io.StringIO(text, newline="")))["demangled"] == k.demangled


def test_an_output_path_ending_in_csv_picks_it():
    assert formats.by_extension(Path("kernels.CSV")) is formats.get("csv")
