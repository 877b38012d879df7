"""GSM8K on the scripted model: number matching, the three systems, equal-cost best-of-N, resume."""

from __future__ import annotations

import importlib.util
import json
import math
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench.answer_spread import answer_spread
from noosphere.bench.gsm8k import load_gsm8k, normalise_number, planned_calls
from noosphere.errors import CapabilityError
from noosphere.llm import Model, ScriptedBackend
from noosphere.observation import Observation
from noosphere.society.config import build_society, load_society_spec
from noosphere.tools.bwrap import bwrap_path
from tests.helpers import by_agent, opener_for, scripted
from tests.test_cli import invoke

EXAMPLES = Path(__file__).parent.parent / "examples" / "societies"
PROBLEMS = [{"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3+4=7\n#### 7"},
            {"question": "A book costs $1,200 and is halved. Price?", "answer": "1200/2=600\n#### 600"}]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "gsm.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in PROBLEMS) + "\n")
    return path


@pytest.mark.parametrize(("text", "number"), [("The answer is 1,200.", "1200"), ("$7.50 each", "7.5"),
                                              ("12.0", "12"), ("-3 degrees", "-3"), ("none", None),
                                              ("first 5 then 8", "8")])
def test_the_final_number_is_normalised(text: str, number: str | None) -> None:
    assert normalise_number(text) == number


def test_loader_keeps_file_order_and_reads_the_gold_number(data: Path) -> None:
    items = load_gsm8k(data)
    assert [i.gold for i in items] == ["7", "600"] and items[0].id == "gsm8k-0000"
    assert len(load_gsm8k(data, limit=1)) == 1


def standing_answers_script() -> Any:
    spec = importlib.util.spec_from_file_location("standing_answers", EXAMPLES.parent.parent / "benchmarks" /
                                                  "standing_answers.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_answer_spread_shows_where_a_decision_lost() -> None:
    rows = [{"gold": "7", "correct": False, "standing": {"a": "7", "b": "7", "c": "8"},  # overruled a right majority
             "ballots": {"a": "7", "b": "8", "c": "8"}},  # b left its own answer
            {"gold": "7", "correct": True, "standing": {"a": "7", "b": "8", "c": None},  # right out of a tie
             "ballots": {"a": "7", "c": None}},  # c voted for no number: that is not keeping its own answer
            {"gold": "7", "correct": False, "standing": {"a": "9", "b": "8", "c": "8"}},  # nobody had it
            {"gold": "5", "correct": True, "votes": {"5": 3, "6": 1}, "no_number": 1},  # best-of-N's samples alike
            {"gold": "5", "correct": True}]  # records no answers: left out
    spread = answer_spread(rows)  # an answer without a number is a wrong one: 6 of 14 answers right
    assert spread == {"answer_accuracy": 42.86, "gold_among_answers": 75.0, "plurality_accuracy": 50.0,
                      "decided_against_right_plurality": 1, "right_without_plurality": 1, "rows_with_answers": 4,
                      "ballots_cast": 5, "ballots_for_own_answer": 3}
    assert answer_spread([{"gold": "1", "correct": True}]) == {}


def test_the_answer_spread_of_a_vote_over_every_answer_is_over_every_answer() -> None:
    """`vote: every` chose among all the answers the members gave, not only their last: the right 7 of the mission
    was among them (and won), though every member then stood by 8."""
    rounds = [("7", "8", "8"), ("8", "8", "8")]
    answers = [{"member": m, "round": r, "number": n, "token_probability": 0.5}
               for r, numbers in enumerate(rounds) for m, n in zip("abc", numbers, strict=True)]
    row = {"gold": "7", "correct": True, "standing": {"a": "8", "b": "8", "c": "8"}, "answers": answers}
    spread = answer_spread([row])
    assert (spread["answer_accuracy"], spread["gold_among_answers"]) == (16.67, 100.0)
    assert (spread["plurality_accuracy"], spread["right_without_plurality"]) == (0.0, 1)


def test_planned_calls_bound_a_societys_calls_before_it_has_run() -> None:
    monarchy = load_society_spec(EXAMPLES / "monarchy.yaml")
    assert planned_calls(monarchy) == 3 + 2 * (1 + 3) + 1 + 1
    democracy = load_society_spec(EXAMPLES / "democracy.yaml")
    assert planned_calls(democracy) == 3 + 2 * (1 + 3) + 1 + 3 + 3
    counted = democracy.model_copy(update={"vote": "standing"})
    assert planned_calls(counted) == 3 + 2 * (1 + 3) + 1 + 3  # the standing answers are counted, not asked for


def _any_form(request: Any) -> dict[str, Any]:
    """A reply to whatever form is asked, each agent with its own answer (so that members disagree)."""
    properties = (request.json_schema or {}).get("properties", {})
    fields = set(properties)
    if "question" in fields:
        return {"question": "Which step is weakest?"}
    if "choice" in fields:
        return {"reasoning": "r", "choice": properties["choice"].get("enum", ["A"])[0]}
    if "ranking" in fields:
        return {"reasoning": "r", "ranking": ["A"]}
    reply = {"reasoning": "r", "answer": str(len(request.agent or ""))}
    return {**reply, "summary": "s"} if "summary" in fields else reply


@pytest.mark.parametrize("name", ["hierarchy.yaml", "artist-critic.yaml", "monarchy.yaml", "debate.toml"])
def test_planned_calls_bound_what_the_society_spends_when_sub_societies_speak(name: str) -> None:
    spec = load_society_spec(EXAMPLES / name)
    backend = ScriptedBackend(_any_form)
    society = build_society(spec, lambda model_id: Model(backend), "scripted")
    views = Observation.of({"first": "5 apples", "second": "7 pears"}) if name == "debate.toml" else None
    society.run_sync("How many fruits?", views)
    assert 0.6 * planned_calls(spec) <= len(backend.history) <= planned_calls(spec)


def test_planned_calls_of_a_role_play_is_its_message_cap() -> None:
    assert planned_calls(load_society_spec(EXAMPLES / "roleplay.yaml")) == 20 + 1  # the specifier speaks first


def said(answer: str) -> str:
    return json.dumps({"reasoning": "add them up", "answer": answer})



def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]


