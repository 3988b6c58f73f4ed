"""The templates' compiled code is cached by jinja2 between runs (`render.use_template_cache`, set by the command line to the user's cache folder): the page is the same with
the cache cold, warm, or unusable (its folder gone: the templates are compiled, nothing fails)."""

import shutil

from ncuadvisor import render
from ncuadvisor.render.html import render_html


def test_the_page_is_the_same_with_and_without_the_cache(monkeypatch, typed, tmp_path):
    result = typed("probe")
    (tmp_path / "cache").mkdir()
    monkeypatch.setattr(render, "_BYTECODE", [None])
    plain = render_html(result)
    monkeypatch.setattr(render, "_BYTECODE", [str(tmp_path / "cache")])
    assert render_html(result) == plain  # cold: compiled, and the code written
    assert list((tmp_path / "cache").iterdir())
    assert render_html(result) == plain  # warm: the code read back
    shutil.rmtree(tmp_path / "cache")
    assert render_html(result) == plain  # the folder gone


def test_the_command_line_keeps_its_cache_in_the_users_cache_folder(tmp_path):
    """`ncuadvisor report` caches the compiled templates under $XDG_CACHE_HOME/ncuadvisor/templates and writes nothing
    else beside the report or into the temporary directory."""
    import os
    import subprocess
    import sys

    from tests.conftest import FIXTURES

    work, tmp, cache = tmp_path / "work", tmp_path / "tmp", tmp_path / "cache"
    work.mkdir()
    tmp.mkdir()
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), TMPDIR=str(tmp))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncuadvisor",
            "report",
            str(FIXTURES / "probe.ncu-rep.xz"),
            "-f",
            "html",
            "-o",
            "r.html",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in work.iterdir()) == ["r.html"] and not list(tmp.iterdir())
    assert list((cache / "ncuadvisor" / "templates").iterdir())


def test_code_compiled_without_the_pages_finalize_is_not_reused(monkeypatch, typed, tmp_path):
    """The HTML environment's `finalize` (prose's `code` spans as <code>) is compiled into a template's code: a cache
    written by an environment without it (the markdown's, or a version before it) must not serve the page."""
    from ncuadvisor.render.view import Prose

    monkeypatch.setattr(render, "_BYTECODE", [str(tmp_path)])
    env = render.environment(autoescape=False, filters=render.HTML_FILTERS)
    env.get_template("report.html.j2")  # compiled without finalize, and cached
    page = render.environment(autoescape=True).from_string("{{ x }}").render(x=Prose("use `tl.dot` here"))
    assert page == "use <code>tl.dot</code> here"
    result = typed("flaws")
    assert "<code>-Xptxas -warn-double-usage</code>" in render_html(result)
