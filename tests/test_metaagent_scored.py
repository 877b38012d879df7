"""ReAct choosing by probabilities (`noosphere.metaagent.scored`), on the scripted model in the two-room game."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench import games as games_bench
from noosphere.envs import Reset, Step
from noosphere.errors import CapabilityError, ModelError, UnknownNameError, UsageError
from noosphere.llm import Capabilities, Model
from noosphere.llm.scripted import ScriptedBackend
from noosphere.metaagent import MetaAgent, react
from noosphere.metaagent.scored import PROGRESS_QUESTION, ScoredDecision, reply_head, reply_tail, reply_with
from noosphere.trace import Trace
from tests.skip_policy import GAME_EXTRAS
from tests.test_hostile_inputs import cli
from tests.test_metaagent import TwoRooms, belief, by_role, reply

SCORING = Capabilities(json_schema=True, logprobs=True)
EXTRAS = ("inventory", "sing")


class BusyRooms(TwoRooms):
    """The two rooms with two more actions that do nothing: more actions than a step's three candidates."""

    def reset(self) -> Reset:
        start = super().reset()
        return Reset(start.task, start.observation, (*start.admissible, *EXTRAS))

    def step(self, action: str) -> Step:
        result = super().step(action)
        return Step(result.observation, result.reward, result.done, result.won,
                    (*result.admissible, *EXTRAS) if result.admissible else ())
class OtherRooms(TwoRooms):
    name = "other-rooms"  # a game of its own: a run's memory forgets what it holds of the game it plays


HABIT = {"react-scored": [reply(thought="I will wait and see", action="wait")]}
"""A model with a habit: whatever it sees, it writes "wait" (which does nothing in the two rooms)."""


def judge_of(useful: dict[str, float]) -> Any:
    """A scorer: the policy favours `look` then `wait` (its habit); the judge's P(True) of each candidate is the
    weight `useful` gives the action in the reply it judges (0.1 for the others); in the east room the policy ranks
    `take key` third."""
    def scorer(request: Any) -> list[float]:
        if request.options == ("Yes", "No"):
            action = json.loads(request.messages[-2].content)["action"]
            p = useful.get(action, 0.1)
            return [p, 1 - p]
        habit = {"look": 5.0, "wait": 4.0, "take key": 2.0}
        return [habit.get(option.removesuffix('"}'), 1.0) for option in request.options]
    return scorer


def scored_model(scorer: Any, script: dict[str, list[str]] = HABIT) -> tuple[Model, ScriptedBackend, Trace]:
    backend = ScriptedBackend(by_role(script), capabilities=SCORING, scorer=scorer)
    trace = Trace(None)
    return Model(backend, trace=trace), backend, trace


def test_the_judge_turns_a_habit_of_waiting_into_a_won_game() -> None:
    model, backend, trace = scored_model(judge_of({"go east": 0.8, "take key": 0.9}))
    result = asyncio.run(react(model, BusyRooms(), max_actions=5, system="react-scored", decide=ScoredDecision()))
    assert result.won and result.actions == 2  # the plain ReAct of the same replies waits five times and loses
    first, second = trace.of_kind("ma_judged")
    assert first.written == "wait" and first.chosen == "go east"
    assert first.candidates == ["wait", "look", "go east"]  # the written action, then the policy's likeliest others
    assert first.p_true == [0.1, 0.1, 0.8] and first.policy[1] > first.policy[0] > first.policy[2]
    assert second.chosen == "take key" and second.step == 2
    policy = next(r for r in backend.score_history if r.agent == "react-scored-policy")
    assert policy.prefix == '{"thought": "I will wait and see", "action": "'
    assert sorted(policy.options) == sorted(f'{a}"}}' for a in ("go east", "look", "wait", *EXTRAS))
    judged = [r for r in backend.score_history if r.agent == "react-scored-judge"][:3]
    assert [json.loads(r.messages[-2].content)["action"] for r in judged] == ["wait", "look", "go east"]
    assert all(r.messages[-1].content == PROGRESS_QUESTION and r.messages[-2].role == "assistant" for r in judged)
    assert judged[0].messages[:-2] == backend.history[0].messages  # the judge reads ReAct's own prompt