def one_problem(society: str, options: list[str], script: Any, data: Path, out: Path) -> tuple[Path, dict[str, Any]]:
    """A society bench run on the first problem into a new folder under `out`: the folder and its one row."""
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / society), *options,
                           "--data", str(data), "--limit", "1", "--out", str(out), "--no-cache", "--quiet"],
                          opener_for(script))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    [row] = rows(run_dir)
    return run_dir, row


def test_base_and_best_of_n_score_exact_numbers_with_calls_per_item(data: Path, tmp_path: Path) -> None:
    # Right on the apples, wrong on the book.
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "b"),
                             "--no-cache", "--quiet"], opener_for([said("7"), said("300")]))
    assert code == 0, err
    [run_dir] = list((tmp_path / "b").iterdir())
    assert [r["correct"] for r in rows(run_dir)] == [True, False] and all(r["calls"] == 1 for r in rows(run_dir))
    assert json.loads((run_dir / "report.json").read_text())["metrics"]["accuracy"] == 50.0

    opener = opener_for(by_agent({f"sample-{i}": [said("7"), said("300" if i < 7 else "600")] for i in range(13)}))
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--society", str(EXAMPLES / "monarchy.yaml"),
                           "--data", str(data), "--out", str(tmp_path / "n"), "--no-cache", "--quiet"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "n").iterdir())
    assert all(r["calls"] == 13 for r in rows(run_dir))
    assert {r.settings.temperature for r in opener.backend.history} == {0.7}
    assert len({r.settings.seed for r in opener.backend.history}) == 13
    assert [r["correct"] for r in rows(run_dir)] == [True, False]  # 7 of 13 samples said 300


def test_a_run_budget_stops_the_bench_leaving_the_rest_to_a_resume_with_more(data: Path, tmp_path: Path) -> None:
    opener = opener_for([said("7"), said("600")])
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "runs"),
                           "--no-cache", "--quiet", "--budget", "calls=1,tokens=100000"], opener)
    assert code != 0 and "calls budget of 1 exceeded" in err
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert [r["id"] for r in rows(run_dir)] == ["gsm8k-0000"]  # the second problem is not scored as an error
    assert json.loads((run_dir / "result.json").read_text())["status"] == "budget"
    assert "partial: budget spent" in (run_dir / "report.md").read_text()
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--no-cache", "--quiet", "--budget", "calls=2"],
                          opener)
    assert code == 0, err
    assert [r["correct"] for r in rows(run_dir)] == [True, True]
    # the new limit replaces the saved one; the others stay, and all are kept for later resumes
    assert json.loads((run_dir / "config.json").read_text())["budget"] == {"max_calls": 2, "max_tokens": 100000}


@pytest.mark.parametrize(("budget", "message"), [("cals=3", "Did you mean calls"), ("calls=many", "a number"),
                                                  ("calls=1.5", "whole number"), ("cost=-1", "positive"),
                                                  ("cost=nan", "positive"), ("calls=1,calls=2", "twice")])
def test_a_malformed_budget_is_a_usage_error(data: Path, tmp_path: Path, budget: str, message: str) -> None:
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "runs"),
                           "--budget", budget])
    assert code == 2 and message in err and not (tmp_path / "runs").exists()  # refused before any run folder


def test_society_system_runs_the_declared_society_and_resumes(data: Path, tmp_path: Path) -> None:
    vote = json.dumps({"reasoning": "r", "choice": "A"})
    script = by_agent({"planner": [said("7"), said("7"), vote], "calculator": [said("7"), said("7"), vote],
                       "checker": [said("8"), said("8"), vote],
                       "organizer": [json.dumps({"question": "Check?"}), json.dumps({"summary": "s", "answer": "7"})]})

    args = ["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "democracy.yaml"), "--rounds", "1",
            "--data", str(data), "--out", str(tmp_path / "runs"), "--no-cache", "--quiet", "--limit", "1"]
    code, _, err = invoke(args, opener_for(script))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = rows(run_dir)
    # The checker changes to the majority's 7 under the right to change, so one option is left and no
    # ballots need to be asked for: mission 3, one round 1 + 3, changes 3, summary 1.
    assert row["correct"] and row["decided_by"] == "unanimous" and row["calls"] == 3 + (1 + 3) + 3 + 1
    assert row["standing"] == {"planner": "7", "calculator": "7", "checker": "7"}  # the checker changed to 7
    report = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert (report["answer_accuracy"], report["gold_among_answers"], report["rows_with_answers"]) == (100.0, 100.0, 1)
    assert report["decided_by"] == {"unanimous": 1}  # who decided, so that votes that all failed would show
    # a row scored before rows recorded it gets the same standing answers back from the run's trace
    items = run_dir / "items.jsonl"
    items.write_text(json.dumps({k: v for k, v in row.items() if k != "standing"}) + "\n")
    assert standing_answers_script().backfill(run_dir) == 1 and rows(run_dir) == [row]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["society"]["rounds"] == 1
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--quiet", "--no-cache"], opener_for([]))
    assert code == 0, err
    assert len(rows(run_dir)) == 1


