"""The walls around a task's page: what the browser may load, open and keep.

A web page is untrusted input, and the agent acts on it; so each episode gets a browser context in which

- only `file:` URLs inside the task's folder load (its page, scripts, styles, images); every other request,
  to any host or scheme, is aborted, and the browser itself is launched with no route out
  (`web_browser.NO_NETWORK_ARGS`);
- the only document the page may navigate to is the task's page itself: a link, a form or a script that
  would go elsewhere gets an empty "204 No Content" answer, so the browser stays on the task's page, and the
  refusal is recorded;
- a pop-up or new tab is closed as soon as it opens, and downloads are refused;
- service workers are blocked.

Every refusal is kept, in order, in `Guard.refusals`, for the trace.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class Refusal:
    what: str
    """"navigation", "request", "popup" or "download"."""
    url: str


def inside(url: str, root: Path) -> bool:
    """Whether `url` is a file: URL of a file under `root` (no host, no way out through `..`)."""
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return False
    path = Path(unquote(parts.path))
    if ".." in path.parts:
        return False
    return path.is_relative_to(root)


@dataclass
class Guard:
    """The policy of one episode's context: its folder and its page."""

    root: Path
    page_url: str
    refusals: list[Refusal] = field(default_factory=list)

    def allows(self, url: str, *, navigation: bool) -> bool:
        if navigation:
            return url.split("#", 1)[0] == self.page_url
        return inside(url, self.root)

    async def install(self, context: Any) -> None:
        """Route every request of `context` through the policy, and close what it should not open."""
        await context.route("**/*", self._route)
        context.on("page", self._on_page)

    async def _route(self, route: Any) -> None:
        request = route.request
        navigation = request.is_navigation_request() and _top_level(request)
        if self.allows(request.url, navigation=navigation):
            await route.continue_()
            return
        self.refusals.append(Refusal("navigation" if navigation else "request", request.url))
        if navigation:  # "no content": the browser stays on the page it had (an abort would put an error page there)
            await route.fulfill(status=204, body="")
        else:
            await route.abort("blockedbyclient")

    async def _on_page(self, page: Any) -> None:
        """A second page in the context is a pop-up (window.open, target=_blank): closed at once. The episode's
        own page is made before the guard is installed (`open_page`), so it never arrives here."""
        self.refusals.append(Refusal("popup", page.url))
        await page.close()

    def on_download(self, download: Any) -> None:
        self.refusals.append(Refusal("download", download.url))


def _top_level(request: Any) -> bool:
    """Whether a navigation is of a page's main frame; one whose frame does not exist yet is a new page's (a pop-up
    navigating), which counts as top-level too."""
    try:
        return request.frame.parent_frame is None
    except Exception:  # Playwright: "Frame for this navigation request is not available"
        return True


async def open_page(browser: Any, guard: Guard, *, viewport: dict[str, int], timeout_ms: float) -> tuple[Any, Any]:
    """A new context under `guard`, and its one page (not yet navigated)."""
    context = await browser.new_context(viewport=viewport, accept_downloads=False, service_workers="block",
                                        java_script_enabled=True, bypass_csp=False)
    try:
        context.set_default_timeout(timeout_ms)
        context.set_default_navigation_timeout(timeout_ms)
        page = await context.new_page()
        await guard.install(context)
        page.on("download", guard.on_download)
    except BaseException:  # a context the caller never gets would stay open in the browser until the run ends
        with contextlib.suppress(Exception):
            await context.close()
        raise
    return context, page