def test_among_equals_the_written_action_stands_and_calls_that_cannot_change_the_pick_are_not_made() -> None:
    model, _, trace = scored_model(judge_of({}))
    asyncio.run(react(model, BusyRooms(), max_actions=1, system="react-scored", decide=ScoredDecision()))
    assert trace.of_kind("ma_judged")[0].chosen == "wait"
    model, backend, trace = scored_model(judge_of({"go east": 0.9}))
    asyncio.run(react(model, BusyRooms(), max_actions=1, system="react-scored", decide=ScoredDecision(1)))
    assert backend.score_history == []  # one candidate: no policy, nothing to judge it against
    event = trace.of_kind("ma_judged")[0]
    assert event.candidates == ["wait"] and event.p_true == [None] and event.chosen == "wait"
    model, backend, trace = scored_model(judge_of({"go east": 0.9}))  # three actions, three candidates: no policy
    asyncio.run(react(model, TwoRooms(), max_actions=1, system="react-scored", decide=ScoredDecision()))
    assert [r.agent for r in backend.score_history] == ["react-scored-judge"] * 3
    event = trace.of_kind("ma_judged")[0]
    assert event.candidates == ["wait", "go east", "look"] and event.policy == [None] * 3
    assert event.chosen == "go east"


def test_the_judge_changes_the_written_action_only_by_at_least_its_margin() -> None:
    for margin, taken in ((0.05, "wait"), (0.0, "go east")):
        model, _, trace = scored_model(judge_of({"go east": 0.13}))  # 0.03 above the written "wait"
        decide = ScoredDecision(margin=margin)
        asyncio.run(react(model, BusyRooms(), max_actions=1, system="react-scored", decide=decide))
        assert trace.of_kind("ma_judged")[0].chosen == taken
    with pytest.raises(UsageError, match="margin"):
        ScoredDecision(margin=1.0)


def judged_step(scorer: Any) -> Any:
    """The `ma_judged` event of one scored step in the busy rooms, the model writing "wait"."""
    model, _, trace = scored_model(scorer)
    asyncio.run(react(model, BusyRooms(), max_actions=1, system="react-scored", decide=ScoredDecision()))
    return trace.of_kind("ma_judged")[0]


def judge_failing_on(action: str, useful: dict[str, float]) -> Any:
    """`judge_of(useful)`, except that the judge's call about `action` fails at run time."""
    def scorer(request: Any) -> Any:
        if request.options == ("Yes", "No") and json.loads(request.messages[-2].content)["action"] == action:
            return ModelError("scripted", "the judge's call failed")
        return judge_of(useful)(request)
    return scorer


def test_a_failed_scoring_call_forfeits_itself_alone() -> None:
    def policy_fails(request: Any) -> Any:
        if request.options != ("Yes", "No"):
            return ModelError("scripted", "the policy's call failed")
        return judge_of({"go east": 0.9})(request)
    event = judged_step(policy_fails)
    assert event.candidates == ["wait"] and event.policy == [None] and event.chosen == "wait"
    event = judged_step(judge_failing_on("look", {"look": 0.99, "go east": 0.6}))
    assert event.forfeits == 1 and event.p_true[1] is None and event.chosen == "go east"
    event = judged_step(judge_failing_on("wait", {"look": 0.99, "go east": 0.99}))
    assert event.forfeits == 1 and event.chosen == "wait"  # nothing is judged better than an unjudged written action


def test_a_run_saved_before_margins_existed_resumes_without_one(tmp_path: Path) -> None:
    for config, taken in (({}, "go east"), ({"margin": 0.05}, "wait")):
        model, _, trace = scored_model(judge_of({"go east": 0.13}))
        play = games_bench.player(model, {"system": "react-scored", "max_actions": 1, **config}, tmp_path)
        asyncio.run(play(BusyRooms()))
        assert trace.of_kind("ma_judged")[0].chosen == taken