def test_a_society_file_given_relative_is_saved_whole_and_taken_again_from_another_folder(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was saved as typed: a resume from another folder with the same file was refused as another society."""
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "democracy.yaml").write_text((EXAMPLES / "democracy.yaml").read_text())
    monkeypatch.chdir(tmp_path / "here")
    vote = json.dumps({"reasoning": "r", "choice": "A"})
    script = by_agent({"planner": [said("7")] * 2 + [vote], "calculator": [said("7")] * 2 + [vote],
                       "checker": [said("7")] * 2 + [vote],
                       "organizer": [json.dumps({"question": "Check?"}), json.dumps({"summary": "s", "answer": "7"})]})
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", "democracy.yaml", "--rounds", "1",
                           "--data", str(data), "--out", str(tmp_path / "runs"), "--no-cache", "--quiet", "--limit",
                           "1"], opener_for(script))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    saved = json.loads((run_dir / "config.json").read_text())["society_file"]
    assert saved == str(tmp_path / "here" / "democracy.yaml")
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--society", "here/democracy.yaml", "--quiet",
                           "--no-cache"], opener_for([]))
    assert code == 0 and "--society" not in err, err


@pytest.mark.parametrize(("society", "said"), [
    ({"organisation": "senate"}, "field 'society.organisation': Input should be"),
    ("debate.toml", "field 'society': Input should be a valid dictionary"),
    ({"organisation": "debate", "members": []}, "field 'society.members': a debate needs at least one member"),
    ({"organisation": "economy", "members": [{"name": "a", "role": "r"}]}, "field 'society.arbiter': an economy needs"),
], ids=["organisation", "not a society", "no members", "no staff"])
def test_a_run_whose_saved_society_was_edited_into_nonsense_is_refused_and_left_as_it_was(
        data: Path, tmp_path: Path, society: Any, said: str) -> None:
    """Its society was read when the problems were prepared, after the run was reopened: a ValidationError traceback,
    and the run's result rewritten as failed."""
    run_dir, _ = one_problem("debate.toml", ["--rounds", "1"], [], data, tmp_path / "runs")
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "society": society}))
    (run_dir / "items.jsonl").write_text("")  # the problem is left to score
    before = {path.name: path.read_bytes() for path in run_dir.iterdir()}
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--quiet", "--no-cache"], opener_for([]))
    assert code == 2 and said in err and f"{run_dir / 'config.json'}:" in err
    assert {path.name: path.read_bytes() for path in run_dir.iterdir()} == before


def test_rights_override_takes_the_vote_away_and_the_leader_decides(data: Path, tmp_path: Path) -> None:
    script = by_agent({"planner": [said("7")], "calculator": [said("7")], "checker": [said("8")],
                       "organizer": [json.dumps({"summary": "mostly 7", "answer": "7"})], "leader": [said("8")]})
    _, row = one_problem("democracy.yaml", ["--rounds", "0", "--rights", "know"], script, data, tmp_path / "runs")
    assert row["decided_by"] == "leader" and row["prediction"] == "8" and not row["correct"]
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "democracy.yaml"),
                           "--rights", "know,vote", "--data", str(data), "--out", str(tmp_path / "x")])
    assert code == 2 and "'know', 'change' or 'execute'" in err


def test_vote_override_counts_standing_answers_and_is_refused_where_nobody_votes(data: Path, tmp_path: Path) -> None:
    script = by_agent({"planner": [said("7")], "calculator": [said("8")], "checker": [said("7")],
                       "organizer": [json.dumps({"summary": "mostly 8", "answer": "8"})]})
    _, row = one_problem("democracy.yaml", ["--rounds", "0", "--rights", "know,execute", "--vote", "standing"], script,
                         data, tmp_path / "runs")
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("count", "7", 3 + 1)
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "monarchy.yaml"),
                           "--vote", "standing", "--data", str(data), "--out", str(tmp_path / "x")])
    assert code == 2 and "where they vote" in err and not (tmp_path / "x").exists()


def test_a_vote_by_sequence_probability_records_what_each_standing_answer_weighed(data: Path,
                                                                                  tmp_path: Path) -> None:
    """`--vote sequence`: the members' replies carry their own probability; the likely 7 outweighs two unlikely
    8s at the plain count's calls, and the row keeps each weight for `cisc_table.py` to recount both votes."""
    import math

    from noosphere.llm import Capabilities, Reply, Usage

    def likely(number: str, logprob: float) -> Reply:
        return Reply(json.dumps({"reasoning": "r", "answer": number}), usage=Usage(10, 2), logprob=logprob)

    script = by_agent({"planner": [likely("7", -0.2)], "calculator": [likely("8", -4.0)],
                       "checker": [likely("8", -4.0)], "organizer": [json.dumps({"summary": "8", "answer": "8"})]})
    backend = ScriptedBackend(script, capabilities=Capabilities(json_schema=True, logprobs=True))
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "democracy.yaml"),
                           "--rounds", "0", "--rights", "know,execute", "--vote", "sequence", "--data", str(data),
                           "--limit", "1", "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = rows(run_dir)
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("sequence", "7", 3 + 1)
    assert row["standing"] == {"planner": "7", "calculator": "8", "checker": "8"}
    assert row["standing_probability"] == pytest.approx({"planner": math.exp(-0.1), "calculator": math.exp(-2.0),
                                                         "checker": math.exp(-2.0)})
    cannot = ScriptedBackend(script, capabilities=Capabilities(json_schema=True))
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "democracy.yaml"),
                           "--rights", "know,execute", "--vote", "sequence", "--data", str(data),
                           "--out", str(tmp_path / "cannot"), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(cannot, **kwargs))
    assert code == 2 and "vote='sequence'" in err and cannot.history == []
    assert not (tmp_path / "cannot").exists() or not any((tmp_path / "cannot").iterdir())


