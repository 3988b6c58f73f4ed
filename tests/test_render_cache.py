"""The templates' compiled code is cached by jinja2 between runs (`render._bytecode_cache`): the page is the same with
the cache cold, warm, or unusable (its folder gone: the templates are compiled, nothing fails)."""

import shutil

from ncuadvisor import render
from ncuadvisor.render.html import render_html


def test_the_page_is_the_same_with_and_without_the_cache(monkeypatch, typed, tmp_path):
    result = typed("probe")
    cache = render._QuietBytecodeCache(str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    monkeypatch.setattr(render, "_BYTECODE", [None])
    plain = render_html(result)
    monkeypatch.setattr(render, "_BYTECODE", [cache])
    assert render_html(result) == plain  # cold: compiled, and the code written
    assert list((tmp_path / "cache").iterdir())
    assert render_html(result) == plain  # warm: the code read back
    shutil.rmtree(tmp_path / "cache")
    assert render_html(result) == plain  # the folder gone
