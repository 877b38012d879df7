"""A headless Chromium driven by Playwright from a thread of its own: the async core of the web environments.

Playwright's objects belong to the event loop that made them, so the browser gets a loop of its own, in a
daemon thread. Whoever drives it (a benchmark's loop, a test without any loop) hands it coroutines:
`await browser.call(...)` from another loop, `browser.call_sync(...)` from plain code. Both bound the wait:
a page that never loads or a script that never returns costs its caller a `WebTimeout`, and the browser, whose
loop never blocks, goes on serving the other episodes (the caller then closes the episode's context).

The executable is Debian's Chromium (`/usr/bin/chromium`) unless one is named; Playwright's own download is
used only where it was installed before, since these machines cannot fetch a browser at run time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.util
import threading
from collections.abc import Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from noosphere.errors import MissingDependencyError, RuntimeFault, UsageError

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
INSTALL_CHROMIUM = "sudo apt-get install chromium"
T = TypeVar("T")

NO_NETWORK_ARGS = (
    # every request that is not a file: URL goes to a proxy that is not there (route-abort is the first wall)
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-pings",
)


class WebTimeout(RuntimeFault):
    """A browser operation did not finish in time (a page that never loads, a task that never gets ready)."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what = what
        self.seconds = seconds
        super().__init__(f"{what} did not finish within {seconds:g} s")


class WebPageError(RuntimeFault):
    """The browser failed at something the episode needs (its page did not load, a view could not be read)."""

    def __init__(self, what: str, error: BaseException) -> None:
        self.what = what
        lines = str(error).strip().splitlines()
        super().__init__(f"{what}: {lines[0][:300] if lines else type(error).__name__}")


def from_playwright(error: BaseException) -> bool:
    """Whether Playwright raised `error` (its errors are runtime faults of the page, not bugs of ours)."""
    return type(error).__module__.split(".")[0] == "playwright"


class MissingChromiumError(UsageError):
    """No Chromium to drive: one line saying how to install one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"web tasks need Chromium, and there is none at {path}; install it with: {INSTALL_CHROMIUM}")


def require_playwright() -> None:
    if importlib.util.find_spec("playwright") is None:
        raise MissingDependencyError("playwright", "web", "web tasks")


def find_chromium(executable: Path | None = None) -> Path | None:
    """The browser to launch: `executable` if given (it must exist), else Debian's, else None (Playwright's own,
    which `launch` checks for)."""
    if executable is not None:
        if not executable.is_file():
            raise MissingChromiumError(executable)
        return executable
    return DEBIAN_CHROMIUM if DEBIAN_CHROMIUM.is_file() else None


def require_chromium(executable: Path | None = None) -> Path | None:
    """Check, without launching anything, that there is a Chromium to launch: the one named, Debian's, or else
    Playwright's own download (None); else a `MissingChromiumError` saying how to install one."""
    require_playwright()
    found = find_chromium(executable)
    if found is not None:
        return found
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:  # starts Playwright's driver only, to ask where its browser would be
        if not Path(playwright.chromium.executable_path).is_file():
            raise MissingChromiumError(DEBIAN_CHROMIUM)
    return None


class Browser:
    """One Chromium for many episodes; each episode gets a context of its own (`noosphere.envs.web_guard`)."""

    def __init__(self, executable: Path | None = None, *, headless: bool = True, launch_timeout_s: float = 60.0
                 ) -> None:
        require_playwright()
        self.executable = find_chromium(executable)
        self.headless = headless
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="noosphere-browser", daemon=True)
        self._thread.start()
        self._playwright: Any = None
        self.browser: Any = None
        try:
            self.call_sync(self._launch(), launch_timeout_s, what="launching Chromium")
        except BaseException as error:
            self.close()
            if from_playwright(error):
                raise WebPageError(f"Chromium ({self.executable or 'Playwright own'}) did not start", error) from None
            raise

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        chromium = self._playwright.chromium
        if self.executable is None and not Path(chromium.executable_path).is_file():
            raise MissingChromiumError(DEBIAN_CHROMIUM)
        self.browser = await chromium.launch(
            headless=self.headless, executable_path=str(self.executable) if self.executable else None,
            args=list(NO_NETWORK_ARGS))

    def _submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if not self._thread.is_alive():
            work.close()
            raise RuntimeFault("the browser is closed")
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    async def call(self, work: Coroutine[Any, Any, T], timeout_s: float, *, what: str = "a browser step") -> T:
        """Run `work` on the browser's loop and wait for it from the caller's loop, `timeout_s` at most (it is
        cancelled then)."""
        future = self._submit(work)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except TimeoutError:
            raise WebTimeout(what, timeout_s) from None

    def call_sync(self, work: Coroutine[Any, Any, T], timeout_s: float, *, what: str = "a browser step") -> T:
        """`call` for code that has no event loop of its own."""
        future = self._submit(work)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise WebTimeout(what, timeout_s) from None

    async def _shutdown(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self._playwright is not None:
            await self._playwright.stop()

    def close(self) -> None:
        """Close Chromium and stop the thread; safe to call twice."""
        if self._thread.is_alive():
            with contextlib.suppress(Exception):  # best effort: the driver ends Chromium when the process ends
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self.browser = None

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