def test_a_vote_records_each_ballot_beside_the_voters_own_answer(data: Path, tmp_path: Path) -> None:
    vote_for = {label: json.dumps({"reasoning": "r", "choice": label}) for label in "AB"}  # A is 7, B is 8
    script = by_agent({"planner": [said("7"), vote_for["A"]], "calculator": [said("8"), vote_for["A"]],
                       "checker": [said("7"), vote_for["A"]],
                       "organizer": [json.dumps({"summary": "mostly 7", "answer": "7"})]})
    run_dir, row = one_problem("democracy.yaml", ["--rounds", "0", "--rights", "know,execute"], script, data,
                               tmp_path / "runs")
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("vote", "7", 3 + 1 + 3)
    assert row["ballots"] == {"planner": "7", "calculator": "7", "checker": "7"}  # the calculator left its 8
    report = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert (report["ballots_cast"], report["ballots_for_own_answer"]) == (3, 2)
    # a row scored before rows recorded ballots gets them back from the run's trace, cast ballots only
    (run_dir / "items.jsonl").write_text(json.dumps({k: v for k, v in row.items() if k != "ballots"}) + "\n")
    assert standing_answers_script().backfill(run_dir) == 1 and rows(run_dir) == [row]
    assert standing_answers_script().backfill(run_dir) == 0  # nothing left to add


def test_a_resumed_economy_goes_on_from_the_ledger_its_last_problem_left(data: Path, tmp_path: Path) -> None:
    def reply(request: Any) -> str:  # nobody hires; everyone answers 7, right for the first problem only
        return json.dumps({"hire": False}) if (request.json_schema or {}).get("title") == "HireDecision" else said("7")

    # Rich from the start: after its first round's rent each founder spawns a variant, so the ledger and the
    # members a resume must restore differ from the file's.
    args = ["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "economy.yaml"), "--rounds", "1",
            "--set", "start_balance=20", "--set", "spawn_above=15", "--data", str(data), "--no-cache", "--quiet"]
    code, _, err = invoke([*args, "--out", str(tmp_path / "whole")], opener_for(reply))
    assert code == 0, err
    [whole] = list((tmp_path / "whole").iterdir())
    first, second = rows(whole)
    assert sorted(first["ledger"]["balances"]) == ["calculator", "calculator.1", "checker", "checker.1", "planner",
                                                   "planner.1"]
    items = whole / "items.jsonl"  # the same run, killed after its first problem
    items.write_text(items.read_text().splitlines()[0] + "\n")
    before = (whole / "result.json").read_text()
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(whole), "--quiet", "--no-cache", "--parallel", "2"],
                          opener_for(reply))
    assert code == 2 and "--parallel 1" in err  # one ledger cannot serve two problems at once
    assert (whole / "result.json").read_text() == before  # refused before the run was opened
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(whole), "--quiet", "--no-cache"], opener_for(reply))
    assert code == 0, err
    timing = ("seconds", "started", "finished")
    resumed = rows(whole)[1]
    assert {k: v for k, v in resumed.items() if k not in timing} == {k: v for k, v in second.items() if k not in timing}
    assert len(resumed["standing"]) == 6 and len(resumed["ledger"]["balances"]) == 9  # founders spawned again


def test_set_overrides_any_society_setting_so_a_debate_can_do_without_its_editor(data: Path, tmp_path: Path) -> None:
    script = by_agent({"planner": [said("7")], "calculator": [said("8")], "checker": [said("7")]})
    society = ["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "debate-solvers.toml"),
               "--data", str(data), "--limit", "1", "--no-cache", "--quiet"]
    code, _, err = invoke([*society, "--set", "editor=null", "--set", "rounds=0", "--vote", "standing",
                           "--out", str(tmp_path / "runs")], opener_for(script))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = rows(run_dir)
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("count", "7", 3)
    assert json.loads((run_dir / "config.json").read_text())["society"]["editor"] is None
    for setting, message in (("edtor=null", "Did you mean editor"), ("rounds=many", "invalid --set rounds"),
                             ("rounds", "KEY=VALUE")):
        code, _, err = invoke([*society, "--set", setting, "--out", str(tmp_path / "x")])
        assert code == 2 and message in err and not (tmp_path / "x").exists()


def test_best_of_n_can_match_the_calls_a_society_run_measured(data: Path, tmp_path: Path) -> None:
    society_run = tmp_path / "monarchy-run"
    society_run.mkdir()
    (society_run / "config.json").write_text("{}")
    (society_run / "items.jsonl").write_text('{"id": "a", "calls": 10}\n{"id": "b", "calls": 13}\n')
    opener = opener_for(by_agent({f"sample-{i}": [said("7"), said("600")] for i in range(12)}))
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--match-run", str(society_run), "--data",
                           str(data), "--out", str(tmp_path / "n"), "--no-cache", "--quiet"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "n").iterdir())
    assert all(r["calls"] == 12 for r in rows(run_dir))  # round(11.5)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["n"] == 12 and config["matched_run"] == str(society_run)
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--match-run", str(tmp_path / "nowhere"),
                           "--data", str(data), "--out", str(tmp_path / "m"), "--quiet"], opener)
    assert code == 2 and "not a run folder (no config.json)" in err  # it said "holds no scored problems"
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--match-run", str(tmp_path / "empty"),
                           "--data", str(data), "--out", str(tmp_path / "m"), "--quiet"], opener)
    assert code == 2 and "no scored problems" in err


def test_a_spent_budget_stops_best_of_n_instead_of_passing_for_failed_samples() -> None:
    import asyncio

    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n
    from noosphere.errors import BudgetExceededError
    from noosphere.llm import Budget, UsageLedger

    model = Model(ScriptedBackend([said("7")] * 4), ledger=UsageLedger(Budget(max_calls=2)))
    with pytest.raises(BudgetExceededError):
        asyncio.run(solve_best_of_n(model, 4, GsmItem("q", "3 + 4?", "7")))