def test_usage_errors_are_raised_not_forfeited(tmp_path: Path) -> None:
    def wrong_options(request: Any) -> Any:
        return [1.0]  # a scorer bug: one score for several options
    model, _, _ = scored_model(wrong_options)
    with pytest.raises(ValueError):
        asyncio.run(react(model, TwoRooms(), max_actions=1, system="react-scored", decide=ScoredDecision()))
    with pytest.raises(UsageError, match="at least one candidate"):
        ScoredDecision(0)
    cannot = Model(ScriptedBackend(by_role(HABIT)), trace=Trace(None))
    config = {"system": "react-scored", "max_actions": 3, "memory": "none", "seed": 0}
    with pytest.raises(CapabilityError, match="logprobs"):
        games_bench.player(cannot, config, tmp_path)
    first_token = Model(ScriptedBackend(by_role(HABIT), capabilities=replace(SCORING, first_token_scores=True)),
                        trace=Trace(None))  # a provider's top_logprobs: no score after the reply's prefix
    with pytest.raises(CapabilityError, match="only a reply's first token"):
        games_bench.player(first_token, config, tmp_path)
    games_bench.player(scored_model(judge_of({}))[0], config, tmp_path)
    with pytest.raises(UnknownNameError):
        games_bench.check_options("react-scord", "none", "random")


def test_the_reply_head_ends_where_the_action_begins_and_the_tail_completes_it() -> None:
    step = {"thought": 'a "quoted" word', "action": "go east"}
    assert reply_with(step, "look") == '{"thought": "a \\"quoted\\" word", "action": "look"}'
    assert reply_with(step, "look").startswith(reply_head(step)) and reply_head(step).endswith('"action": "')
    for action in ("look", 'read "Cooking" book', "take café"):
        assert reply_head(step) + reply_tail(action) == reply_with(step, action)


def test_bench_textworld_react_scored_plays_and_a_model_that_cannot_score_leaves_no_folder(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    backend = ScriptedBackend(by_role({"react-scored": [reply(thought="look around", action="look")]}),
                              capabilities=SCORING, scorer=judge_of({}))
    args = ["bench", "textworld", "--system", "react-scored", "--challenges", "treasure_hunter", "--per-challenge",
            "1", "--max-actions", "2", "--games-dir", str(tmp_path / "games"), "--model", "scripted", "--no-cache",
            "--quiet"]
    played = cli([*args, "--out", str(tmp_path / "scored")], lambda model_id, **kwargs: Model(backend, **kwargs))
    assert played.code == 0, played
    [folder] = (tmp_path / "scored").iterdir()
    row = json.loads((folder / "items.jsonl").read_text().splitlines()[0])
    config = json.loads((folder / "config.json").read_text())
    assert row["actions"] == 2 and config["system"] == "react-scored" and config["margin"] == 0.05
    judged = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()
              if '"ma_judged"' in line]
    assert len(judged) == 2 and all(event["written"] == "look" and len(event["candidates"]) == 3 for event in judged)
    plain = cli([*args[:2], "--system", "react", "--margin", "0.1", *args[4:], "--out", str(tmp_path / "react")])
    assert plain.code == 2 and "--margin is the judge's" in plain.err and not (tmp_path / "react").exists()
    text_only = ScriptedBackend(by_role({"react-scored": [reply(thought="look around", action="look")]}))
    refused = cli([*args, "--out", str(tmp_path / "plain")], lambda model_id, **kwargs: Model(text_only, **kwargs))
    assert refused.code == 2 and "logprobs" in refused.err, refused
    assert not (tmp_path / "plain").exists() or not any((tmp_path / "plain").iterdir())


WAITING_TEAM = {"conscious": [belief()], "planning": [reply(plan="wait and see what happens", action="wait")],
                "focus": [reply(situation="nothing has changed", action="wait")]}
