"""The web environment, the three web agents and `bench miniwob`, in Debian's Chromium, on the scripted model.

One browser serves the whole module. Real MiniWoB++ pages come from the `miniwob` package; the safety and
bad-input pages are written here into a folder laid out as MiniWoB's (its `core/` linked in), so they run
MiniWoB's own `core.js`. Without Chromium the browser tests skip, saying how to install it (and CI, which
installs it, counts such a skip as a failure: tests/skip_policy.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from noosphere.cli.bench_web import BrowserOnDemand
from noosphere.envs.miniwob import MiniWob, WebSettings, miniwob_root
from noosphere.envs.web_actions import WebActionError, parse_action
from noosphere.envs.web_browser import Browser, MissingChromiumError
from noosphere.llm import Capabilities, Model, ScriptedBackend
from noosphere.systems.web_agents import base, react
from noosphere.systems.web_ctm import ctm
from noosphere.systems.web_episode import play
from noosphere.trace import Trace
from noosphere.workspace import WorkspaceSettings
from tests.test_cli import invoke

pytest.importorskip("playwright", reason="needs playwright: pip install -e '.[web]'")
pytest.importorskip("miniwob", reason="needs the MiniWoB++ pages: pip install -e '.[web]'")

FAST = WebSettings(settle_s=0.0, step_timeout_s=10.0)
PAGE = """<!DOCTYPE html>
<html><head><title>{title}</title>
<link rel="stylesheet" type="text/css" href="../core/core.css">
<script src="../core/core.js"></script>
<script>
var genProblem = function() {{ document.getElementById('query').textContent = {goal!r}; {script} }};
window.onload = function() {{ core.startEpisode(); }};
</script></head>
<body><div id="wrap"><div id="query"></div><div id="area">{body}</div></div></body></html>
"""
PAGES = {
    "walls": PAGE.format(title="Walls", goal='Press "win".', script="", body="""
<a href="https://example.com/">away</a> <a href="file:///etc/hostname">file</a>
<button onclick="window.open('https://example.com/')">pop</button>
<button onclick="window.open('about:blank')">blank</button> <a href="away.html" target="_blank">tab</a>
<a href="data:text/plain,hello" download="x.txt">download</a>
<input type="text"> <button onclick="core.endEpisode(1.0)">win</button>"""),
    "pass": PAGE.format(title="Pass", goal='Press "win".', script="",
                        body="""<button onclick="core.endEpisode(-1.0)">lose</button>
