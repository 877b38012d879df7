"""How long the run viewer takes to open a large trace, in Chromium: a figure, not a test's pass mark.

A synthetic CTM benchmark run of items x iterations x calls model calls (10,000 by default: 100 items, 2
iterations, 50 calls) is written to a temporary folder, rendered with `noosphere report`, and opened in
Chromium (Debian's /usr/bin/chromium or NOOSPHERE_CHROMIUM, else Playwright's download) `--trials` times.
Each trial times the page from navigation until it says it is ready (`body[data-ready]`), then opening
the timeline down to one iteration's 50 calls. The browser tests check what the page shows on the same run
(`tests/test_viewer.py`); wall-clock time depends on the machine and its load, so it is measured here.
No model is loaded. The last line is `load_s=<median seconds to a ready page>`.

    python benchmarks/viewer_load.py [--items 100] [--iterations 2] [--calls 50] [--trials 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from noosphere.bench.runner import BenchItemFinished, BenchItemStarted
from noosphere.cli import make_app, run
from noosphere.runs import Run
from noosphere.trace import Event, ModelCall, OutputRepaired

CHROMIUM = Path(os.environ.get("NOOSPHERE_CHROMIUM", "/usr/bin/chromium"))


def write_big_run(folder: Path, items: int = 100, iterations: int = 2, calls: int = 50) -> Path:
    """A CTM benchmark run of items * iterations * calls model calls (10,000 by default)."""
    system = "You are a sensory processor of a global workspace. " * 6
    with Run(folder, command="bench", config={"benchmark": "mustard", "system": "ctm", "model": "scripted"}) as run:
        emit = run.trace.emit
        rows = []
        for item in range(items):
            item_id = f"item-{item:04d}"
            emit(BenchItemStarted(item_id=item_id))
            for iteration in range(1, iterations + 1):
                emit(Event(kind="ws_iteration", iteration=iteration, tick=iteration))
                for call in range(calls):
                    agent = f"p{call % 5}"
                    prompt = f"Item {item}, iteration {iteration}: is the speaker sarcastic? " * 8
                    response = json.dumps({"response": f"answer {call} <b>not bold</b>", "relevance": 0.5} | {
                        "additional_question": "what does the tone say?" * 3})
                    emit(ModelCall(model="scripted", agent=agent, messages=[{"role": "system", "content": system},
                                                                           {"role": "user", "content": prompt}],
                                   response=response, prompt_tokens=180, completion_tokens=40, latency_s=0.2,
                                   cost_usd=0.0001))
                    if call % 97 == 0:
                        emit(OutputRepaired(model="scripted", agent=agent, attempt=1, repair="json_repaired",
                                            detail="closed a brace"))
                    if call < 5:
                        emit(Event(kind="ws_chunk", iteration=iteration, phase="chunk", processor=agent, tick=1,
                                   gist=f"gist {call}", question="", relevance=0.5, confidence=0.5, surprise=0.1,
                                   weight=1.0 + call / 10))
                emit(Event(kind="ws_competition", iteration=iteration, method="argmax", winner="p4",
                           weights={f"p{i}": 1.0 + i / 10 for i in range(5)}))
                emit(Event(kind="ws_stm", iteration=iteration, winner="p4", answer="sarcastic", confidence=0.5,
                           threshold=0.8, stop=False))
                emit(Event(kind="ws_link", iteration=iteration, a="p4", b=f"p{iteration}", change="created",
                           weight=1.0))
            correct = item % 3 != 0
            emit(BenchItemFinished(item_id=item_id, prediction="sarcastic", gold="sarcastic" if correct else "sincere",
                                   correct=correct, calls=iterations * calls, tokens=220 * iterations * calls,
                                   seconds=20.0))
            rows.append({"id": item_id, "prediction": "sarcastic", "gold": "sarcastic" if correct else "sincere",
                         "correct": correct, "calls": iterations * calls, "tokens": 220 * iterations * calls,
                         "seconds": 20.0, "error": None})
        (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (folder / "report.json").write_text(json.dumps({"benchmark": "MUStARD", "system": "ctm", "metrics": {
            "accuracy": 66.0}, "costs": {"calls_per_item": 100.0}}))
        run.finish({"accuracy": 66.0})
    return folder


def time_page(browser, page_file: Path) -> tuple[float, float, float]:
    """(seconds to a ready page, the page's own ms from navigation to ready, seconds to one iteration's calls)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        started = time.perf_counter()
        page.goto(page_file.as_uri())
        page.wait_for_selector("body[data-ready]", timeout=120_000)
        load_s = time.perf_counter() - started
        ready_ms = float(page.evaluate("window.__viewerReadyMs"))
        started = time.perf_counter()
        page.click("button.tab[data-tab=timeline]")
        panel = page.locator("#panel-timeline")
        panel.locator("details.segment summary").nth(3).click()
        panel.locator("details.segment details.segment summary").nth(1).click()
        panel.locator("details.call").first.wait_for(timeout=120_000)
        timeline_s = time.perf_counter() - started
    finally:
        page.close()
    if errors:
        raise SystemExit(f"viewer_load: the page raised: {errors}")
    return load_s, ready_ms, timeline_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("viewer_load: needs playwright: pip install -e '.[test]'") from None

    with tempfile.TemporaryDirectory() as folder:
        big = write_big_run(Path(folder) / "big", args.items, args.iterations, args.calls)
        page_file = Path(folder) / "big.html"
        if run(make_app(), ["report", str(big), "-o", str(page_file)]) != 0:
            raise SystemExit("viewer_load: noosphere report failed")
        trace_mb = (big / "trace.jsonl").stat().st_size / 1e6
        print(f"model_calls={args.items * args.iterations * args.calls} trace_mb={trace_mb:.1f} "
              f"page_mb={page_file.stat().st_size / 1e6:.1f}")
        with sync_playwright() as playwright:
            if CHROMIUM.exists():
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
            elif Path(playwright.chromium.executable_path).exists():
                browser = playwright.chromium.launch()
            else:
                raise SystemExit(f"viewer_load: needs Chromium: no {CHROMIUM} (apt-get install chromium) and no "
                                 "Playwright download (python -m playwright install chromium)")
            loads = []
            for trial in range(1, args.trials + 1):
                load_s, ready_ms, timeline_s = time_page(browser, page_file)
                loads.append(load_s)
                print(f"trial={trial} load_s={load_s:.3f} ready_after_navigation_s={ready_ms / 1000:.3f} "
                      f"timeline_s={timeline_s:.3f}")
            browser.close()
    print(f"load_s={statistics.median(loads):.3f}")


if __name__ == "__main__":
    main()