"""A meta-agent team with the same habit: its planner and motor write "wait" whatever the belief says."""


def test_the_meta_agents_motor_is_judged_on_the_planners_reply_when_asked() -> None:
    model, backend, trace = scored_model(judge_of({"go east": 0.8, "take key": 0.9}), WAITING_TEAM)
    result = asyncio.run(MetaAgent(model, judge=ScoredDecision()).play(BusyRooms()))
    assert result.won and result.actions == 2
    first, second = trace.of_kind("ma_judged")
    assert (first.written, first.chosen, first.candidates) == ("wait", "go east", ["wait", "look", "go east"])
    assert (second.written, second.chosen) == ("wait", "take key")
    assert [e.action for e in trace.of_kind("ma_action")] == ["go east", "take key"]
    policy = next(r for r in backend.score_history if r.agent == "planning+motor-policy")
    assert policy.prefix == '{"plan": "wait and see what happens", "action": "'
    planning = next(r for r in backend.history if r.agent == "planning+motor")
    judged = next(r for r in backend.score_history if r.agent == "planning+motor-judge")
    assert judged.messages[:-2] == planning.messages  # the planner's own prompt, then its reply with a candidate
    assert json.loads(judged.messages[-2].content) == {"plan": "wait and see what happens", "action": "wait"}
    model, backend, trace = scored_model(judge_of({"go east": 0.8, "take key": 0.9}), WAITING_TEAM)
    unjudged = asyncio.run(MetaAgent(model, max_actions=4).play(BusyRooms()))
    assert not unjudged.won and backend.score_history == [] and trace.of_kind("ma_judged") == []


def test_the_meta_agents_judge_is_refused_without_scores_and_its_options_are_checked(tmp_path: Path) -> None:
    cannot = Model(ScriptedBackend(by_role(WAITING_TEAM)), trace=Trace(None))
    with pytest.raises(CapabilityError, match="logprobs"):
        MetaAgent(cannot, judge=ScoredDecision())
    config = {"system": "metaagent", "memory": "none", "max_actions": 2, "seed": 0, "judge": True, "margin": 0.05}
    with pytest.raises(CapabilityError, match="logprobs"):
        games_bench.player(cannot, config, tmp_path)
    model, _, trace = scored_model(judge_of({"go east": 0.13}), WAITING_TEAM)  # 0.03 above "wait": under the margin
    asyncio.run(games_bench.player(model, config, tmp_path)(BusyRooms()))
    assert {e.chosen for e in trace.of_kind("ma_judged")} == {"wait"}
    args = ["bench", "textworld", "--challenges", "treasure_hunter", "--per-challenge", "1", "--max-actions", "2",
            "--games-dir", str(tmp_path / "games"), "--model", "scripted", "--no-cache", "--quiet"]
    for system, said in (("react", "has no judge"), ("react-scored", "always judges")):
        refused = cli([*args, "--system", system, "--judge", "--out", str(tmp_path / system)])
        assert refused.code == 2 and "--judge is the meta-agent's" in refused.err and said in refused.err, refused
        assert not (tmp_path / system).exists()


