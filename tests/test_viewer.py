"""The run viewer: the page each kind of run gets, driven in Debian's Chromium through Playwright.

The fixture runs under tests/fixtures were recorded by `tests/fixtures/make_fixtures.py`.
The browser is Debian's Chromium (/usr/bin/chromium, or NOOSPHERE_CHROMIUM), else Playwright's own download;
`make test` installs one (.ci/system-deps). Without either the browser tests skip, saying which command to run, and
CI counts that skip as a failure (tests/skip_policy.py). Screenshots go to the test's tmp_path and, when
NOOSPHERE_ARTIFACTS names a folder, there too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench.runner import BenchItemFinished, BenchItemStarted
from noosphere.errors import UsageError
from noosphere.runs import Run
from noosphere.viewer import load_bundle, make_server, render_page
from noosphere.viewer.page import embed_json
from tests.test_cli import invoke

RUNS = Path(__file__).parent / "fixtures"
CHROMIUM = Path(os.environ.get("NOOSPHERE_CHROMIUM", "/usr/bin/chromium"))
NO_CHROMIUM = (f"needs Chromium: no {CHROMIUM} (sudo apt-get install chromium) and no Playwright download "
               "(python -m playwright install chromium); make test installs one")
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


# without a browser ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("run", "sections"), [
    ("workspace", ["workspace"]), ("society", ["society"]), ("economy", ["society"]),
    ("bench-base", ["benchmark"]), ("bench-society", ["society", "benchmark"]), ("metaagent", ["metaagent"]),
    ("hostile", [])])
def test_bundle_reads_the_run_folder_and_picks_its_views(run: str, sections: list[str]) -> None:
    bundle = load_bundle(RUNS / run)
    assert bundle["sections"] == sections
    assert bundle["events"][0]["kind"] == "run_started" and bundle["config"]["command"]
    assert bool(bundle["items"]) == ("benchmark" in sections)


def test_a_folder_without_a_trace_is_a_one_line_usage_error(tmp_path: Path) -> None:
    for command in (["report", str(tmp_path), "-o", str(tmp_path / "x.html")], ["view", str(tmp_path)]):
        code, _, err = invoke(command)
        assert code == 2 and "no trace.jsonl in" in err and "Traceback" not in err


def test_runs_of_two_benchmarks_are_not_compared(tmp_path: Path) -> None:
    """Before, MUStARD's accuracy was subtracted from GSM8K's on the compare tab."""
    for name, benchmark in (("a", "mustard"), ("b", "gsm8k")):
        shutil.copytree(RUNS / "bench-base", tmp_path / name)
        config = json.loads((tmp_path / name / "config.json").read_text())
        (tmp_path / name / "config.json").write_text(json.dumps({**config, "benchmark": benchmark}))
    out = tmp_path / "x.html"
    for command in (["report", str(tmp_path / "a"), "-o", str(out), "--compare", str(tmp_path / "b")],
                    ["view", str(tmp_path / "a"), "--compare", str(tmp_path / "b")]):
        code, _, err = invoke(command)
        assert code == 2 and "a mustard run" in err and "a gsm8k run" in err and not out.exists()


def test_torn_lines_and_nan_do_not_break_the_page(tmp_path: Path) -> None:
    shutil.copytree(RUNS / "hostile", tmp_path / "run")
    with (tmp_path / "run" / "trace.jsonl").open("a") as trace:
        trace.write('{"kind": "ws_stm", "ts": 1.0, "confidence": NaN}\n{"kind": "model_ca')
    events = load_bundle(tmp_path / "run")["events"]
    assert events[-1] == {"kind": "ws_stm", "ts": 1.0, "confidence": None}


def test_embedded_json_is_strict_so_that_a_nan_in_old_rows_cannot_blank_the_page() -> None:
    """Rows written before the runner made them strict may hold NaN; a trace number may be 1e999 (inf): the
    browser's JSON.parse refuses both, so the page carries null."""
    text = embed_json({"items": [{"confidence": float("nan")}], "events": [{"ts": float("inf")}]})
    assert json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the page's data")) == {
        "items": [{"confidence": None}], "events": [{"ts": None}]}


