"""Screenshots of the HTML report for the docs' gallery: 1400 px, 390 px (a phone), dark mode and print.

    python3 -m tests.screenshots                 # the gallery's fixtures into docs/screenshots/, the rest pruned
    python3 -m tests.screenshots flaws patterns  # only these (names of fixtures/NAME.ncu-rep.xz)
    python3 -m tests.screenshots --png /tmp/look # lossless PNGs somewhere else, to look at closely

Run from the repository's root, as `python3 -m tests.golden` is: it drives Chromium with the page tests' driver
(`tests/browser.py`).

Each report is analysed by this checkout (`ncuadvisor report FIXTURE -f html`), opened in headless Chromium and shot
through the DevTools protocol over a pipe (no package beyond the standard library and the `chromium` binary): the
first screen only (what a reader sees before scrolling), as lossy WebP. Dark mode is `prefers-color-scheme: dark`
emulated; print is the `print` media type emulated at the width of an A4 page. The gallery, docs/screenshots/README.md,
is written from what was shot, and a full run (no names) removes every picture in the folder that no page links.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from tests.browser import Browser as DevToolsBrowser
from tests.browser import chromium

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
OUT = ROOT / "docs" / "screenshots"
# the gallery's fixtures: hand-written CUDA, access patterns, PyTorch eager and compiled, cuBLAS/cuDNN, a training step
MAIN = ("flaws", "patterns", "torch_eager", "torch_compile", "torch_gemm_conv", "torch_train")
SMALL = 0.5  # a fixture outside MAIN, shot by name, is scaled down by this (the phone's by SMALL_PHONE)
SMALL_PHONE = 0.6


@dataclass(frozen=True)
class Shot:
    suffix: str  # the file name's tail: NAME-SUFFIX.webp
    width: int
    height: int
    dark: bool = False
    print_media: bool = False
    mobile: bool = False
    scale: float = 1.0  # image pixels per CSS pixel: under 1, the page as laid out at `width`, scaled down
    selector: str = ""  # shoot this element whole instead of the first screen
    scroll_to: str = ""  # shoot the screen that starts at this element instead of the first
    script: str = ""  # JavaScript run in the page before the shot (a click on the chart)


SHOTS = (
    Shot("1400", 1400, 900),
    Shot("390", 390, 844, mobile=True),
    Shot("dark", 1400, 900, dark=True),
    Shot("print", 794, 1123, print_media=True),  # an A4 page at 96 dpi
)
CHART = Shot("roofline", 1400, 900, selector=".chart")  # the chart and its zoomed view, opened
CHARTS = ("flaws", "patterns", "torch_gemm_conv", "torch_train")
PHONE_CHART = Shot("roofline-390", 390, 844, mobile=True, selector=".chart")  # the chart a phone shows, zoom open
CLICK_FIRST_POINT = (
    "document.querySelector('#roofline-chart a[data-roofs]')"
    ".dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}))"
)
# the page's parts, shot on a training step's report: the kernel table on a phone, the chart focused on one kernel's
# roofs (a click on its point), a kernel's source view; each name below is the file's suffix
FEATURES = {
    "torch_train": (
        PHONE_CHART,
        Shot("table-390", 390, 844, mobile=True, scroll_to="#time"),
        Shot("table-dark", 1400, 900, dark=True, scroll_to="#time"),
        Shot("focus", 1400, 640, scroll_to="#roofline", script=CLICK_FIRST_POINT),
    ),
    "flaws": (Shot("source", 1400, 520, scroll_to="#k2 table.cited"),),
}


class Browser(DevToolsBrowser):
    """Headless Chromium driven over --remote-debugging-pipe (the page tests' driver, `tests/browser.py`), shooting."""

    def shoot(self, page: Path, shot: Shot, fmt: str, quality: int) -> bytes:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        s = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", s)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            s,
            width=shot.width,
            height=shot.height,
            deviceScaleFactor=1,
            mobile=shot.mobile,
        )
        features = [{"name": "prefers-color-scheme", "value": "dark" if shot.dark else "light"}]
        self.call("Emulation.setEmulatedMedia", s, media="print" if shot.print_media else "", features=features)
        self.events.clear()
        self.call("Page.navigate", s, url=page.as_uri())
        self.wait_event("Page.loadEventFired", s)
        if shot.script:
            self.call("Runtime.evaluate", s, expression=shot.script)
        top = 0.0
        if shot.scroll_to:
            js = (  # from the heading just above the element, when there is one
                "(e => { if (!e) return 0; const h = e.previousElementSibling;"
                " if (h && /^H[1-4]$/.test(h.tagName)) e = h;"
                f" return e.getBoundingClientRect().top + scrollY - 8; }})(document.querySelector({json.dumps(shot.scroll_to)}))"
            )
            top = self.call("Runtime.evaluate", s, expression=js, returnByValue=True)["result"].get("value") or 0.0
        clip = {"x": 0, "y": top, "width": shot.width, "height": shot.height, "scale": shot.scale}  # CSS pixels
        if shot.selector:
            js = (
                f"(() => {{ const e = document.querySelector({json.dumps(shot.selector)}); if (!e) return null;"
                " e.querySelectorAll('details').forEach(d => d.open = true);"
                " const r = e.getBoundingClientRect();"
                " return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()"
            )
            box = self.call("Runtime.evaluate", s, expression=js, returnByValue=True)["result"].get("value")
            if not box:
                self.call("Target.closeTarget", targetId=target)
                return b""
            clip = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": shot.scale}
            params_beyond = True
        else:
            params_beyond = False
        params: dict = {"format": fmt, "clip": clip, "captureBeyondViewport": params_beyond or top > 0}
        if fmt != "png":
            params["quality"] = quality
        data = self.call("Page.captureScreenshot", s, **params)["data"]
        self.call("Target.closeTarget", targetId=target)
        return base64.b64decode(data)