def test_weighted_best_of_n_lets_a_believed_minority_outvote_a_doubted_majority() -> None:
    """CISC: two samples say 8 but the model doubts them; one says 7 and the model believes it."""
    import asyncio

    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n
    from noosphere.llm.types import ScoreRequest

    answers = {"sample-0": "8", "sample-1": "7", "sample-2": "8"}

    def reply(request: Any) -> Any:
        return {"reasoning": "3 + 4 = 7", "answer": answers[request.agent]}

    def scorer(request: ScoreRequest) -> dict[str, float]:
        solution = request.messages[-2].content
        return {"Yes": 0.9, "No": 0.1} if '"7"' in solution else {"Yes": 0.3, "No": 0.7}

    model, backend, trace = scripted(reply, scorer=scorer)
    scored = asyncio.run(solve_best_of_n(model, 3, GsmItem("q", "3 + 4?", "7"), weights="p-true"))
    assert scored.prediction == "7" and scored.correct
    assert scored.detail["plain"] == "8" and scored.detail["votes"] == {"8": 2, "7": 1}
    assert scored.confidence == pytest.approx(0.9 / 1.5)
    assert [s["number"] for s in scored.detail["samples"]] == ["8", "7", "8"]
    assert len(backend.score_history) == 3 and len(trace.of_kind("options_scored")) == 3
    plain = asyncio.run(solve_best_of_n(scripted(reply, scorer=scorer)[0], 3, GsmItem("q", "3 + 4?", "7")))
    assert plain.prediction == "8"


def test_a_failed_judge_leaves_its_samples_number_in_the_plain_vote() -> None:
    import asyncio

    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n
    from noosphere.errors import ModelError
    from noosphere.llm.types import ScoreRequest

    answers = {"sample-0": "8", "sample-1": "7", "sample-2": "7"}

    def scorer(request: ScoreRequest) -> dict[str, float]:
        if request.agent == "judge-1":
            raise ModelError("scripted", "the judge is down")
        return {"Yes": 0.6, "No": 0.4}

    model, _, _ = scripted(lambda request: {"reasoning": "3 + 4", "answer": answers[request.agent]}, scorer=scorer)
    scored = asyncio.run(solve_best_of_n(model, 3, GsmItem("q", "3 + 4?", "7"), weights="p-true"))
    assert scored.detail["votes"] == {"8": 1, "7": 2} and scored.detail["plain"] == "7"  # its 7 still counts
    assert scored.detail["failed"] == 0 and scored.detail["unweighed"] == 1
    assert [s["p_true"] for s in scored.detail["samples"]] == [0.6, None, 0.6]


def test_weighted_is_refused_outside_best_of_n(data: Path, tmp_path: Path) -> None:
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--weighted", "--data", str(data),
                           "--out", str(tmp_path / "runs")])
    assert code == 2 and "--weighted" in err and not (tmp_path / "runs").exists()


def test_sequence_weights_come_free_with_the_samples_and_outvote_a_doubted_majority() -> None:
    """CISC with the samples' own probabilities: no scoring call, so plain and weighted are at equal calls."""
    import asyncio

    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n
    from noosphere.llm import Capabilities, Reply, Usage

    answers = {"sample-0": ("8", -6.0), "sample-1": ("7", -0.5), "sample-2": ("8", -5.0)}

    def reply(request: Any) -> Any:
        number, logprob = answers[request.agent]
        assert request.logprobs  # the sample asked for its own log-probability
        return Reply(json.dumps({"reasoning": "3 + 4", "answer": number}), usage=Usage(10, 5), logprob=logprob)

    backend = ScriptedBackend(reply, capabilities=Capabilities(json_schema=True, logprobs=True))
    scored = asyncio.run(solve_best_of_n(Model(backend), 3, GsmItem("q", "3 + 4?", "7"), weights="sequence"))
    assert scored.prediction == "7" and scored.detail["plain"] == "8" and len(backend.history) == 3
    assert backend.score_history == []
    probabilities = [s["token_probability"] for s in scored.detail["samples"]]
    assert probabilities == pytest.approx([math.exp(-6 / 5), math.exp(-0.5 / 5), math.exp(-5 / 5)], abs=1e-6)
    assert scored.confidence == pytest.approx(probabilities[1] / sum(probabilities), abs=1e-4)
    cannot = Model(ScriptedBackend(reply, capabilities=Capabilities(json_schema=True)))
    with pytest.raises(CapabilityError, match="logprobs"):
        asyncio.run(solve_best_of_n(cannot, 3, GsmItem("q", "3 + 4?", "7"), weights="sequence"))


def test_vote_weights_are_checked_before_a_run(data: Path, tmp_path: Path) -> None:
    for args, said in ((["--weights", "sequence", "--system", "base"], "apply to --system best-of-n"),
                       (["--weights", "sequenze", "--system", "best-of-n", "--n", "2"], "sequence"),
                       (["--weighted", "--weights", "sequence", "--system", "best-of-n", "--n", "2"],
                        "--weighted means --weights p-true")):
        code, _, err = invoke(["bench", "gsm8k", *args, "--data", str(data), "--out", str(tmp_path / "runs")])
        assert code == 2 and said in err, err
        assert not (tmp_path / "runs").exists()


def test_weights_a_model_cannot_give_are_refused_before_any_problem_and_leave_no_folder(data: Path,
                                                                                           tmp_path: Path) -> None:
    from noosphere.llm import Capabilities

    backend = ScriptedBackend(lambda request: json.dumps({"reasoning": "3 + 4", "answer": "7"}),
                              capabilities=Capabilities(json_schema=True))
    for weights in ("sequence", "p-true"):
        code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--n", "2", "--weights", weights, "--data",
                               str(data), "--out", str(tmp_path / weights), "--no-cache", "--quiet"],
                              lambda model_id, **kwargs: Model(backend, **kwargs))
        assert code == 2 and "logprobs" in err, err
        assert not (tmp_path / weights).exists() or not any((tmp_path / weights).iterdir())
    assert backend.history == []