<button onclick="core.endEpisode(1.0)">win</button>"""),
    "never-loads": PAGE.format(title="Never", goal="Wait.", script="", body="<script>while (true) {}</script>"),
    "never-ends": PAGE.format(title="Never ends", goal="Wait.", script="", body="<button>nothing</button>"),
    "broken": "<!DOCTYPE html><html><body><p>no task here</p></body></html>",
    "never-ready": PAGE.format(title="Never ready", goal="Wait.", script="WOB_TASK_READY = false;", body="<p>x</p>"),
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        launched = Browser()
    except MissingChromiumError as missing:
        pytest.skip(str(missing))
    yield launched
    launched.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pages")
    (root / "miniwob").mkdir()
    (root / "core").symlink_to(miniwob_root() / "core")
    for name, html in PAGES.items():
        (root / "miniwob" / f"{name}.html").write_text(html)
    return root


def right_action(prompt: str) -> str:
    """The click a person would make: on the button the goal names in quotes (else the first), from the
    accessibility tree or the HTML in the prompt."""
    goal = re.search(r"Goal: (.*)", prompt)
    named = re.search(r'"([^"]*)"', goal.group(1)) if goal else None
    want = re.escape(named.group(1)) if named else "[^'<]*"
    found = (re.search(rf"\[(\d+)\] button '{want}'", prompt) or re.search(rf'<button bid="(\d+)">{want}</button>',
                                                                           prompt))
    return f'click("{found.group(1)}")' if found else "noop()"


def player(request: Any) -> Any:
    """Every agent of the three systems, played by one script."""
    prompt = request.messages[-1].content
    if request.agent in ("base", "react"):
        return {"thought": "the named button", "action": right_action(prompt)}
    if request.agent == "stm":
        gist = prompt.split(":\n", 1)[1].split("\n\nQuery:", 1)[0]
        return {"answer": gist, "label": gist.split(" ")[0], "confidence": 0.95}
    return {"response": f"{right_action(prompt)} is the button the goal names", "additional_question": "",
            "relevance": 0.9, "confidence": 0.9, "surprise": 0.1}


def scripted(script: Any, **options: Any) -> tuple[Model, ScriptedBackend, Trace]:
    backend = ScriptedBackend(script, **options)
    trace = Trace(None)
    return Model(backend, trace=trace), backend, trace


def kinds(trace: Trace, kind: str) -> list[Any]:
    return list(trace.of_kind(kind))


# actions, without a browser -------------------------------------------------------------------------
def test_actions_are_parsed_not_run() -> None:
    assert parse_action('click("12")').render() == 'click("12")'
    assert parse_action("```\nfill('14', 'Kasie')\n```").render() == 'fill("14", "Kasie")'
    assert parse_action('I will press it: click(12, button="right") now').render() == 'click("12", "right")'
    assert parse_action('select_option("7", ["a", "b"])').arg("options") == ["a", "b"]
    assert parse_action('send_msg_to_user("done")').bids == ()
    for text, reason in (('goto("https://example.com")', "would leave the task's page"),
                         ('__import__("os").system("touch /tmp/pwned")', "not a single call of a named action"),
                         ("click(bid)", "plain strings or numbers"), ('clack("1")', "unknown action 'clack'"),
                         ('fill("3")', "fill takes fill(bid, value)"), ('click("1 or 1")', "not an element id"),
                         ("the big blue button", "not an action call"),
                         # nested past the parser's depth: a RecursionError escaped, ending the episode as an error
                         ("click(" + "-" * 3000 + "1)", "not an action call"),
                         ("I click: click(" + "-" * 3000 + '"1")', "not an action call")):
        with pytest.raises(WebActionError, match=re.escape(reason)):
            parse_action(text)


# the environment ------------------------------------------------------------------------------------
def test_a_seed_makes_the_episode_and_every_view_is_there(browser: Browser) -> None:
    first, again, other = (MiniWob(browser, "click-button", seed, settings=FAST) for seed in (0, 0, 1))
    try:
        starts = [env.reset() for env in (first, again, other)]
        assert starts[0] == starts[1] and starts[0].task != starts[2].task  # the goal names another button
        assert re.search(r"\[\d+\] button '", starts[0].observation)
        assert first.state is not None and first.state.screenshot.startswith(b"\x89PNG")
        assert 'bid="' in first.state.html and "<script" not in first.state.html
        assert any(action.startswith('click("') for action in starts[0].admissible)
    finally:
        for env in (first, again, other):
            env.close()


def test_links_made_of_spans_are_in_the_tree_with_their_bid_and_text(browser: Browser) -> None:
    """MiniWoB's links are <span>s with a click handler (no role, no name): without the `clickable` mark their bids
    were nowhere in the tree and the admissible clicks were bare numbers."""
    env = MiniWob(browser, "click-link", 0, settings=FAST)
    try:
        start = env.reset()
        assert env.state is not None
        word = re.search(r'link "([^"]+)"', start.task)
        assert word is not None
        marked = re.search(rf"\[(\d+)\] generic '{re.escape(word.group(1))}', clickable", env.state.axtree)
        assert marked is not None, env.state.axtree
        element = env.state.element(marked.group(1))
        assert element is not None and element.label() == f"span '{word.group(1)}'"
        assert f'click("{marked.group(1)}")' in start.admissible
    finally:
        env.close()


def test_every_offered_element_is_in_the_tree(browser: Browser) -> None:
    """The sweep of all 130 tasks found 37 whose admissible clicks named elements absent from the tree: nameless
    clickable boxes (click-color's swatches, email-inbox's rows) and the labels wrapping checkboxes. The boxes are
    now in the tree with their children under them; a label is left to the control it wraps."""
    for task in ("click-color", "email-inbox", "click-checkboxes"):
        env = MiniWob(browser, task, 7, settings=FAST)
        try:
            start = env.reset()
            assert env.state is not None
            shown = set(re.findall(r"\[(\d+)\]", env.state.axtree))
            offered = {bid for action in start.admissible for bid in re.findall(r'"(\d+)"', action.split(",")[0])}
            assert offered and offered <= shown, (task, offered - shown, env.state.axtree)
            assert not any((element := env.state.element(bid)) and element.tag == "label" for bid in offered)
            assert "[1] generic" not in env.state.axtree  # the page's body is not a clickable box
        finally:
            env.close()


@pytest.mark.parametrize("system", ["base", "react", "ctm"])
def test_each_system_wins_click_button(browser: Browser, system: str, tmp_path: Path) -> None:
    model, backend, trace = scripted(player)
    decide = {"base": base, "react": react, "ctm": ctm}[system](model)
    env = MiniWob(browser, "click-button", 2, settings=FAST)
    episode = asyncio.run(play(env, decide, system=system, trace=trace, media=tmp_path))
    assert episode.won and episode.reward > 0 and episode.steps == 1 and episode.reason == "done"
    [step] = kinds(trace, "web_step")
    assert step.performed == episode.actions[0] and step.box and (tmp_path / step.screenshot).read_bytes()[:4] == \
        b"\x89PNG"
    if system == "ctm":  # the processors competed and the STM's label was the action
        assert {c.processor for c in kinds(trace, "ws_chunk")} == {"html", "axtree", "screenshot"}  # it sees
        assert kinds(trace, "ws_stm")[-1].label == episode.actions[0]
    else:
        assert len(backend.history) == 1


def test_ctm_scores_from_probabilities_and_picks_an_admissible_action(browser: Browser) -> None:
    def scorer(request: Any) -> Any:
        if request.options == ("Yes", "No"):
            return {"Yes": 0.7, "No": 0.3}
        gist = request.messages[-1].content.split(":\n", 1)[1]
        return {option: 10.0 if gist.startswith(option) else 1.0 for option in request.options}

    def writer(request: Any) -> Any:
        return {"response": f"{right_action(request.messages[-1].content)} is the one", "additional_question": ""}

    model, backend, trace = scripted(writer, scorer=scorer, capabilities=Capabilities(json_schema=True, logprobs=True))
    settings = WorkspaceSettings(scores="logprob", max_iterations=1)
    env = MiniWob(browser, "click-button", 3, settings=FAST)
    episode = asyncio.run(play(env, ctm(model, settings), system="ctm", trace=trace))
    assert episode.won
    [stm] = kinds(trace, "ws_stm")
    labels = backend.score_history[-1].options
    assert stm.label in labels and len(labels) > 1 and episode.actions == (stm.label,)
    assert {c.processor for c in kinds(trace, "ws_chunk")} == {"html", "axtree"}  # no screenshot without vision


# safety ---------------------------------------------------------------------------------------------
def test_navigation_elsewhere_is_refused_and_the_page_stays(browser: Browser, pages: Path) -> None:
    env = MiniWob(browser, "walls", 0, root=pages, settings=FAST)
    try:
        env.reset()
        bids = {e.name: e.bid for e in env.state.elements if e.name} if env.state else {}
        for name in ("away", "file"):
            step = env.step(f'click("{bids[name]}")')
            assert env.last is not None and env.last.error is None and not step.done
            assert [(r.what, r.url) for r in env.last.refusals] == [
                ("navigation", "https://example.com/" if name == "away" else "file:///etc/hostname")]
        assert env.state is not None and env.state.url == env.url and "[" + bids["win"] + "] button 'win'" in \
            env.state.axtree
        with pytest.raises(WebActionError, match="would leave"):
            parse_action('go_back()')
        assert env.step('go_back()').done is False and env.last is not None and "would leave" in str(env.last.error)
        assert env.step(f'click("{bids["win"]}")').won
    finally:
        env.close()


def test_pop_ups_and_downloads_are_blocked(browser: Browser, pages: Path) -> None:
    env = MiniWob(browser, "walls", 0, root=pages, settings=WebSettings(settle_s=0.1))
    try:
        env.reset()
        bids = {e.name: e.bid for e in env.state.elements if e.name} if env.state else {}
        refused = []
        for name in ("pop", "blank", "tab", "download"):
            env.step(f'click("{bids[name]}")')
            assert env.last is not None and env.last.error is None
            refused += [r.what for r in env.last.refusals]
        assert "download" in refused and "popup" in refused

        async def open_pages() -> int:
            return len(env._context.pages)

        assert browser.call_sync(open_pages(), 5) == 1
    finally:
        env.close()


def test_no_model_output_is_run_as_script(browser: Browser, pages: Path, tmp_path: Path) -> None:
    env = MiniWob(browser, "walls", 0, root=pages, settings=FAST)
    marker = tmp_path / "pwned"
    try:
        env.reset()
        field = next(e.bid for e in env.state.elements if e.tag == "input") if env.state else ""
        hostile = '"); window.__pwned = 1; ("'
        env.step(f"fill({field!r}, {hostile!r})")
        env.step(f'__import__("pathlib").Path("{marker}").touch()')
        assert env.last is not None and "not a single call" in str(env.last.error)
        env.step(f'click("{field}"); window.__pwned = 2')

        async def page_state() -> list[Any]:
            return await env._page.evaluate("() => [typeof window.__pwned, document.querySelector('input').value]")

        assert browser.call_sync(page_state(), 5) == ["undefined", hostile]
        assert not marker.exists()
    finally:
        env.close()


class Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Recorder.seen.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_the_browser_has_no_network(browser: Browser, pages: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    (pages / "miniwob" / "net.html").write_text(PAGE.format(
        title="Net", goal="Wait.", body="<p>x</p>",
        script=f"fetch('{url}data').catch(function () {{}}); new Image().src = '{url}pixel.png';"))
    env = MiniWob(browser, "net", 0, root=pages, settings=WebSettings(settle_s=0.3))
    try:
        env.reset()
        env.step("noop(200)")
        assert Recorder.seen == []
        assert {(r.what, r.url) for r in env.guard.refusals} >= {("request", f"{url}data"),
                                                                  ("request", f"{url}pixel.png")}
    finally:
        env.close()
        server.shutdown()
        server.server_close()


# bad input ------------------------------------------------------------------------------------------
def test_lost_steps_are_recorded_and_the_episode_goes_on(browser: Browser) -> None:
    # the agent's form names only the page's actions and bids: a placeholder, a made-up bid or a fill on a button
    # (not one of the page's text fields) is sent back to the model, and its call lost when it never gets it right
    replies = iter([{"action": "click(bid, button='next')"}, {"action": {"name": "click", "bid": "999"}},
                    "not json"])
    fills = iter([True] * 3)  # the second step's three tries

    def script(request: Any) -> Any:
        wrong = next(replies, None)
        if wrong is not None:
            return wrong
        right = right_action(request.messages[1].content)  # the page's prompt (later messages would be corrections)
        return {"action": {"name": "fill", "bid": right.split('"')[1], "text": "x"}} if next(fills, False) else {
            "action": right}

    model, backend, trace = scripted(script)
    episode = asyncio.run(play(MiniWob(browser, "click-button", 4, settings=FAST), base(model), system="base",
                               trace=trace, max_steps=5))
    steps = kinds(trace, "web_step")
    assert [s.error is not None for s in steps] == [True, True, False] and episode.won and episode.lost_steps == 2
    assert all(s.error.startswith("no action: OutputParseError") and s.action == "" for s in steps[:2])
    repairs = [r.detail for r in kinds(trace, "output_repaired")]
    assert [r.split(":")[0] for r in repairs] == [
        "action.listed", "action.parts.click.bid", "no JSON object found (Expecting value)",
        *["action.parts.fill.bid"] * 3]
    assert re.fullmatch(r"action\.parts\.fill\.bid: Input should be '\d+'( or '\d+')*", repairs[-1])
    assert len(backend.history) == 7


@pytest.mark.parametrize(("task", "chosen"), [("enter-text", r'fill\("\d+", "([^"]+)"\)'),
                                            ("choose-list", r'select_option\("\d+", "([^"]+)"\)')])
def test_a_field_s_own_text_and_a_list_s_shown_option_are_not_offered(browser: Browser, task: str,
                                                                        chosen: str) -> None:
    env = MiniWob(browser, task, 1, settings=FAST)
    try:
        start = env.reset()
        action = next(a for a in start.admissible if re.fullmatch(chosen, a) and re.search(
            re.escape(re.fullmatch(chosen, a).group(1)), start.task))  # the text or option the goal names
        env.step(action)
        assert env.state is not None and not env.done
        bid = parse_action(action).bids[0]
        element = env.state.element(bid)
        assert element is not None and element.value and element.value in start.task  # held, or shown
        assert action not in env.admissible and any(a.startswith(action.split("(")[0]) for a in start.admissible)
    finally:
        env.close()


def test_a_task_that_never_ends_fails_at_the_step_budget(browser: Browser) -> None:
    def hover(request: Any) -> Any:  # actions that are carried out and end nothing (a hover that changed nothing
        # is not accepted again: the second step focuses)
        page = request.messages[1].content
        return {"action": {"name": "hover" if "(step 1 of" in page else "focus",
                           "bid": right_action(page).split('"')[1]}}

    model, _, trace = scripted(hover)
    episode = asyncio.run(play(MiniWob(browser, "click-button", 0, settings=FAST), base(model), system="base",
                               trace=trace, max_steps=2))
    assert (episode.won, episode.reason, episode.steps, episode.reward) == (False, "max_steps", 2, 0.0)
    assert episode.lost_steps == 0 and episode.actions[0].startswith('hover("')
    [ended] = kinds(trace, "web_episode_ended")
    assert ended.reason == "max_steps" and not ended.won



@pytest.mark.parametrize(("task", "role", "parts", "effects"), [
    ("enter-text", "textbox", {"name": "focus"}, ["field {bid} is now focused", "no visible change on the page"]),
    ("click-checkboxes", "checkbox", {"name": "click"}, ["box {bid} is now checked", "box {bid} is now unchecked"])])
def test_each_step_s_effect_is_measured_on_the_page_and_shown_in_the_history(
        browser: Browser, task: str, role: str, parts: dict[str, str], effects: list[str]) -> None:
    # the 1.5B model filled the same field on all ten steps of enter-text and clicked a box on and off: the
    # history now says what each step did, and that a repeat changed nothing (a refill is no longer accepted from
    # the agents, tests/test_web_agents.py: the repeat here is a focus)
    def again(request: Any) -> Any:
        bid = re.search(rf"\[(\d+)\] {role} ", request.messages[1].content)
        return {"action": {**parts, "bid": bid.group(1) if bid else "0"}}

    model, backend, trace = scripted(again)
    asyncio.run(play(MiniWob(browser, task, 1, settings=FAST), base(model), system="base", trace=trace, max_steps=3))
    steps = kinds(trace, "web_step")
    bid = steps[0].bid
    assert [s.effect for s in steps[:2]] == [e.format(bid=bid) for e in effects]
    repeat = " (repeated; nothing changed)" if task == "enter-text" else ""
    history = "".join(f"{i}. {s.action}  -> {s.effect}{repeat if i == 2 else ''}\n" for i, s in enumerate(steps[:2], 1))
    assert history in backend.history[2].messages[1].content + "\n"


@pytest.mark.parametrize(("page", "reason", "timeout"), [("never-loads", "timeout", 1.0),
                                                         ("never-ready", "timeout", 1.0), ("broken", "error", 10.0)])
def test_a_page_that_never_loads_fails_its_episode(browser: Browser, pages: Path, page: str, reason: str,
                                                   timeout: float) -> None:
    model, backend, trace = scripted([])
    env = MiniWob(browser, page, 0, root=pages, settings=WebSettings(step_timeout_s=timeout, settle_s=0.0))
    episode = asyncio.run(play(env, base(model), system="base", trace=trace))
    assert (episode.won, episode.reason, episode.steps) == (False, reason, 0) and backend.history == []
    assert ("did not finish within 1 s" if reason == "timeout" else "loading the task's page") in str(episode.error)
    after = MiniWob(browser, "pass", 0, root=pages, settings=FAST)
    assert after.reset().task == 'Press "win".'  # the browser goes on serving episodes
    after.close()


# the command ----------------------------------------------------------------------------------------
def opener_of(script: Any) -> Any:
    backend = ScriptedBackend(script)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **{k: v for k, v in kwargs.items() if k in ("trace", "cache", "ledger", "settings")})

    return opener


def test_bench_miniwob_scores_resumes_and_goes_on_after_failed_episodes(pages: Path, tmp_path: Path,
                                                                        browser: Browser,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async def shared(self: Any) -> Browser:
        return browser

    monkeypatch.setattr(BrowserOnDemand, "get", shared)  # the module's browser, not a second launch
    args = ["bench", "miniwob", "--system", "react", "--pages", str(pages), "--tasks", "broken,never-ends,pass",
            "--seeds", "1", "--max-steps", "1", "--settle", "0", "--out", str(tmp_path), "--no-cache", "--quiet"]
    code, out, err = invoke(args, opener_of(player))
    assert code == 0, out + err
    [run_dir] = list(tmp_path.iterdir())
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [(r["id"], r["correct"], r["reason"]) for r in rows] == [
        ("broken-0", False, "error"), ("never-ends-0", False, "max_steps"), ("pass-0", True, "done")]
    report = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert report["success_rate"] == 33.33 and report["tasks"]["pass"]["success_rate"] == 100.0
    assert report["success_ci95"][0] < 33.33 < report["success_ci95"][1] and report["calls_per_episode"] == 0.667
    assert report["ended"] == {"done": 1, "error": 1, "max_steps": 1}
    assert (run_dir / "tasks.md").exists() and (run_dir / "web" / "pass-0" / "step-1.png").exists()
    code, out, err = invoke(["bench", "miniwob", "--resume", str(run_dir), "--quiet", "--no-cache"], opener_of([]))
    assert code == 0, out + err
    assert len((run_dir / "items.jsonl").read_text().splitlines()) == 3

    from noosphere.viewer import load_bundle, render_page

    bundle = load_bundle(run_dir)
    assert "web" in bundle["sections"] and bundle["media"]["web/pass-0/step-1.png"].startswith("data:image/png")
    page = render_page(run_dir)
    assert "img-src data:" in page and "default-src 'none'" in page
    viewer = tmp_path / "view.html"
    viewer.write_text(page)

    async def shown() -> dict[str, Any]:
        context = await browser.browser.new_context()
        try:
            tab = await context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda error: errors.append(str(error)))
            await tab.goto(viewer.as_uri())
            await tab.click("button.tab[data-tab=web]")
            await tab.click("section:has-text('pass-0') summary >> text=1 steps")
            # the steps are drawn when the details open (the toggle event comes after the click): wait for them
            await tab.locator(".shot").first.wait_for(state="attached", timeout=10_000)
            return {"errors": errors, "img": await tab.locator(".shot img").count(),
                    "marks": await tab.locator(".shot .mark").count(),
                    "text": await tab.locator("#panel-web").inner_text()}
        finally:
            await context.close()

    seen = browser.call_sync(shown(), 20)
    assert seen["errors"] == [] and seen["img"] == 1 and seen["marks"] == 1
    assert 'carried out: click("' in seen["text"] and "lost (error)" in seen["text"] and "(max_steps)" in seen["text"]


def test_unknown_tasks_and_a_missing_chromium_are_one_line(tmp_path: Path) -> None:
    code, _, err = invoke(["bench", "miniwob", "--tasks", "click-buton", "--out", str(tmp_path)])
    assert code == 2 and "Did you mean click-button" in err and "Traceback" not in err
    code, _, err = invoke(["bench", "miniwob", "--tasks", "click-button", "--chromium", str(tmp_path / "chromium"),
                           "--out", str(tmp_path)])
    assert code == 2 and "install it with: sudo apt-get install chromium" in err
    assert len(err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["missing", "a-file", "empty"])
def test_pages_that_are_no_miniwob_folder_are_said_to_be_so(where: str, tmp_path: Path) -> None:
    """Before: "unknown MiniWoB++ task 'click-button'. Known: ." for a --pages folder that is missing or holds none."""
    pages = tmp_path / where
    if where == "a-file":
        pages.write_text("not a folder")
    elif where == "empty":
        pages.mkdir()
    out = tmp_path / "runs"
    code, _, err = invoke(["bench", "miniwob", "--tasks", "click-button", "--pages", str(pages), "--out", str(out)])
    assert code == 2 and f"no MiniWoB++ task pages in {pages}" in err and "Known: ." not in err
    assert not out.exists()


@pytest.mark.parametrize("system", ["base", "react"])
def test_scores_for_a_system_without_scores_are_refused(system: str, tmp_path: Path) -> None:
    """Before, `--system base --scores logprob` was saved in config.json for a run that used no scores."""
    code, _, err = invoke(["bench", "miniwob", "--system", system, "--scores", "logprob", "--tasks", "click-button",
                           "--out", str(tmp_path)])
    assert code == 2 and f"--system {system} takes none" in err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("given", "says"), [
    (["--step-timeout", "inf"], "--step-timeout"), (["--step-timeout", "1e306"], "--step-timeout"),
    (["--settle", "30"], "must be shorter than --step-timeout 30"),
    (["--settle", "5", "--step-timeout", "2"], "must be shorter than --step-timeout 2")])
def test_timeouts_no_browser_can_keep_are_refused_before_the_run(given: list[str], says: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `--step-timeout inf` made a run whose every episode failed ("Out of range float values are not JSON
    compliant": the browser's timeout in ms), and a settle as long as the step timed every step out."""
    code, _, err = invoke(["bench", "miniwob", "--tasks", "click-button", *given, "--out", str(tmp_path)])
    assert code == 2 and says in err + capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_the_miniwob_suite_runs_the_three_systems_on_sixty_episodes(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    import importlib.util
    import sys

    from tests.test_bench_suite import SCRIPT, commands

    spec = importlib.util.spec_from_file_location("suite_script", SCRIPT)
    assert spec and spec.loader
    suite = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, suite)  # its dataclasses look their module up there
    spec.loader.exec_module(suite)
    for name in ("base", "react", "ctm"):
        command = commands(suite, monkeypatch, "miniwob", name, tmp_path)
        assert command[:2] == ["bench", "miniwob"] and command[command.index("--system") + 1] == name
        assert command[command.index("--limit") + 1] == "60"