def fixtures(names: list[str]) -> list[Path]:
    chosen = [FIXTURES / f"{n}.ncu-rep.xz" for n in names or MAIN]
    missing = [p.name for p in chosen if not p.exists()]
    if missing:
        raise SystemExit(f"tests.screenshots: no such fixture: {', '.join(missing)}")
    return chosen


def render(report: Path, html: Path) -> bool:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(report), "-f", "html", "-o", str(html), "--force", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if proc.returncode != 0 or not html.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"{report.name}: no HTML (exit {proc.returncode}: {last})", file=sys.stderr)
        return False
    return True


def gallery(names: list[str], out: Path) -> str:
    main = [n for n in MAIN if n in names] + [n for n in names if n not in MAIN]
    rows = [
        "# Screenshots of the HTML report",
        "",
        "The reports of six fixtures (`ncuadvisor report fixtures/NAME.ncu-rep.xz -f html`) as headless Chromium "
        "shows their first screen: at 1400 px, at 390 px (a phone), in dark mode (`prefers-color-scheme: dark`) and "
        "printed (the `print` media type at the width of an A4 page). Regenerate them with "
        "`python3 -m tests.screenshots` (a few minutes; only the standard library and `chromium`); it removes "
        "any picture here that no page links.",
        "",
        "The roofline charts, shot whole with their zoomed view open: [flaws](flaws-roofline.webp) (labels clear "
        "of each other, headroom arrows, the L2 and L1 roofs), [patterns](patterns-roofline.webp) (points crowded "
        "near 0.1–1 FLOP/byte, zoomed in below the chart), [torch_gemm_conv](torch_gemm_conv-roofline.webp) "
        "(cuBLAS and cuDNN kernels under the FP32 and TF32 roofs) and [torch_train](torch_train-roofline.webp) "
        "(a training step's GEMMs at one spot under their roofs, drawn side by side, none hiding another); and "
        "[the chart a phone shows](torch_train-roofline-390.webp) (drawn at the phone's width: its text keeps its "
        "size, the ceiling labels inside the plot).",
        "",
        "The page's parts on the training step's report (`torch_train`): [the kernel table on a phone]"
        "(torch_train-table-390.webp) (one stacked row per kernel: bound, headroom, time and first finding on "
        "screen), [the table in dark mode](torch_train-table-dark.webp) (with its search, filters and sortable "
        "columns, which cover every kernel of a big report), [the roofline focused on one kernel]"
        "(torch_train-focus.webp) (a click on its point shows its roofs alone); and [a kernel's source view]"
        "(flaws-source.webp) (the lines its findings cite, with their share of the instructions and top stall).",
        "",
        "| Fixture | 1400 px | 390 px | Dark | Print |",
        "|:--|:--|:--|:--|:--|",
    ]
    for n in main:
        cells = []
        for shot in SHOTS:
            f = f"{n}-{shot.suffix}.webp"
            cells.append(
                f"[<img src='{f}' width='{120 if shot.width > 400 else 50}'>]({f})" if (out / f).exists() else "–"
            )
        rows.append(f"| `{n}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="fixtures to shoot (default: the gallery's, MAIN)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--png", type=Path, help="write lossless PNGs into this folder instead (to look at)")
    ap.add_argument("--quality", type=int, default=40, help="WebP quality, 0-100")
    args = ap.parse_args()
    out: Path = args.png or args.out
    out.mkdir(parents=True, exist_ok=True)
    fmt, ext = ("png", "png") if args.png else ("webp", "webp")
    if chromium() is None:
        raise SystemExit("tests.screenshots: no chromium on PATH (apt-get install chromium)")
    browser = Browser()
    done: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="shots-") as tmp:
            for report in fixtures(args.names):
                name = report.name.removesuffix(".ncu-rep.xz")
                html = Path(tmp) / f"{name}.html"
                if not render(report, html):
                    continue
                for shot in SHOTS + ((CHART,) if name in CHARTS else ()) + FEATURES.get(name, ()):
                    if name not in MAIN and shot not in FEATURES.get(name, ()) and not args.png:
                        shot = replace(shot, scale=SMALL_PHONE if shot.mobile else SMALL)
                    if shot is PHONE_CHART:  # its zoom opened too, as on the wide chart
                        shot = replace(
                            shot, script="document.querySelectorAll('details.zoom').forEach(d => d.open = true)"
                        )
                    data = browser.shoot(html, shot, fmt, args.quality)
                    if data:
                        (out / f"{name}-{shot.suffix}.{ext}").write_bytes(data)
                done.append(name)
                print(f"{name}: {len(SHOTS)} shots", flush=True)
    finally:
        browser.close()
    if not args.png:
        shot_names = [n for n in MAIN if any((out / f"{n}-{s.suffix}.webp").exists() for s in SHOTS)]
        text = gallery(shot_names, out)
        (out / "README.md").write_text(text)
        if not args.names:  # a full run: the folder keeps only what a page links (the gallery, the README's picture)
            linked = set(re.findall(r"[\w.-]+\.webp", text + (ROOT / "README.md").read_text()))
            for p in sorted(out.glob("*.webp")):
                if p.name not in linked:
                    p.unlink()
                    print(f"removed {p.name}: no page links it")
        total = sum(p.stat().st_size for p in out.glob("*.webp"))
        print(f"{len(shot_names)} fixtures, {total / 1e6:.2f} MB of WebP in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