def test_a_resume_refuses_society_settings_other_than_the_runs_and_takes_its_own_again(data: Path,
                                                                                       tmp_path: Path) -> None:
    """--rounds, --rights, --vote and --set change the society the run saves whole (no key of their own): on a
    resume another value was ignored silently, and the run's own society played."""
    script = by_agent({"planner": [said("7")], "calculator": [said("8")], "checker": [said("7")]})
    made = ["--set", "editor=null", "--set", "rounds=0", "--vote", "standing"]
    run_dir, _ = one_problem("debate-solvers.toml", made, script, data, tmp_path / "runs")
    before = (run_dir / "result.json").read_text()
    for changed, says in ((["--rounds", "2"], "--rounds 2 (the run has 0)"),
                          (["--vote", "ballot"], "--vote ballot (the run has standing)"),
                          (["--set", "rounds=1"], "--set rounds=1 (the run has rounds=0)"),
                          (["--set", "editor=null", "--rights", "know"], "--rights know (the run has ")):
        opener = opener_for(script)
        code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), *changed, "--quiet", "--no-cache"],
                              opener)
        assert code == 2 and says in err and "keeps the settings it was made with" in err, err
        assert (run_dir / "result.json").read_text() == before and opener.backend.history == []
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--set", "edtor=null", "--quiet"])
    assert code == 2 and "Did you mean editor" in err, err
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), *made, "--rounds", "0", "--quiet",
                           "--no-cache"], opener_for(script))
    assert code == 0, err


def test_a_resume_refuses_another_match_run_or_weighting_and_takes_the_runs_own(data: Path, tmp_path: Path) -> None:
    """The run saves --match-run as its `matched_run`, and --weighted as its `weights`: another on a resume was
    ignored silently (`--weighted` was taken on a run weighted by its sequences)."""
    society_run = tmp_path / "society-run"
    society_run.mkdir()
    (society_run / "config.json").write_text("{}")
    (society_run / "items.jsonl").write_text('{"id": "a", "calls": 2}\n')
    made = ["--system", "best-of-n", "--match-run", str(society_run), "--weights", "sequence", "--data", str(data),
            "--limit", "1"]
    from noosphere.llm import Capabilities, Reply, Usage

    backend = ScriptedBackend(lambda request: Reply(said("7"), usage=Usage(10, 2), logprob=-0.5),
                              capabilities=Capabilities(json_schema=True, logprobs=True))
    opener = partial(Model, backend)
    code, _, err = invoke(["bench", "gsm8k", *made, "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: opener(**kwargs))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    for changed, says in ((["--match-run", str(tmp_path)], f"--match-run {tmp_path} (the run has {society_run})"),
                          (["--weighted"], "--weighted (the run has --weights sequence)")):
        code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), *changed, "--quiet", "--no-cache"])
        assert code == 2 and says in err and "keeps the settings it was made with" in err, err
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), *made, "--no-weighted", "--quiet",
                           "--no-cache"], lambda model_id, **kwargs: opener(**kwargs))
    assert code == 0, err


def program_best_of_n(backend: Any, data: Path, out: Path, n: int) -> Path:
    """`bench gsm8k --form program --weights sequence` with `n` samples on one problem; the run's folder."""
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--n", str(n), "--form", "program", "--weights",
                           "sequence", "--data", str(data), "--limit", "1", "--out", str(out), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    return run_dir


def scored_statement(number: str, logprob: float) -> Any:
    from noosphere.llm import Reply, Usage

    return Reply(json.dumps({"reasoning": "r", "answer": number}), usage=Usage(10, 2), logprob=logprob)


def debate_until_consensus(data: Path, out: Path, script: Any, limit: int = 1) -> dict[str, Any]:
    from noosphere.llm import Capabilities

    backend = ScriptedBackend(script, capabilities=Capabilities(json_schema=True, logprobs=True))
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society",
                           str(EXAMPLES / "debate-solvers.toml"), "--set", "editor=null", "--vote", "every",
                           "--set", "until_consensus=true", "--rounds", "2", "--data", str(data),
                           "--limit", str(limit), "--out", str(out), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    [row] = rows(run_dir)
    return row


def test_a_debate_until_consensus_counts_every_answer_by_its_probability(data: Path, tmp_path: Path) -> None:
    """`--vote every --set until_consensus=true`: the members split 7 / 8 / 8 at the mission, so one round is held;
    after it all hold 8 and the second round is not. Every answer of the run is a weighted sample: the one likely 7
    (0.95) outweighs the five unlikely 8s (0.135 each: 0.68 in all), which a count of the standing answers (all 8)
    could not do."""
    likely, unlikely = -0.1, -4.0  # a reply of 2 tokens: 0.95 and 0.135
    row = debate_until_consensus(data, tmp_path / "split", by_agent({
        "planner": [scored_statement("7", likely), scored_statement("8", unlikely)],
        "calculator": [scored_statement("8", unlikely), scored_statement("8", unlikely)],
        "checker": [scored_statement("8", unlikely), scored_statement("8", unlikely)]}))
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("every", "7", 6)
    assert [(a["member"], a["round"], a["number"]) for a in row["answers"]] == [
        ("planner", 0, "7"), ("calculator", 0, "8"), ("checker", 0, "8"),
        ("planner", 1, "8"), ("calculator", 1, "8"), ("checker", 1, "8")]
    assert row["answers"][0]["token_probability"] == pytest.approx(math.exp(-0.05), abs=1e-6)