def test_embedded_json_cannot_close_the_script_element() -> None:
    text = embed_json({"x": f"</script>{HOSTILE}&\u2028\u2029"})
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == {"x": f"</script>{HOSTILE}&\u2028\u2029"}
    page = render_page(RUNS / "hostile")
    assert page.count("<script") == 2 and "window.__pwned=1" in page
    assert not re.search(r"<(link|img|iframe)\b", page)  # nothing is fetched: the only URL is the SVG namespace
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_view_server_binds_loopback_and_serves_the_page() -> None:
    server = make_server(RUNS / "workspace", port=0, compare=RUNS / "hostile")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            page = reply.read().decode()
            assert reply.headers["Content-Type"].startswith("text/html")
        assert 'id="run-data"' in page and '"name":"workspace"' in page and '"name":"hostile"' in page
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/trace.jsonl", timeout=10)
        # HEAD answers as GET would, without the body (it was 501)
        head = urllib.request.Request(f"http://127.0.0.1:{port}/", method="HEAD")
        with urllib.request.urlopen(head, timeout=10) as reply:
            assert reply.status == 200 and reply.read() == b"" and int(reply.headers["Content-Length"]) > 1000
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/x", method="HEAD"), timeout=10)
        # a site whose name was rebound to 127.0.0.1 (DNS rebinding) gets neither the page nor its live token
        for name in ("rebound.attacker.example", "127.0.0.1.attacker.example"):
            rebound = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": f"{name}:{port}"})
            with pytest.raises(urllib.error.HTTPError, match="421"):
                urllib.request.urlopen(rebound, timeout=10)
        for name in (f"localhost:{port}", f"127.0.0.1:{port}"):
            named = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": name})
            with urllib.request.urlopen(named, timeout=10) as reply:
                assert reply.status == 200
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("host", ["", " "])
def test_an_empty_host_is_refused_not_every_interface(host: str) -> None:
    """Before, `--host ""` (an unset variable, say) bound 0.0.0.0: the run's page open to the network."""
    with pytest.raises(UsageError, match="--host is empty"):
        make_server(RUNS / "workspace", host=host, port=0)


def test_view_command_prints_the_url_and_stops_on_ctrl_c() -> None:
    port = free_port()
    # Ctrl-C as a terminal sends it, whatever the test run inherited: a shell that starts a job in the
    # background without job control has it ignore SIGINT, and Python then never turns it into Ctrl-C
    process = subprocess.Popen([sys.executable, "-m", "noosphere", "view", str(RUNS / "metaagent"), "--port",
                                str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "COLUMNS": "200", "PYTHONFAULTHANDLER": "1"},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert f"http://127.0.0.1:{port}/" in line, line + (process.stderr.read() if process.poll() is not None else "")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert '"name":"metaagent"' in reply.read().decode()
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired as hung:  # say where the server hung: faulthandler dumps its threads
            process.send_signal(signal.SIGABRT)
            stderr = process.communicate(timeout=30)[1]
            threads = stderr.split("Extension modules")[0][-6000:]
            raise AssertionError(f"still serving 30 s after Ctrl-C; its threads:\n{threads}") from hung
        assert code == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# in the browser ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[test]')")
    with sync_api.sync_playwright() as playwright:
        if CHROMIUM.exists():
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM))
        elif Path(playwright.chromium.executable_path).exists():
            launched = playwright.chromium.launch()
        else:
            pytest.skip(NO_CHROMIUM)
        yield launched
        launched.close()


class Viewer:
    """One report page open in the browser; fails the test on any script error of the page."""

    def __init__(self, browser: Any, tmp_path: Path, run: str | Path, compare: str | None = None) -> None:
        self.tmp_path = tmp_path
        self.file = tmp_path / f"{Path(run).name}.html"
        args = ["report", str(RUNS / run), "-o", str(self.file)]
        code, out, err = invoke([*args, "--compare", str(RUNS / compare)] if compare else args)
        assert code == 0, err
        assert "wrote" in out
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(self.file.as_uri())
        self.page.wait_for_selector("body[data-ready]", timeout=60_000)

    def tab(self, name: str) -> Any:
        self.page.click(f"button.tab[data-tab={name}]")
        return self.page.locator(f"#panel-{name}")

    def shot(self, name: str) -> None:
        path = self.tmp_path / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        if os.environ.get("NOOSPHERE_ARTIFACTS"):
            target = Path(os.environ["NOOSPHERE_ARTIFACTS"])
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target / path.name)

    def close(self) -> None:
        self.page.close()
        assert not self.errors, self.errors


