"""The docs site's generated results page: a suite README's links to files beside it become repository paths (the
site holds the README's text, not the files; a relative figure link failed the strict build)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import load_script

GEN = load_script(Path(__file__).resolve().parent.parent / "docs" / "gen_pages.py")


def test_relative_links_of_a_suite_readme_become_repository_paths() -> None:
    text = ("![coverage after each action](coverage.png) and [the report](run/report.md), "
            "[run/items.jsonl](run/items.jsonl), [the site](https://example.com) and [below](#table)")
    out = GEN._relinked(text, "embodied")
    assert "coverage after each action (`benchmarks/results/embodied/coverage.png`)" in out
    assert "the report (`benchmarks/results/embodied/run/report.md`)" in out
    assert "`benchmarks/results/embodied/run/items.jsonl`" in out and "](run/items.jsonl)" not in out
    assert "[the site](https://example.com)" in out and "[below](#table)" in out
    assert "](coverage.png)" not in out
    sibling = GEN._relinked("[see](../calibration/README.md)", "bfcl")
    assert "see (`benchmarks/results/calibration/README.md`)" in sibling


def test_the_results_page_has_no_relative_file_link() -> None:
    page = GEN.results_page()
    assert "](coverage.png)" not in page and "benchmarks/results/embodied/coverage.png" in page
    # the map of the issues' figures comes first, its links into the suites as repository paths
    assert page.index("## Results: where each figure") < page.index("## MUStARD")
    assert "(`benchmarks/results/signal/README.md`)" in page and "](signal/README.md)" not in page


def test_every_event_module_has_a_section_of_its_own() -> None:
    assert GEN._section("noosphere.envs.web_events") == "Web agents (MiniWoB++)"
    assert GEN._section("noosphere.human.events") == "People in a society"
    assert GEN._section("noosphere.serve.events") == "Serving over HTTP"
    assert GEN._section("noosphere.bench.remote") == "Cluster (Ray)"  # the longest prefix wins over noosphere.bench
    assert GEN._section("noosphere.bench.runner") == "Benchmarks"
    assert GEN._section("noosphere.workspaces") == "Other"


def test_a_field_declared_by_a_base_event_keeps_its_note() -> None:
    from noosphere.human.events import HumanAsked
    from noosphere.society.events import MemberSpoke

    assert "mindstorm" in GEN._field_notes(MemberSpoke)["phase"]
    notes = GEN._field_notes(HumanAsked)
    assert "same id in every session" in notes["question"] and "free-text" in notes["fields"]


def test_every_event_kind_has_a_docstring_of_its_own() -> None:
    """The catalogue describes each kind by its class's own docstring; one inherited from a base (or none) says
    nothing about the event."""
    GEN.import_everything()
    from noosphere.trace import Event

    undocumented = sorted(f"{kind} ({cls.__module__}.{cls.__name__})" for kind, cls in Event.registry.items()
                          if not (isinstance(doc := cls.__dict__.get("__doc__"), str) and doc.strip()))
    assert not undocumented, f"event kinds without a docstring of their own: {', '.join(undocumented)}"


def test_a_society_run_is_reproduced_with_every_setting_it_changed() -> None:
    """`--vote every --set editor=null --set until_consensus=true --offset 50`: the command the results page shows
    for a run holds each of them (it kept only standing votes and ballot summaries)."""
    from noosphere.society.config import load_society_spec

    gen = GEN
    file = Path(__file__).resolve().parent.parent / "examples" / "societies" / "debate-solvers.toml"
    spec = load_society_spec(file).model_dump(mode="json")
    saved = {**spec, "editor": None, "vote": "every", "until_consensus": True, "rounds": 1}
    command = gen._reproduce({"benchmark": "gsm8k", "system": "society", "society_file": str(file),
                              "society": saved, "offset": 50, "limit": 100, "model": "local:m"})
    assert command == ("noosphere bench gsm8k --system society --society examples/societies/debate-solvers.toml "
                       "--rounds 1 --vote every --set until_consensus=true --set editor=null --offset 50 "
                       "--limit 100 --model local:m")
    assert "--weights sequence" in gen._reproduce({"benchmark": "gsm8k", "system": "best-of-n", "n": 6,
                                                   "weights": "sequence"})
    programs = gen._reproduce({"benchmark": "gsm8k", "system": "best-of-n", "n": 6, "form": "program"})
    assert "--form program" in programs
    assert "--form" not in gen._reproduce({"benchmark": "gsm8k", "system": "best-of-n", "n": 6, "form": "statement"})