def test_a_unanimous_mission_ends_the_debate_before_any_round(data: Path, tmp_path: Path) -> None:
    row = debate_until_consensus(data, tmp_path / "agreed", by_agent({
        name: [scored_statement("8", -0.5)] for name in ("planner", "calculator", "checker")}))
    assert (row["prediction"], row["calls"], len(row["answers"])) == ("8", 3, 3)
    [run_dir] = list((tmp_path / "agreed").iterdir())
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    [consensus] = [e for e in events if e["kind"] == "soc_consensus"]
    assert (consensus["phase"], consensus["round"], consensus["answer"]) == ("debate", 1, "8")
    assert not [e for e in events if e["kind"] == "soc_phase" and e["phase"] == "debate"]


def debate_with_quorum(data: Path, out: Path, script: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """debate-solvers.toml's three members without an editor, asked in turn until two give one number."""
    from noosphere.llm import Capabilities

    backend = ScriptedBackend(script, capabilities=Capabilities(json_schema=True, logprobs=True))
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society",
                           str(EXAMPLES / "debate-solvers.toml"), "--set", "editor=null", "--vote", "every",
                           "--set", "quorum=2", "--rounds", "1", "--data", str(data), "--limit", "1",
                           "--out", str(out), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    [row] = rows(run_dir)
    return row, [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]


def test_a_quorum_of_two_that_agree_at_once_leaves_the_third_member_unasked(data: Path, tmp_path: Path) -> None:
    row, events = debate_with_quorum(data, tmp_path / "runs", by_agent({
        "planner": [scored_statement("8", -0.5)], "calculator": [scored_statement("8.0", -0.5)],
        "checker": [scored_statement("9", -0.1)]}))
    assert (row["prediction"], row["calls"]) == ("8", 2)
    assert [(a["member"], a["number"]) for a in row["answers"]] == [("planner", "8"), ("calculator", "8")]
    [quorum] = [e for e in events if e["kind"] == "soc_quorum"]
    assert (quorum["answer"], quorum["holders"], quorum["asked"]) == ("8", 2, 2)
    assert not [e for e in events if e["kind"] == "soc_phase" and e["phase"] == "debate"]


def test_a_split_pair_asks_the_next_member_and_its_answer_makes_the_quorum(data: Path, tmp_path: Path) -> None:
    """7 and 8 split, so the checker is asked alone; its 7 makes two, and the round the file allows is not held."""
    row, events = debate_with_quorum(data, tmp_path / "runs", by_agent({
        "planner": [scored_statement("7", -0.5)], "calculator": [scored_statement("8", -0.1)],
        "checker": [scored_statement("7", -0.5)]}))
    assert (row["prediction"], row["calls"]) == ("7", 3)
    [quorum] = [e for e in events if e["kind"] == "soc_quorum"]
    assert (quorum["answer"], quorum["holders"], quorum["asked"]) == ("7", 2, 3)
    assert not [e for e in events if e["kind"] == "soc_phase" and e["phase"] == "debate"]


def test_without_a_quorum_every_member_answers_and_the_rounds_are_held(data: Path, tmp_path: Path) -> None:
    row, events = debate_with_quorum(data, tmp_path / "runs", by_agent({
        "planner": [scored_statement("7", -0.5), scored_statement("9", -0.5)],
        "calculator": [scored_statement("8", -0.5), scored_statement("9", -0.5)],
        "checker": [scored_statement("9", -0.5), scored_statement("9", -0.5)]}))
    assert (row["prediction"], row["calls"]) == ("9", 6)
    assert not [e for e in events if e["kind"] == "soc_quorum"]
    assert [e["round"] for e in events if e["kind"] == "soc_phase" and e["phase"] == "debate"] == [1]


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_the_programmers_debate_counts_what_its_program_prints_weighted_by_the_reply_that_held_it(
        data: Path, tmp_path: Path) -> None:
    """`debate-programmer.toml`: the programmer's program prints 7.0, which counts as 7 with its reply's probability;
    the members split at the mission, so one round is held (every answer counted, as in the debate above)."""
    from noosphere.llm import Capabilities, Reply, Usage

    def program(source: str, logprob: float) -> Reply:
        return Reply(f"```python\n{source}\n```", usage=Usage(10, 2), logprob=logprob)

    backend = ScriptedBackend(by_agent({
        "planner": [scored_statement("8", -4.0), scored_statement("8", -4.0)],
        "programmer": [program("apples = 3\nprint(apples + 4.0)", -0.1), program("print(3 + 4)", -0.1)],
        "checker": [scored_statement("8", -4.0), scored_statement("7", -0.1)]}),
        capabilities=Capabilities(json_schema=True, logprobs=True))
    out = tmp_path / "runs"
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society",
                           str(EXAMPLES / "debate-programmer.toml"), "--data", str(data), "--limit", "1",
                           "--out", str(out), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    [row] = rows(run_dir)
    assert (row["decided_by"], row["prediction"], row["calls"]) == ("every", "7", 6)
    assert [(a["member"], a["round"], a["number"]) for a in row["answers"]] == [
        ("planner", 0, "8"), ("programmer", 0, "7"), ("checker", 0, "8"),
        ("planner", 1, "8"), ("programmer", 1, "7"), ("checker", 1, "7")]
    assert row["answers"][1]["token_probability"] == pytest.approx(math.exp(-0.05), abs=1e-6)
    programmer = [r for r in backend.history if r.agent == "programmer"]
    assert all(r.json_schema is None and r.logprobs for r in programmer)


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_best_of_n_with_program_samples_counts_what_each_program_prints(data: Path, tmp_path: Path) -> None:
    """`--form program`: each sample is a program run in the sandbox; 7.0 and 7 are one number, a program that fails
    is a failed sample, and each weight is the probability of the reply that holds the program."""
    from noosphere.llm import Capabilities, Reply, Usage

    def program(source: str, logprob: float) -> Reply:
        return Reply(f"```python\n{source}\n```", usage=Usage(10, 2), logprob=logprob)

    backend = ScriptedBackend(by_agent({"sample-0": [program("print(3 + 4.0)", -0.2)],
                                        "sample-1": [program("apples = 3\nprint(apples + 4)", -0.4)],
                                        "sample-2": [program("print(1 / 0)", -0.1)]}),
                              capabilities=Capabilities(json_schema=True, logprobs=True))
    run_dir = program_best_of_n(backend, data, tmp_path / "runs", 3)
    [row] = rows(run_dir)
    assert (row["prediction"], row["correct"], row["votes"], row["failed"]) == ("7", True, {"7": 2}, 1)
    assert [s["number"] for s in row["samples"]] == ["7", "7", None]
    assert row["samples"][0]["token_probability"] == pytest.approx(math.exp(-0.1), abs=1e-6)
    assert json.loads((run_dir / "config.json").read_text())["form"] == "program"
    assert all(r.json_schema is None and "```python block" in r.messages[-1].content for r in backend.history)


def test_best_of_n_programs_run_without_a_sandbox_are_traced_as_such(data: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With the opt-in to run unconfined, every program best-of-N runs is a `sandbox_unconfined` event in the run's
    trace, as a society's programs are (best-of-N's sandbox had no trace)."""
    from noosphere.llm import Capabilities, Reply, Usage
    from noosphere.tools import sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: None)
    monkeypatch.setenv(sandbox_module.UNSANDBOXED_ENV, "1")
    backend = ScriptedBackend(lambda request: Reply("```python\nprint(3 + 4)\n```", usage=Usage(10, 2), logprob=-0.1),
                              capabilities=Capabilities(json_schema=True, logprobs=True))
    run_dir = program_best_of_n(backend, data, tmp_path / "runs", 2)
    assert [r["prediction"] for r in rows(run_dir)] == ["7"]
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    unconfined = [e for e in events if e["kind"] == "sandbox_unconfined"]
    assert len(unconfined) == 2 and all(e["what"] == "program" for e in unconfined)


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_best_of_n_repairs_a_failed_program_once_and_weighs_the_reply_that_ran(data: Path, tmp_path: Path) -> None:
    """`--repairs 1`: a sample whose program fails sees its failure and writes again in the same conversation; its
    answer counts with the second reply's probability, the row counts each sample's repairs, and the first calls
    are the ones a run without repairs makes (so a run's cached calls serve it)."""
    from noosphere.llm import Capabilities, Reply, Usage

    def program(source: str, logprob: float) -> Reply:
        return Reply(f"```python\n{source}\n```", usage=Usage(10, 2), logprob=logprob)

    backend = ScriptedBackend(by_agent({"sample-0": [program("print(3 + 4)", -0.2)],
                                        "sample-1": [program("print(apples + 4)", -0.4), program("print(8)", -0.6)],
                                        "sample-2": [program("print(1 / 0)", -0.1), program("print(2 / 0)", -0.1)]}),
                              capabilities=Capabilities(json_schema=True, logprobs=True))
    out = tmp_path / "runs"
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--n", "3", "--form", "program", "--weights",
                           "sequence", "--repairs", "1", "--data", str(data), "--limit", "1", "--out", str(out),
                           "--no-cache", "--quiet"], lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    [row] = rows(run_dir)
    assert [s["number"] for s in row["samples"]] == ["7", "8", None]
    assert row["samples"][1]["token_probability"] == pytest.approx(math.exp(-0.3), abs=1e-6)
    assert (row["repairs"], row["failed"], row["calls"]) == ([0, 1, 1], 1, 5)
    assert json.loads((run_dir / "config.json").read_text())["repairs"] == 1
    [repair] = [r for r in backend.history if r.agent == "sample-1" and len(r.messages) > 2]
    assert "NameError" in repair.messages[-1].content and repair.messages[-2].role == "assistant"
    firsts = [r for r in backend.history if len(r.messages) == 2]
    assert len(firsts) == 3 and all("```python block" in r.messages[-1].content for r in firsts)
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--n", "3", "--repairs", "1", "--data",
                           str(data), "--out", str(tmp_path / "other"), "--no-cache"])
    assert code == 2 and "--repairs are second tries of a program" in err