def card(panel: Any, title: str) -> Any:
    """The first card whose heading is exactly `title`."""
    return panel.locator(f'section.card:has(> h3:text-is("{title}"))').first


@pytest.fixture
def view(browser: Any, tmp_path: Path) -> Iterator[Any]:
    opened: list[Viewer] = []

    def open_(run: str | Path, compare: str | None = None) -> Viewer:
        opened.append(Viewer(browser, tmp_path, run, compare))
        return opened[-1]

    yield open_
    for viewer in opened:
        viewer.close()


def test_workspace_iterations_chunks_competition_stm_and_link_graph(view: Any) -> None:
    viewer = view("workspace")
    header = viewer.page.locator("header").inner_text()
    assert "20\nmodel calls" in header and "6,399" in header and "1\nrepairs" in header
    panel = viewer.tab("workspace")
    assert "Sarcastic." in panel.locator(".card").first.inner_text()
    edges = panel.locator("svg.graph line.edge")
    assert edges.count() == 1 and edges.first.get_attribute("class") == "edge created"
    assert (edges.first.get_attribute("data-a"), edges.first.get_attribute("data-b")) == ("words", "tone")
    assert "The words praise the weather." in panel.locator("tr.winner").inner_text()
    assert "Probably sarcastic." in panel.inner_text()
    viewer.shot("workspace-iteration-1")
    panel.get_by_role("button", name="iteration 2").click()
    assert panel.locator(".iteration").get_attribute("data-iteration") == "2"
    assert [(e.get_attribute("data-a"), e.get_attribute("data-b")) for e in edges.all()] == [("tone", "scene")]
    assert panel.locator("svg.graph line.edge-removed").count() == 1  # tone - words, drawn dashed
    assert panel.locator(".winner-name").inner_text() == "tone"
    assert "Does the scene contradict the words?" in panel.inner_text()
    viewer.shot("workspace-iteration-2")


def test_a_model_call_opens_to_prompt_response_tokens_latency_and_repair(view: Any) -> None:
    viewer = view("workspace")
    panel = viewer.tab("timeline")
    segments = panel.locator("details.segment")
    assert segments.count() == 4 and "iteration 1" in segments.nth(1).inner_text()
    segments.nth(1).locator("summary").first.click()
    call = panel.locator("details.call").filter(has_text="repair: invalid")
    call.wait_for()  # the segment builds its calls when it opens
    assert call.count() == 1
    call.locator("summary").click()
    call.locator(".call-detail").wait_for()
    detail = call.locator(".call-detail").inner_text()
    assert "repair (try 1): invalid" in detail and "no JSON object found" in detail
    assert "I think it is sarcastic" in detail and "prompt (2 messages)" in detail and "system" in detail
    assert "prompt_tokens" in detail and "latency" in detail
    viewer.shot("timeline-call")


def test_society_members_phases_summaries_votes(view: Any) -> None:
    viewer = view("society")
    panel = viewer.tab("society")
    text = panel.inner_text()
    assert "democracy" in text and "change, execute, know" in text
    assert panel.locator(".badge", has_text="staff").count() >= 1  # the organizer
    assert "Most members found 60" in card(panel, "Staff: questions, summaries, verdicts").inner_text()
    assert "mindstorm · round 2" in text and "checker works it through step by step and gets 50." in text
    votes = card(panel, "Votes").inner_text()
    assert "plurality: winner 60" in votes
    viewer.shot("society")


def test_a_weighted_vote_shows_what_each_standing_answer_weighed(view: Any, tmp_path: Path) -> None:
    import json as json_
    from concurrent.futures import ThreadPoolExecutor

    from noosphere.llm import Capabilities, Reply, Usage
    from noosphere.society import Member, debate
    from noosphere.trace import Trace
    from tests.helpers import by_agent, scripted

    def likely(answer: str, logprob: float) -> Reply:
        return Reply(json_.dumps({"reasoning": "r", "answer": answer}), usage=Usage(10, 2), logprob=logprob)

    model, _, _ = scripted(by_agent({"a": [likely("6", -0.2)], "b": [likely("5", -4.0)], "c": [likely("5", -4.0)]}),
                           capabilities=Capabilities(json_schema=True, logprobs=True))
    run = tmp_path / "weighted"
    run.mkdir()
    trace = Trace(run / "trace.jsonl")
    society = debate([Member(name, model, name) for name in "abc"], rounds=0, vote="sequence")
    with ThreadPoolExecutor(1) as pool:  # Playwright's own event loop runs in this thread
        assert pool.submit(society.run_sync, "3 x 2?", trace=trace).result().answer == "6"
    trace.close()
    votes = card(view(run).tab("society"), "Votes").inner_text()
    assert "a\t6 (standing answer, no vote cast), weighing 0.90" in votes
    assert "weighing 0.14" in votes and "plurality: winner 6" in votes


