"""A headless Chromium for the page tests, driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ending in NUL on fds 3 and 4), with nothing beyond the standard library; `Page` is one tab."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    def __init__(self) -> None:
        exe = chromium()
        if exe is None:
            raise RuntimeError("no chromium on PATH")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def fds() -> None:  # copies first: the pipe may already be fds 3 and 4, not inheritable
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._profile = tempfile.mkdtemp(prefix="test-chromium-")
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe"]
        self.proc = subprocess.Popen(
            [exe, *args, f"--user-data-dir={self._profile}", "about:blank"],
            preexec_fn=fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []

    def _read(self) -> dict:
        while b"\0" not in self._buf:
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict:
        self._next += 1
        msg: dict = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for n, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    del self.events[: n + 1]
                    return
            self.events.append(self._read())
        raise RuntimeError(f"no {method} within {timeout:.0f} s")

    def open(
        self, page: Path, width: int, height: int = 900, scripts: bool = True, media: str = "", dark: bool = False
    ) -> Page:
        """A tab showing `page` at `width` CSS px (a phone's touch and viewport under 600), loaded."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        s = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", s)
        self.call(
            "Emulation.setDeviceMetricsOverride", s, width=width, height=height, deviceScaleFactor=1, mobile=width < 600
        )
        features = [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]
        self.call("Emulation.setEmulatedMedia", s, media=media, features=features)
        if not scripts:
            self.call("Emulation.setScriptExecutionDisabled", s, value=True)
        self.events.clear()
        self.call("Page.navigate", s, url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired", s)
        return Page(self, target, s)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (DevTools evaluates it even where the page's own scripts
        are disabled)."""
        r = self.browser.call("Runtime.evaluate", self.session, expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def pdf_pages(self) -> int:
        """How many A4 pages the page prints to."""
        data = self.browser.call("Page.printToPDF", self.session, paperWidth=8.27, paperHeight=11.69)["data"]
        return len(re.findall(rb"/Type\s*/Page(?!s)", base64.b64decode(data)))

    def close(self) -> None:
        self.browser.call("Target.closeTarget", targetId=self.target)