def test_the_planner_view_reaches_the_meta_agent_and_is_refused_elsewhere(tmp_path: Path) -> None:
    from tests.helpers import scripted
    from tests.test_metaagent import winning_script

    model, backend, _ = scripted(by_role({**winning_script(), "planning": [
        reply(thought="the key is east", action="go east"), reply(thought="grab it", action="take key")]}))
    config = {"system": "metaagent", "memory": "none", "max_actions": 3, "seed": 0, "planner_view": "percept"}
    assert asyncio.run(games_bench.player(model, config, tmp_path)(TwoRooms())).won
    planner = [r for r in backend.history if r.agent == "planning+motor"]
    assert planner and all("Belief state" not in r.messages[1].content for r in planner)
    args = ["bench", "textworld", "--challenges", "treasure_hunter", "--per-challenge", "1", "--max-actions", "2",
            "--games-dir", str(tmp_path / "games"), "--model", "scripted", "--no-cache", "--quiet"]
    for extra, said in ((["--system", "react", "--planner-view", "percept"], "--planner-view is the meta-agent's"),
                        (["--planner-view", "belief"], "unknown planner view 'belief'. Known: percept, team"),
                        (["--memory", "none", "--recall-view", "planner"], "--memory none recalls nothing"),
                        (["--system", "react", "--recall-view", "team"], "--system react has no memory"),
                        (["--recall-view", "all"], "unknown recall view 'all'. Known: planner, team"),
                        (["--memory", "none", "--recall-at", "stuck"], "--recall-at needs memory to recall"),
                        (["--recall-at", "soon"], "unknown recall time 'soon'. Known: start, stuck"),
                        (["--system", "react", "--focus", "strike"], "--focus is the meta-agent's"),
                        (["--focus", "loud"], "unknown focus mode 'loud'. Known: mask, replay, strike"),
                        (["--memory", "conceptual", "--retrieve", "kin"], "--memory conceptual keeps none to pick"),
                        (["--system", "react", "--retrieve", "relevant"], "--system react keeps none to pick")):
        refused = cli([*args, *extra, "--out", str(tmp_path / "refused")])
        assert refused.code == 2 and said in refused.err, refused
        assert not (tmp_path / "refused").exists()


def test_the_recall_view_of_a_runs_config_reaches_the_meta_agent_and_an_old_config_recalls_for_the_team(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.memory import HashingEmbedder
    from tests.helpers import scripted
    from tests.test_metaagent import winning_script

    monkeypatch.setattr(games_bench, "default_embedder", HashingEmbedder)
    rule = "When the thing you need is not in sight, search the room next door before anything else."
    base = {"system": "metaagent", "memory": "both", "retrieve": "random", "k": 2, "max_actions": 3, "seed": 0}
    # a run from before the options: the team's view, recalled at the start; `stuck`: a game never stuck recalls none
    for saved, shared, recalled in (({"recall_view": "planner"}, False, True), ({}, True, True),
                                    ({"recall_view": "planner", "recall_at": "stuck"}, False, False)):
        script = {role: replies * 2 for role, replies in winning_script().items()}  # two games
        model, backend, _ = scripted(by_role(script | {"learning": [reply(text=rule)] * 2}))
        play = games_bench.player(model, base | saved, tmp_path / f"{shared}{recalled}")
        assert asyncio.run(play(TwoRooms())).won
        first_game = len(backend.history)
        assert asyncio.run(play(OtherRooms())).won  # another game, which recalls the first one's rule
        others = ["\n".join(m.content for m in r.messages) for r in backend.history[first_game:]
                  if not r.agent.startswith(("planning", "motor"))]
        planner = [r for r in backend.history[first_game:] if r.agent.startswith("planning")]
        assert planner and all((rule in "\n".join(m.content for m in r.messages)) == recalled for r in planner)
        assert others and all((rule in text) == (shared and recalled) for text in others)


def test_the_planner_view_named_for_another_system_is_refused_even_as_the_default(tmp_path: Path) -> None:
    args = ["bench", "textworld", "--challenges", "treasure_hunter", "--per-challenge", "1", "--max-actions", "2",
            "--games-dir", str(tmp_path / "games"), "--model", "scripted", "--no-cache", "--quiet"]
    refused = cli([*args, "--system", "reflexion", "--planner-view", "team", "--out", str(tmp_path / "refused")])
    assert refused.code == 2 and "--planner-view is the meta-agent's" in refused.err, refused
    assert not (tmp_path / "refused").exists()
    graph = tmp_path / "graph.yaml"
    graph.write_text("edges: {}\n")
    refused = cli([*args, "--system", "react", "--graph", str(graph), "--out", str(tmp_path / "refused")])
    assert refused.code == 2 and "--graph is the meta-agent's transition graph" in refused.err, refused
    assert not (tmp_path / "refused").exists()