def test_economy_balances_chart_payments_and_contracts(view: Any) -> None:
    viewer = view("economy")
    panel = viewer.tab("society")
    series = panel.locator("svg.chart g.series")
    assert [s.get_attribute("data-name") for s in series.all()] == ["planner", "calculator", "checker"]
    assert series.first.locator("circle").count() == 3
    assert "planner, round 1: 6" in series.first.locator("title").nth(1).text_content()
    payments = card(panel, "Payments (7)")
    assert payments.locator("tbody tr").count() == 7 and "contract 1" in payments.inner_text()
    assert "delivered" in card(panel, "Contracts").inner_text()
    viewer.shot("economy")


def test_metaagent_path_heatmap_beliefs_retrievals_and_focus(view: Any) -> None:
    viewer = view("metaagent")
    panel = viewer.tab("metaagent")
    assert panel.locator(".path .state").count() == 9
    assert panel.locator(".path .arrow.bad").count() == 1
    heat = panel.locator("table.heatmap")
    act_row = heat.locator("tbody tr", has_text="act").first
    assert act_row.locator("td").nth(3).inner_text() == "2"  # act -> verify twice
    steps = card(panel, "Steps").inner_text()
    assert '"holding": "clean apple 1"' in steps and "put apple 1 in/on fridge 1" in steps
    assert "Apples are cleaned at a sinkbasin." in card(panel, "Memory retrievals (2)").inner_text()
    focus = card(panel, "Focus-loop recoveries (1)").inner_text()
    assert "the same action three times (struck: go to countertop 1)" in focus
    viewer.shot("metaagent")


def test_a_scored_react_runs_judge_shows_its_candidates_and_the_actions_it_changed(view: Any, tmp_path: Path) -> None:
    shutil.copytree(RUNS / "metaagent", tmp_path / "judged")
    judged = [{"kind": "ma_judged", "ts": 1.0, "step": 1, "written": "go west", "chosen": "examine locker",
               "candidates": ["go west", "open locker", "examine locker"], "policy": [0.5, 0.3, 0.2],
               "p_true": [0.59, 0.69, 0.7]},
              {"kind": "ma_judged", "ts": 2.0, "step": 2, "written": "take cane", "chosen": "take cane",
               "candidates": ["take cane"], "policy": [None], "p_true": [None]}]
    with (tmp_path / "judged" / "trace.jsonl").open("a") as trace:
        trace.writelines(json.dumps(event) + "\n" for event in judged)
    panel = view(tmp_path / "judged").tab("metaagent")
    judge = card(panel, "Judge (1 of 2 actions changed)")
    rows = judge.locator("tbody tr")
    assert rows.count() == 2 and "open locker: 0.30, 0.69" in rows.first.inner_text()
    assert rows.first.get_attribute("class") == "focus" and rows.nth(1).get_attribute("class") in (None, "")
    assert "take cane: –, –" in rows.nth(1).inner_text()  # not scored: nothing to choose between


def test_benchmark_metrics_items_and_a_click_into_an_items_trace(view: Any) -> None:
    # The run scored two problems at a time, so its items' events interleave in the trace.
    owners = [json.loads(line).get("item_id") for line in (RUNS / "bench-society" / "trace.jsonl").open()]
    tagged = [owner for owner in owners if owner]
    assert tagged.index("gsm8k-0001") < len(tagged) - 1 - tagged[::-1].index("gsm8k-0000")
    viewer = view("bench-society")
    panel = viewer.tab("benchmark")
    assert "accuracy\t75" in card(panel, "Metrics").inner_text()
    rows = panel.locator("tr.clickable")
    assert rows.count() == 4
    panel.get_by_role("button", name="wrong (1)").click()
    assert rows.count() == 1
    rows.first.click()
    trace = panel.locator("#item-trace")
    assert "Trace of item gsm8k-0000" in trace.inner_text()
    assert "11\nmodel calls" in trace.locator(".totals").inner_text()
    shown = trace.inner_text()
    assert "democracy" in shown and "planner works it through step by step and gets 8." in shown
    viewer.shot("benchmark-item-trace")