def test_the_report_counts_wins_partial_credit_and_its_interval() -> None:
    from noosphere.bench.miniwob import summarise, wilson

    assert wilson(0, 0) == (0.0, 100.0) and wilson(3, 3)[1] == 100.0 and wilson(1, 2) == (9.45, 90.55)
    rows = [{"id": "a-0", "task": "a", "correct": True, "reward": 1.0, "calls": 2, "steps": 1, "reason": "done"},
            {"id": "a-1", "task": "a", "correct": True, "reward": 0.33, "calls": 4, "steps": 3, "reason": "done"},
            {"id": "b-0", "task": "b", "correct": False, "reward": 0.0, "calls": 6, "steps": 10, "reason": "max_steps"}]
    metrics = summarise(rows)
    assert (metrics["success_rate"], metrics["full_reward_rate"], metrics["calls_per_episode"]) == (66.67, 33.33, 4.0)
    assert metrics["tasks"]["a"]["success_rate"] == 100.0 and metrics["ended"] == {"done": 2, "max_steps": 1}
    assert metrics["scores"] == []  # no ctm row: no score source to say
    assert summarise([{**row, "scores": "verbal"} for row in rows])["scores"] == ["verbal"]  # `auto`, as resolved


def test_auto_scores_say_when_they_fall_back_to_the_models_words(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26: never a silent fallback to verbal scores. `auto` still takes words from a model without
    probabilities (as documented), but says so on the terminal, besides each row's `scores`."""
    from noosphere.cli.bench_web import score_source
    from noosphere.llm import Model, ScriptedBackend
    from noosphere.llm.types import Capabilities

    words = Model(ScriptedBackend(["{}"]))
    assert score_source({"scores": "auto"}, words) == "verbal"
    assert "gives no token probabilities" in capsys.readouterr().err
    scoring = Model(ScriptedBackend(["{}"], capabilities=Capabilities(json_schema=True, logprobs=True)))
    assert score_source({"scores": "auto"}, scoring) == "logprob" and capsys.readouterr().err == ""


def test_a_provider_that_scores_only_first_tokens_never_scores_the_stms_actions(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The web workspace's labels are actions sharing their first words (`click("12")`, `click("13")`), which a
    first-token provider cannot tell apart: `auto` takes words and says why; `logprob` is refused before the run."""
    from noosphere.cli.bench_web import score_source
    from noosphere.errors import CapabilityError
    from noosphere.llm import Model, ScriptedBackend
    from noosphere.llm.types import Capabilities

    first = Model(ScriptedBackend(["{}"], capabilities=Capabilities(json_schema=True, logprobs=True,
                                                                    first_token_scores=True)))
    assert score_source({"scores": "auto"}, first) == "verbal"
    assert "first token" in capsys.readouterr().err
    with pytest.raises(CapabilityError, match="first token"):
        score_source({"scores": "logprob"}, first)
    assert score_source({"scores": "samples"}, first) == "samples"


@pytest.mark.parametrize("text", ["scroll(1e999, 0)", "scroll(0, -1e999)", "noop(1e999)", "fill('a1', 1e999)"])
def test_an_action_with_an_infinite_number_is_refused(text: str) -> None:
    """`1e999` is a literal `ast.literal_eval` reads as inf: a wheel of inf pixels or a sleep of inf ms is not an
    action, and a fill of "inf" is not what the model wrote."""
    with pytest.raises(WebActionError, match="must be a finite number"):
        parse_action(text)
