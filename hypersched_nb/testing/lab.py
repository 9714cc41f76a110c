"""JupyterLab in a real browser, for the tests and the benchmark of the notebook's controls.

:class:`Lab` starts a JupyterLab server on 127.0.0.1 with a random token, serving one folder,
and opens a headless Chromium page on it with Playwright. The browser is Debian's ``chromium``
(``apt-get install chromium``) driven through ``executable_path``: nothing is downloaded.
:func:`browser_missing` says why no browser test can run here. The page records every page
error and console error in :attr:`Lab.errors`, except a request the browser dropped because the
machine's network changed (another test's network namespace or veth pair coming or going),
which is the host's doing, not the page's: those go to :attr:`Lab.network_changes`.

:func:`watch_search` runs in the kernel: it records, in wall-clock time, when an experiment's
deadline moves and when its status changes, so that a test compares them with the moments
its clicks were made.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

__all__ = ["PROMPTLY", "Lab", "browser_missing", "find_chromium", "wait_for_file", "watch_search"]

#: seconds within which a click's effect, or a failure's words, come even on a loaded
#: machine, where a lost click or a missed wake-up would wait for the search's deadline; the
#: 2-s target is measured by ``benchmarks/ui_latency.py``, not asserted (machines are shared)
PROMPTLY = 10.0

_CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")
_PROMPT = ".jp-InputArea-prompt"
_SETTINGS = {  # a page that asks nothing and draws every cell
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}
_RAN = re.compile(r"\[\d+\]")  # a prompt once its cell has run: "[7]:"
_QUEUED_OR_RAN = re.compile(r"\[(\d+|\*)\]")
_KERNEL_IDLE = re.compile(r"\| Idle$")  # the status bar's "Python 3 (ipykernel) | Idle"
# Chromium's word for a request it aborted because the host's network interfaces changed
_NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"


def find_chromium() -> str | None:
    """The path of a Chromium binary, or None."""
    for name in _CHROMIUM:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


def browser_missing() -> str | None:
    """Why a browser test cannot run here (None when it can)."""
    for module, package in (("playwright", "playwright"), ("jupyterlab", "jupyterlab")):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (pip install -e '.[test]')"
    if find_chromium() is None:
        return "no chromium binary (apt-get install chromium)"
    return None


class Lab:
    """A JupyterLab server serving ``root`` and a Chromium page on it (a context manager).

    ``artifacts`` is where :meth:`screenshot` saves its pictures and the server its log;
    ``settings`` JupyterLab settings by plugin, beside the harness's own (``{"@jupyter-widgets/
    jupyterlab-manager/plugin": {"saveState": True}}``: widget state saved with the notebook).
    """

    def __init__(
        self, root: Path, *, artifacts: Path, width: int = 1400, height: int = 1000,
        settings: dict | None = None,
    ):  # fmt: skip
        self.root, self.artifacts = Path(root), Path(artifacts)
        self.settings = {**_SETTINGS, **(settings or {})}
        self.size = {"width": width, "height": height}
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.errors: list[str] = []
        self.network_changes: list[str] = []  # requests dropped as the host's interfaces changed
        self._server: subprocess.Popen | None = None
        self._playwright = self._browser = self.page = None

    def __enter__(self) -> Lab:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        try:
            self._start_server()
            self._start_browser()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind, *exc) -> None:
        if kind is not None and self.page is not None:  # what the page showed when it failed
            self.screenshot("failure")
        self.close()

    def _start_server(self) -> None:
        home = self.root / ".lab"
        env = dict(os.environ)
        for var, sub in (
            ("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython"),
        ):  # fmt: skip
            env[var] = str(home / sub)
            (home / sub).mkdir(parents=True, exist_ok=True)
        config = {  # no news, no update check, no extension index: nothing fetched from outside
            "ServerApp": {"allow_root": True},  # a container's root user
            "LabApp": {
                "news_url": None,
                "extension_manager": "readonly",
                "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
            },
        }
        (home / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        for plugin, settings in self.settings.items():
            path = home / "settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(settings))
        with open(self.artifacts / "jupyterlab.log", "w") as log:  # the server has its own copy
            self._server = subprocess.Popen(
                [
                    sys.executable, "-m", "jupyterlab", "--no-browser",
                    "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                    "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                    f"--ServerApp.root_dir={self.root}",
                ],
                cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if self._server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited; see {self.artifacts / 'jupyterlab.log'}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError("JupyterLab did not answer within 60 s")

    def _start_browser(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=find_chromium(), headless=True
        )
        self.page = self._browser.new_page(viewport=self.size)
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.page.on("console", self._on_console)

    def _on_console(self, message) -> None:
        if message.type != "error":
            return
        if _NETWORK_CHANGED in message.text:
            self.network_changes.append(message.text)
        else:
            self.errors.append(f"console error: {message.text}")

    def close(self) -> None:
        """Close the browser and stop the server (its kernels with it)."""
        if self._browser is not None:
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()
        self._browser = self._playwright = self.page = None
        if self._server is not None and self._server.poll() is None:
            self._server.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                self._server.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self._server.pid, 9)
                self._server.wait()
        self._server = None

    # ------------------------------------------------------------------ the page

    def open(self, notebook: str, *, timeout: float = 60) -> None:
        """Open ``notebook`` (relative to the root) and wait until its kernel is connected
        and idle (before that, running a cell would ask for a kernel)."""
        self.page.goto(f"{self.url}/lab/tree/{notebook}?token={self.token}")
        self.page.locator(".jp-StatusBar-TextItem", has_text=_KERNEL_IDLE).wait_for(
            timeout=timeout * 1000
        )
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=timeout * 1000)

    def run_all(self) -> None:
        """Run > Run All Cells; returns once the first code cell is queued or has run."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        self.page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        self.page.locator(f".jp-CodeCell {_PROMPT}").filter(has_text=_QUEUED_OR_RAN).first.wait_for(
            timeout=10_000
        )

    def watch_for(self, words: str, *, within=None, key: str | None = None) -> None:
        """From now on, the page notes the wall-clock time at which its text (or the text
        of the element ``within``, a locator) first holds ``words``, at every change of the
        page: words shown for a moment (a dashboard's header just before its final picture
        replaces it) are not missed. Noted under ``key`` (default: ``words``)."""
        script = """([el, words, key]) => {
            window.__seen = window.__seen || {};
            const look = () => {
                if (!(key in window.__seen) && el.innerText.includes(words)) {
                    window.__seen[key] = Date.now() / 1000;
                }
            };
            new MutationObserver(look).observe(el,
                {subtree: true, childList: true, characterData: true});
            look();
        }"""
        element = (within or self.page.locator("body")).element_handle()
        self.page.evaluate(script, [element, words, key or words])

    def said(self, words: str, *, timeout: float) -> float:
        """The wall-clock time at which the page first held ``words`` (see
        :meth:`watch_for`; ``words`` is its ``key`` where one was given), waiting up to
        ``timeout`` seconds for it."""
        self.page.wait_for_function(
            "(words) => window.__seen && words in window.__seen", arg=words, timeout=timeout * 1000
        )
        return self.page.evaluate("(words) => window.__seen[words]", words)

    def cell(self, index: int):
        """The ``index``-th cell of the open notebook."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def wait_ran(self, index: int, *, timeout: float = 120) -> None:
        """Wait until the ``index``-th cell has run (its prompt shows a number)."""
        self.cell(index).locator(_PROMPT).filter(has_text=_RAN).wait_for(timeout=timeout * 1000)

    def screenshot(self, name: str, *, showing=None) -> Path:
        """The page as ``artifacts/<name>.png``, scrolled to the locator ``showing``."""
        if showing is not None:
            _while_redrawn(showing.scroll_into_view_if_needed)
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def drag(self, locator, dx: float) -> float:
        """Drag ``locator`` by ``dx`` pixels; the wall-clock time of the release."""
        box = _while_redrawn(lambda: _scrolled_box(locator))
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        mouse = self.page.mouse
        mouse.move(x, y)
        mouse.down()
        mouse.move(x + dx, y, steps=8)
        released = time.time()
        mouse.up()
        return released

    def click(self, locator) -> float:
        """Click ``locator``; the wall-clock time of the click."""
        _while_redrawn(locator.scroll_into_view_if_needed)
        clicked = time.time()
        locator.click()
        return clicked


def _scrolled_box(locator) -> dict:
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    if box is None:
        raise _Redrawn("the element left the page")
    return box


class _Redrawn(Exception):
    pass


def _while_redrawn(action, *, tries: int = 5):
    """``action()``, tried again when the widget it acts on was redrawn under it (a
    refreshed output replaces its elements: "Element is not attached to the DOM")."""
    from playwright.sync_api import Error

    for attempt in range(tries):
        try:
            return action()
        except (Error, _Redrawn) as exc:
            redrawn = isinstance(exc, _Redrawn) or "not attached" in str(exc)
            if not redrawn or attempt == tries - 1:
                raise
            time.sleep(0.1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------- in the kernel


def watch_search(experiment, path, *, every: float = 0.02) -> threading.Thread:
    """From a thread: note (wall-clock time, deadline, status) whenever the deadline or the
    status of ``experiment`` changes, and write the notes to ``path`` as JSON when it is
    over."""

    def run() -> None:
        notes, last = [], None
        while True:
            snap = experiment.statistics()
            now = (snap.deadline, snap.status)
            if now != last:
                notes.append({"time": time.time(), "deadline": now[0], "status": now[1]})
                last = now
            if snap.done:
                break
            time.sleep(every)
        Path(path).write_text(json.dumps(notes))

    thread = threading.Thread(target=run, name="watch-search", daemon=True)
    thread.start()
    return thread


def wait_for_file(path, *, timeout: float = 600.0) -> None:
    """Block until ``path`` exists (a notebook's cell that the driving browser lets go on)."""
    end = time.monotonic() + timeout
    while not Path(path).exists():
        if time.monotonic() > end:
            raise TimeoutError(f"{path} did not appear within {timeout:.0f} s")
        time.sleep(0.02)