def test_compare_two_benchmark_runs_side_by_side(view: Any) -> None:
    viewer = view("bench-base", compare="bench-society")
    panel = viewer.tab("compare")
    metrics = card(panel, "Metrics").inner_text()
    assert "accuracy\t50\t75\t25" in metrics
    assert "both right 1 · only A 1 · only B 2 · both wrong 0" in panel.inner_text()
    first = panel.locator("tbody tr", has_text="gsm8k-0000")
    assert first.locator("button[data-run=A] .ok").count() == 1
    assert first.locator("button[data-run=B] .bad").count() == 1
    first.locator("button[data-run=B]").click()
    assert "Trace of item gsm8k-0000 (bench-society)" in panel.locator("#item-trace").inner_text()
    panel.get_by_label("only items where A and B differ").check()
    assert panel.locator("tr.differs").count() == 3 and panel.locator("tbody tr", has_text="gsm8k-0002").count() == 0
    viewer.shot("compare")


def test_hostile_content_is_shown_as_text_and_never_runs(view: Any) -> None:
    viewer = view("hostile")
    page = viewer.page
    assert HOSTILE in page.locator("#panel-overview").inner_text()
    assert page.get_by_text(f"Here you go: {HOSTILE}").is_visible()
    panel = viewer.tab("timeline")
    panel.locator("details.segment summary").first.click()
    panel.locator("details.call summary").click()
    assert "<script>window.__pwned=1</script>" in panel.locator("pre.response").inner_text()  # the raw JSON reply
    assert f"Here you go: {HOSTILE}" in panel.locator(".parsed").inner_text()
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    assert page.evaluate("typeof window.__pwned") == "undefined"
    viewer.shot("hostile")


def test_events_named_like_the_prototypes_members_are_listed_not_called(view: Any, tmp_path: Path) -> None:
    """A trace is untrusted text: kinds `__proto__`, `valueOf` or `constructor` are events like any other."""
    folder = tmp_path / "odd"
    shutil.copytree(RUNS / "hostile", folder)
    with (folder / "trace.jsonl").open("a") as trace:
        for kind in ("__proto__", "valueOf", "constructor", "toString"):
            trace.write(json.dumps({"kind": kind, "ts": 1795800000.0}) + "\n")
    viewer = view(folder)
    panel = viewer.tab("timeline")
    assert panel.count() == 1 and panel.is_visible()
    assert viewer.page.evaluate("typeof window.__pwned") == "undefined"