def test_the_sample_form_is_best_of_ns_and_a_program_needs_bubblewrap(data: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.tools import sandbox as sandbox_module

    base = ["bench", "gsm8k", "--data", str(data), "--limit", "1", "--out", str(tmp_path / "runs"), "--no-cache"]
    code, _, err = invoke([*base, "--system", "society", "--society", str(EXAMPLES / "debate-solvers.toml"),
                           "--form", "program"])
    assert code != 0 and "--form is the form of best-of-n's samples" in err
    code, _, err = invoke([*base, "--system", "best-of-n", "--n", "2", "--form", "code"])
    assert code != 0 and "unknown sample form 'code'" in err.lower()
    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: None)
    monkeypatch.delenv(sandbox_module.UNSANDBOXED_ENV, raising=False)
    opener = opener_for(lambda request: "```python\nprint(7)\n```")
    code, _, err = invoke([*base, "--system", "best-of-n", "--n", "2", "--form", "program"], opener)
    assert code != 0 and "bubblewrap" in err and opener.backend.history == []


@pytest.mark.parametrize("organisation", ["democracy.yaml", "monarchy.yaml"])
def test_every_answer_is_a_debate_vote(organisation: str, data: Path, tmp_path: Path) -> None:
    """A democracy's rounds repeat each standing answer: counting every answer would count it once a round."""
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / organisation),
                           "--vote", "every", "--data", str(data), "--out", str(tmp_path / "runs"), "--quiet"],
                          opener_for(scripted([])))
    assert code == 2 and "vote: every" in err, err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