def write_big_run(folder: Path) -> Path:
    """The 10,000-call CTM benchmark run that `benchmarks/viewer_load.py` times the page on."""
    spec = importlib.util.spec_from_file_location("viewer_load", Path(__file__).parent.parent / "benchmarks" /
                                                  "viewer_load.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_big_run(folder)


def test_a_trace_of_ten_thousand_calls_opens_with_every_item_within_reach(view: Any, tmp_path: Path) -> None:
    """What the page shows of a large trace; how long it takes to open is a figure of its own, measured by
    `python benchmarks/viewer_load.py` (a wall-clock limit here failed on a loaded machine, not a slow page)."""
    viewer = view(write_big_run(tmp_path / "big"))
    assert viewer.page.evaluate("window.__viewerReadyMs") > 0  # the page timed itself for the benchmark
    assert "10,000\nmodel calls" in viewer.page.locator("header").inner_text()
    panel = viewer.tab("timeline")
    assert panel.locator("details.segment").count() == 100  # one per item, built only when opened
    panel.locator("details.segment summary").nth(3).click()
    panel.locator("details.segment details.segment summary").nth(1).click()  # item-0002, iteration 1
    panel.locator("details.call").first.wait_for()
    assert panel.locator("details.call").count() == 50
    panel = viewer.tab("benchmark")
    assert panel.locator("tr.clickable").count() == 100
    panel.locator("tr.clickable").nth(99).click()
    assert "Trace of item item-0099" in panel.locator("#item-trace").inner_text()
    viewer.shot("ten-thousand-calls")


def write_calibrated_run(folder: Path) -> Path:
    """A MUStARD run whose three items carry confidences (right at 0.9 and 0.6, wrong at 0.7), reported as
    `noosphere bench` reports (the browser's event loop leaves no room for the CLI's own)."""
    from noosphere.bench import averages, write_report
    from noosphere.bench.calibration import calibrate_run

    with Run(folder, command="bench", config={"benchmark": "mustard", "system": "base", "model": "scripted"}) as run:
        rows = []
        for index, (confidence, correct) in enumerate([(0.9, True), (0.7, False), (0.6, True)]):
            item_id, gold = f"item-{index}", "sarcastic" if correct else "not sarcastic"
            run.trace.emit(BenchItemStarted(item_id=item_id))
            run.trace.emit(BenchItemFinished(item_id=item_id, prediction="sarcastic", gold=gold, correct=correct,
                                             calls=1, tokens=10, seconds=0.1))
            rows.append({"id": item_id, "prediction": "sarcastic", "gold": gold, "correct": correct, "calls": 1,
                         "tokens": 10, "seconds": 0.1, "error": None, "confidence": confidence})
        (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        calibration = calibrate_run(folder, rows, "MUStARD (text) · base")
        report = write_report(run, "MUStARD (text)", {"accuracy": 66.67, **calibration.metrics}, averages(rows))
        run.finish({"report": report})
    return folder


def test_benchmark_tab_and_compare_draw_the_reliability_diagram(view: Any, tmp_path: Path) -> None:
    first, second = write_calibrated_run(tmp_path / "a"), write_calibrated_run(tmp_path / "b")
    assert (first / "reliability.png").exists()
    report = json.loads((first / "report.json").read_text())
    report["metrics"]["tokens_per_action"] = 3076.456  # a decimal past a thousand is grouped as integers are
    (first / "report.json").write_text(json.dumps(report))
    viewer = view(first)
    panel = viewer.tab("benchmark")
    calibration = card(panel, "Calibration")
    assert calibration.locator("svg.reliability rect.bin").count() == 3  # bins 0.6, 0.7 and 0.9 hold an item each
    assert calibration.locator("svg.reliability line.diagonal").count() == 1
    assert "ECE 0.400 · Brier 0.220 · AUROC 0.500 · n 3" in calibration.locator("svg text.title").text_content()
    assert "two right and two wrong answers" in calibration.inner_text()
    metrics = card(panel, "Metrics").inner_text()
    assert "ece\t0.400\n" in metrics and "calibration" not in metrics  # three digits, as in the card
    assert "tokens_per_action\t3,076.46\n" in metrics
    assert viewer.page.locator("img").count() == 0  # drawn inline: the report file stays self-contained
    viewer.shot("calibration")

    compared = view(first, compare=str(second)).tab("compare")
    assert card(compared, "Calibration").locator("svg.reliability").count() == 2
    assert "ece\t0.400\t0.400\t0.000\n" in card(compared, "Metrics").inner_text()
    base = tmp_path / "base"  # a run of the same benchmark whose items have no confidence
    shutil.copytree(RUNS / "bench-base", base)
    config = json.loads((base / "config.json").read_text())
    (base / "config.json").write_text(json.dumps({**config, "benchmark": "mustard"}))
    one_sided = view(first, compare=str(base)).tab("compare")
    assert card(one_sided, "Calibration").locator("svg.reliability").count() == 1
    assert "no confidence in this run's items" in card(one_sided, "Calibration").inner_text()


def parallel_ctm_run(tmp_path: Path, items: int = 12) -> Path:
    """A MUStARD CTM benchmark scored four items at a time on the scripted model of `tests/ctm_driver.py` (in a
    process of its own: the browser holds this one's event loop). Every third item's STM is sure at once (1
    iteration), the others' never (3), so the items' workspace runs interleave in the trace and differ in length."""
    data = tmp_path / "sarcasm.json"
    data.write_text(json.dumps({f"{n}_1": {"utterance": f"Case {n}: oh, great.", "speaker": "CHANDLER",
                                           "context": ["The car broke down."], "context_speakers": ["ROSS"],
                                           "show": "FRIENDS", "sarcasm": n % 2 == 0} for n in range(items)}))
    done = subprocess.run([sys.executable, "-m", "tests.ctm_driver", "bench", "mustard", "--system", "ctm", "--data",
                           str(data), "--parallel", "4", "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    [run_dir] = list((tmp_path / "runs").iterdir())
    return run_dir


def test_a_parallel_benchmark_shows_one_workspace_run_per_item(view: Any, tmp_path: Path) -> None:
    run_dir = parallel_ctm_run(tmp_path)
    rows = {row["id"]: row for row in map(json.loads, (run_dir / "items.jsonl").read_text().splitlines())}
    assert len(rows) == 12 and {row["iterations"] for row in rows.values()} == {1, 3}
    owners = [json.loads(line).get("item_id") for line in (run_dir / "trace.jsonl").open()]
    started = [owner for owner in owners if owner]
    assert started.index("1_1") < len(started) - 1 - started[::-1].index("0_1")  # the items did interleave
    viewer = view(run_dir)
    panel = viewer.tab("workspace")
    assert "12 workspace runs, one per item (12 items)" in panel.locator(".episode-count").inner_text()
    options = panel.locator("select.episode-select option").all_inner_texts()
    assert sorted(options) == sorted(f"item {item} ({row['iterations']} iterations)" for item, row in rows.items())
    panel.locator("select.episode-select").select_option(label="item 4_1 (3 iterations)")
    assert panel.locator("button.iter").count() == 3
    assert "case 4: " in panel.locator(".iteration").inner_text()  # only item 4's chunks
    assert "case 5: " not in panel.inner_text()
    viewer.shot("workspace-per-item")


def test_the_overview_shows_the_report_as_tables_and_plots(view: Any, tmp_path: Path) -> None:
    run_dir = parallel_ctm_run(tmp_path)
    viewer = view(run_dir)
    overview = viewer.page.locator("#panel-overview")
    assert overview.locator("pre.json").count() == 0  # nothing of the result or the report as raw JSON
    metrics = card(overview, "Metrics")
    assert re.search(r"accuracy\t50(\.0)?\n", metrics.inner_text())
    assert metrics.locator("table table", has_text="gold \\ predicted").count() == 1  # the confusion matrix
    assert "ctm" in card(overview, "MUStARD (text)").inner_text()
    viewer.shot("overview-report")

    games = tmp_path / "games"
    with Run(games, command="bench", config={"benchmark": "alfworld", "system": "react", "model": "scripted"}) as run:
        report = {"benchmark": "ALFWorld", "system": "react", "model": "scripted", "metrics": {
            "success_rate": 50.0, "games": 4, "decided": {"won": 2, "lost": 2},
            "pick_and_place_simple_success_rate": 100.0, "pick_and_place_simple_games": 2,
            "look_at_obj_in_light_success_rate": 0.0, "look_at_obj_in_light_games": 2}, "costs": {"calls_per_item": 3}}
        (games / "report.json").write_text(json.dumps(report))
        run.finish({"report": report})
    viewer = view(games)
    overview = viewer.page.locator("#panel-overview")
    bars = overview.locator("svg.rates rect.rate")
    assert [bars.nth(i).get_attribute("data-group") for i in range(bars.count())] == [
        "pick_and_place_simple", "look_at_obj_in_light"]
    assert "100 % (2)" in overview.locator("svg.rates").text_content()
    assert card(overview, "Metrics").locator("table.nested", has_text="won").count() == 1
    assert overview.locator("pre.json").count() == 0
    viewer.shot("overview-success-per-type")


def test_the_live_view_reads_past_a_line_nested_too_deeply_and_counts_events_as_the_page_does(
        tmp_path: Path) -> None:
    from noosphere.viewer.live import LiveRun

    (tmp_path / "trace.jsonl").write_text("".join(line + "\n" for line in (
        json.dumps({"kind": "run_started", "ts": 1.0}), "[" * 100_000 + "]" * 100_000, '{"not": "an event"}',
        json.dumps({"kind": "human_asked", "ts": 2.0, "question": "q1", "member": "alice", "prompt": "ok?",
                    "fields": [], "timeout_s": 60}))))
    live = LiveRun(tmp_path)
    state = live.state()
    assert [q["question"] for q in state["waiting"]] == ["q1"]
    assert state["events"] == len(load_bundle(tmp_path)["events"]) == 2


def test_a_run_folder_moved_while_it_is_served_is_answered_410_not_a_dropped_connection(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "workspace"
    shutil.copytree(RUNS / "workspace", run)
    server = make_server(run, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        run.rename(tmp_path / "moved")
        with pytest.raises(urllib.error.HTTPError, match="410") as gone:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert "does not exist" in gone.value.read().decode()
    finally:
        server.shutdown()
