"""The meta-agent on the scripted model in a two-room game: graph, loops, focus, memory, baselines."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from noosphere.envs import Reset, Step
from noosphere.errors import ConfigError, ModelError, UnknownNameError, UsageError
from noosphere.memory import HashingEmbedder, MemoryStore
from noosphere.metaagent import (
    DEFAULT_GRAPH,
    RECALL_VIEWS,
    MemorySettings,
    MetaAgent,
    TransitionGraph,
    off_task,
    react,
    reflexion,
)
from noosphere.metaagent.agents import LESSON_QUESTION, PLANNER_VIEWS
from noosphere.metaagent.cost import StepCost
from noosphere.metaagent.hallucination import flag_hallucination
from noosphere.metaagent.prompts import TEAM, briefed, planner_on_percept
from noosphere.metaagent.state import EpisodeState
from tests.helpers import by_agent, scripted
from tests.skip_policy import GAME_EXTRAS

WEST = ("go east", "look", "wait")
EAST = ("go west", "take key", "look", "wait")
EAST_ROOM = "You are in the east room. A key lies here."


class TwoRooms:
    """The key is in the east room; taking it wins. Anything else does nothing."""

    name, kind = "two-rooms", "fetch"

    def reset(self) -> Reset:
        self.room = "west"
        return Reset("Your task is to: take the key.", "You are in the west room.", WEST)

    def step(self, action: str) -> Step:
        if action == "go east" and self.room == "west":
            self.room = "east"
            return Step(EAST_ROOM, 0.0, False, False, EAST)
        if action == "take key" and self.room == "east":
            return Step("You take the key.", 1.0, True, True, ())
        return Step("Nothing happens.", 0.0, False, False, WEST if self.room == "west" else EAST)

    def close(self) -> None:
        pass


def reply(**fields: object) -> str:
    return json.dumps(fields)


def belief(text: str = "the key may be east", *, location: str = "the west room", pick: str = "planning") -> str:
    """A conscious agent's reply: the belief state in its four parts, then the orchestrator's pick."""
    return reply(location=location, progress="nothing yet", known=text, next="find the key", next_agent=pick)


def by_role(replies: dict[str, list[str]]) -> Any:
    """Answers each call from the queue of the role that opens its label: a shared call such as
    "planning+motor" from the planning agent's, "conscious+orchestrator" from the conscious agent's."""
    answer = by_agent(replies)
    return lambda request: answer(SimpleNamespace(agent=(request.agent or "").split("+")[0]))


def calls(backend: Any, role: str) -> list[Any]:
    """The requests of every call that served `role`, alone or sharing it with others."""
    return [r for r in backend.history if role in (r.agent or "").split("+")]


def winning_script(orchestrator: list[str] | None = None) -> dict[str, list[str]]:
    return {"conscious": [belief()], "orchestrator": orchestrator or [reply(next="planning")],
            "planning": [reply(plan="the key is east", action="go east"), reply(plan="grab it", action="take key")],
            "motor": [reply(action="go east"), reply(action="take key")],
            "learning": [reply(text="Search the neighbouring room before anything else when an item is missing.")]}


def kinds(trace, kind: str) -> list:
    return trace.of_kind(kind)


def test_autopilot_loop_wins_and_every_transition_follows_the_graph() -> None:
    model, backend, trace = scripted(by_role(winning_script()))
    result = asyncio.run(MetaAgent(model).play(TwoRooms()))
    offered = next(r for r in backend.history if r.agent == "conscious+orchestrator").messages[-1].content
    assert "who acts next:\n- planning (the usual next step): " in offered  # the graph's default, first and marked
    assert result.won and result.actions == 2
    # an action costs two calls: the belief with the orchestrator's pick, then the plan with the motor's action
    assert [r.agent for r in backend.history] == ["conscious+orchestrator", "planning+motor"] * 2
    hops = [(t.source, t.target, t.by) for t in kinds(trace, "ma_transition")]
    assert hops[:4] == [("conscious", "planning", "orchestrator"), ("planning", "motor", "graph"),
                        ("motor", "external_perception", "graph"), ("external_perception", "conscious", "graph")]
    hops = [(source, target) for source, target, _ in hops]
    spoke = [(s.agent, s.output, s.call) for s in kinds(trace, "ma_step")][1:4]
    assert spoke == [("planning", "go east (because the key is east)", "planning+motor"),
                     ("motor", "go east", "planning+motor"), ("external_perception", EAST_ROOM, "")]
    assert all(DEFAULT_GRAPH.allows(source, target) for source, target in hops)
    assert [a.action for a in kinds(trace, "ma_action")] == ["go east", "take key"]
    assert [b.step for b in kinds(trace, "ma_belief")] == [0, 1]
    assert list(result.moves) == hops and result.transitions == len(hops)


def form_driven(plan: tuple[str, ...], trace: Any, picks: list[str]) -> Any:
    """A script that answers each call by the form it asks for, whoever asks: the same game for any step
    structure. Actions follow `plan` by how many were taken; the orchestrator picks from `picks`, then planning."""

    def answer(request: Any) -> str:
        fields = (request.json_schema or {}).get("properties", {})
        action = plan[min(len(trace.of_kind("ma_action")), len(plan) - 1)]
        if "location" in fields:
            said = json.loads(belief())
            return reply(**{k: v for k, v in said.items() if k != "next_agent"},
                         **({"next_agent": picks.pop(0) if picks else "planning"} if "next_agent" in fields else {}))
        if "next" in fields:
            return reply(next=picks.pop(0) if picks else "planning")
        if "situation" in fields:
            return reply(situation="The key is east.", action="go east")
        if "action" in fields:
            return reply(reason="r", plan="r", action=action)
        return reply(text="Try the east room.")

    return answer


def test_an_action_costs_at_most_three_model_calls_on_a_scripted_game() -> None:
    """Issue 27: the paper's loops at a small model's price. Two wasted actions (a focus loop) and a detour
    through the idea agent in four actions: with a call per agent and one per orchestrator pick, this game
    cost 19 calls (4.75 an action); now the belief carries the pick, the plan carries the motor's action, and
    the belief waits for the focus loop's replay: 10 calls."""
    holder: dict[str, Any] = {}
    model, backend, trace = scripted(lambda request: holder["answer"](request))
    holder["answer"] = form_driven(("wait", "wait", "go east", "take key"), trace, ["idea"])
    result = asyncio.run(MetaAgent(model).play(TwoRooms()))
    assert result.won and result.actions == 4 and result.focus_loops == result.focus_recoveries == 1
    assert {("conscious", "idea"), ("idea", "planning"), ("conscious", "focus"), ("focus", "internal_perception"),
            ("internal_perception", "conscious"), ("planning", "motor"), ("motor", "external_perception")} <= set(
        result.moves)  # every loop, role by role
    cost = StepCost.of(model, [result])
    assert cost.calls_per_action <= 3, cost.line()
    assert sorted(r.agent for r in backend.history) == sorted(
        ["conscious+orchestrator"] * 4 + ["planning+motor"] * 4 + ["idea", "focus"])
    assert re.fullmatch(r"calls_per_action=2\.50 tokens_per_action=\d+ seconds_per_action=0\.00", cost.line())


def test_an_orchestrator_pick_outside_the_graph_falls_back_to_the_default_successor() -> None:
    """In the conscious agent's call the pick is not retried: a bad pick must not cost the belief written
    before it. In the orchestrator's own call (after a code agent) it is retried, then replaced."""
    script = {**winning_script(orchestrator=[reply(next="motor")]), "conscious": [belief(pick="motor")]}
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, max_actions=1).play(TwoRooms()))
    first = kinds(trace, "ma_transition")[0]
    assert (first.source, first.target, first.valid, first.fallback) == ("conscious", "planning", False, True)
    assert [r.agent for r in backend.history] == ["conscious+orchestrator", "planning+motor"]
    assert kinds(trace, "ma_belief") and result.actions == 1
    branching = TransitionGraph({"conscious": ("planning",), "planning": ("motor",), "motor": ("external_perception",),
                                 "external_perception": ("conscious", "idea"), "idea": ("planning",)})
    model, backend, trace = scripted(by_role(script))
    asyncio.run(MetaAgent(model, graph=branching, max_actions=1).play(TwoRooms()))
    last = kinds(trace, "ma_transition")[-1]
    assert (last.source, last.target, last.valid, last.fallback) == ("external_perception", "conscious", False, True)
    assert sum(1 for r in backend.history if r.agent == "orchestrator") == 3  # asked, then retried twice


def test_actions_that_keep_doing_nothing_send_the_agent_round_the_focus_loop() -> None:
    script = winning_script()
    script["planning"] = [reply(plan="rest", action="wait"), reply(plan="rest", action="wait"),
                          reply(plan="the key is east", action="go east"), reply(plan="grab", action="take key")]
    script["motor"] = [reply(action="wait"), reply(action="wait"), reply(action="go east"), reply(action="take key")]
    script["focus"] = [reply(situation="The key is not here.", action="go east")]
    model, _, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model).play(TwoRooms()))
    assert result.won and result.focus_loops == 1 and result.focus_recoveries == 1
    [caught] = kinds(trace, "ma_focus")
    [outcome] = kinds(trace, "ma_focus_outcome")
    assert "did nothing" in caught.reason and caught.loop == outcome.loop == 1
    assert (outcome.action, outcome.recovered) == ("go east", True)
    hops = [(t.source, t.target) for t in kinds(trace, "ma_transition")]
    assert ("conscious", "focus") in hops and ("focus", "internal_perception") in hops
    assert ("internal_perception", "conscious") in hops


def test_an_action_repeated_to_the_same_result_counts_as_doing_nothing() -> None:
    """ALFWorld answers every "look" in the middle of a room alike; the 1.5B team looked four times running,
    and in another game went back and forth between two closed drawers."""
    from noosphere.metaagent import EpisodeState
    from noosphere.metaagent.state import REPEAT_WINDOW

    state = EpisodeState("Your task is to: take the key.", "You are in the west room.", WEST)
    streaks, seen_last = [], []
    for action, observation in (("look", "A room."), ("look", "A room."), ("look", "A room."),
                                ("look", "A room, now lit."), ("go east", "A room, now lit."),
                                ("go to drawer 1", "Drawer 1 is closed."), ("go to drawer 2", "Drawer 2 is closed."),
                                ("go to drawer 1", "Drawer 1 is closed."), ("go to drawer 2", "Drawer 2 is closed.")):
        state.record(action, observation, WEST, False, False)
        streaks.append(state.invalid_streak)
        seen_last.append(state.last_valid_observation)
    assert streaks == [0, 1, 2, 0, 0, 0, 0, 1, 2]  # a new result, or a new action, is not a repeat
    assert seen_last[-2] == "Drawer 1 is closed."  # a repeat still took the team there: what it sees is real
    state.record("open drawer 3", "Nothing happens.", WEST, False, False)
    assert state.invalid_streak == 3 and state.last_valid_observation == "Drawer 2 is closed."
    for t in range(REPEAT_WINDOW):
        state.record(f"go to shelf {t}", "A shelf.", WEST, False, False)
    state.record("go to drawer 1", "Drawer 1 is closed.", WEST, False, False)
    assert state.invalid_streak == 0  # a place seen long ago may be worth a second visit


@pytest.mark.parametrize("focus", ["replay", "strike"])
def test_the_struck_focus_agent_is_told_what_did_nothing_and_cannot_choose_it(focus: str) -> None:
    """Stop 46 and 50: the paper's focus agent, shown an unchanged observation, advised the action the team kept
    repeating. With `strike` the actions that just did nothing are named to it and left out of its form."""
    script = winning_script()
    script["planning"] = [reply(plan="rest", action="wait"), reply(plan="rest", action="wait"),
                          reply(plan="east", action="go east"), reply(plan="grab", action="take key")]
    script["focus"] = [reply(situation="Waiting did nothing.", action="go east")]
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, focus=focus).play(TwoRooms()))
    assert result.won and result.focus_loops == 1 and result.focus_recoveries == 1
    [call] = [r for r in backend.history if r.agent == "focus"]
    allowed = call.json_schema["properties"]["action"]["enum"]
    told = "Actions that just did nothing (not to be taken again now): wait\n" in call.messages[-1].content
    [loop] = trace.of_kind("ma_focus")
    assert loop.struck == (["wait"] if focus == "strike" else [])
    if focus == "strike":
        assert allowed == ["go east", "look"] and told
        assert "Admissible actions: go east, look\n" in call.messages[-1].content
    else:
        assert allowed == ["go east", "look", "wait"] and not told
    with pytest.raises(UnknownNameError, match="unknown focus mode 'loud'"):
        MetaAgent(model, focus="loud")  # type: ignore[arg-type]


@pytest.mark.parametrize("planner_view", ["team", "percept"])
def test_the_mask_keeps_every_choice_of_an_action_from_what_just_did_nothing(planner_view: str) -> None:
    """`--focus mask`: the planner's and motor's forms, and the admissible actions every agent reads, leave out an
    action that did nothing, from the step after it; with `strike` only the focus agent's do."""
    key = "thought" if planner_view == "percept" else "plan"
    for focus in ("mask", "strike"):
        script = {**winning_script(), "planning": [reply(**{key: "rest", "action": "wait"}),
                                                   reply(**{key: "east", "action": "go east"}),
                                                   reply(**{key: "grab", "action": "take key"})]}
        model, backend, _ = scripted(by_role(script))
        assert asyncio.run(MetaAgent(model, focus=focus, planner_view=planner_view).play(TwoRooms())).won
        first, second, _ = calls(backend, "planning")
        assert first.json_schema["properties"]["action"]["enum"] == list(WEST)
        listed = [m.content for m in second.messages if "Admissible actions:" in m.content][-1]
        if focus == "mask":
            assert second.json_schema["properties"]["action"]["enum"] == ["go east", "look"]
            assert "Admissible actions: go east, look\n" in listed
        else:
            assert second.json_schema["properties"]["action"]["enum"] == list(WEST)
            assert "Admissible actions: go east, look, wait\n" in listed


def test_an_action_that_did_nothing_is_struck_until_it_does_something_or_its_window_passes() -> None:
    from noosphere.metaagent.state import FUTILE_WINDOW

    state = EpisodeState("Your task is to: take the key.", "You are in the west room.", WEST, strike_futile=True)
    state.record("wait", "Nothing happens.", WEST, False, False)
    state.record("look", "You are in the west room.", WEST, False, False)
    state.record("look", "You are in the west room.", WEST, False, False)  # the very text the team had: no change
    assert state.futile() == ("look", "wait") and state.focus_choices() == ("go east",)  # the game's order
    assert state.choices() == WEST  # the planner keeps every choice unless masked
    state.record("look", "The lamp is lit now.", WEST, False, False)  # it did something after all
    assert state.futile() == ("wait",)
    for _ in range(FUTILE_WINDOW - state.t):  # up to the last step whose window still holds the wait (step 1)
        state.record("go east", f"Step {state.t}.", WEST, False, False)
    assert state.futile() == ("wait",)
    state.record("go east", "Further on.", WEST, False, False)
    assert state.futile() == ()  # long ago: it may do something now
    for action in WEST:
        state.record(action, "Nothing happens.", WEST, False, False)
    assert state.futile() == WEST and state.focus_choices() == WEST  # all struck: every action is offered again
    assert state.struck() == ()  # and none is named as kept from the focus agent
    back_and_forth = EpisodeState("Find the coin.", "A hall.", ("go east", "go west"), strike_futile=True)
    for action, room in (("go east", "A cellar."), ("go west", "A hall."), ("go east", "A cellar."),
                         ("go west", "A hall.")):
        back_and_forth.record(action, room, ("go east", "go west"), False, False)
    assert back_and_forth.invalid_streak == 2 and back_and_forth.futile() == ()  # the loop opens, nothing is struck


def test_a_planner_that_proposes_no_admissible_action_forfeits_and_the_team_refocuses() -> None:
    """The planner's form takes only admissible actions: a plan outside them is sent back, and a planner
    that keeps proposing one forfeits its turn, which counts as a hallucination."""
    script = winning_script()
    script["planning"] = [reply(plan="why not", action="fly to the moon")] * 3 + [
        reply(plan="east", action="go east"), reply(plan="grab", action="take key")]
    script["motor"] = [reply(action="look"), reply(action="go east"), reply(action="take key")]
    script["focus"] = [reply(situation="The key is east.", action="go east")]
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model).play(TwoRooms()))
    assert result.won and kinds(trace, "ma_focus")[0].reason == "planning gave no usable output (OutputParseError)"
    [forfeit] = kinds(trace, "ma_forfeit")
    assert (forfeit.agent, forfeit.instead) == ("planning+motor", "nothing said; the focus loop next")
    [refused] = kinds(trace, "output_failed")
    assert refused.agent == "planning+motor" and refused.attempts == 3 and "should be 'go east'" in refused.errors[0]
    assert [r.agent for r in backend.history].count("motor") == 1  # with no plan decided, the motor asks alone
    [focus_call] = [r for r in backend.history if r.agent == "focus"]  # told what failed and what can be done
    assert "planning gave no usable output" in focus_call.messages[-1].content
    assert "Admissible actions: go east, look, wait" in focus_call.messages[-1].content
    # the belief waits for the replay when the focus loop is decided before the conscious agent's turn
    [handed_over] = [s.output for s in kinds(trace, "ma_step") if s.agent == "conscious" and not s.call]
    assert handed_over.startswith("(to the focus loop first: planning gave no usable output")
    after_focus = [r.messages[-1].content for r in calls(backend, "conscious")][1]
    assert "last real observation, replayed" in after_focus  # not "the result of the last action"
    *_, advised, last_plan = [r.messages[-1].content for r in calls(backend, "planning")]
    assert "Focus: The key is east. Next action: go east." in advised
    assert "The key is east. Next action: go east." not in last_plan  # the focus note went with the action it advised


def test_the_motor_never_reads_the_plan_of_a_planner_that_then_forfeited() -> None:
    script = winning_script()
    script["planning"] = [reply(plan="rest", action="wait"), *[reply(plan="?", action="fly")] * 3,
                          reply(plan="east", action="go east"), reply(plan="grab", action="take key")]
    script["motor"] = [reply(action="go east")]
    script["focus"] = [reply(situation="The key is east.", action="go east")]
    model, backend, _ = scripted(by_role(script))
    asyncio.run(MetaAgent(model).play(TwoRooms()))
    [after_forfeit] = [r.messages[-1].content for r in backend.history if r.agent == "motor"]  # alone: no plan
    assert "Plan: wait" not in after_forfeit


def test_a_steps_agents_share_one_prompt_prefix_and_differ_only_in_their_role_and_form() -> None:
    """The local backend evaluates a shared prefix once: the team prompt and context come before the role."""
    model, backend, _ = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model).play(TwoRooms()))
    conscious, planning, next_conscious = (r.messages[1].content for r in backend.history[:3])
    assert [r.agent for r in backend.history[:2]] == ["conscious+orchestrator", "planning+motor"]
    assert len({r.messages[0].content for r in backend.history}) == 1  # one system prompt for every agent
    shared = planning.split("You are the planning agent")[0]
    assert "Your task is to: take the key." in shared and "Admissible actions: go east" in shared
    assert next_conscious.startswith(shared.split("Recent actions:")[0])  # task and belief: the next step's prefix
    assert "JSON schema" in planning.rsplit("You are the planning agent", 1)[1]  # the form comes after the role
    assert '"go east"' not in planning  # the admissible actions are listed once, not again in the schema
    role, pick, form = (conscious.index(text) for text in ("You are the conscious agent", "who acts next", "JSON"))
    assert role < pick < form and '"idea"' not in conscious  # the orchestrator's question after the conscious role


def test_memory_stores_the_episode_and_a_rule_after_a_win_and_recalls_them_next_game(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    memory = MemorySettings(store, method="relevant", k=1, embedder=HashingEmbedder())
    model, _, trace = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms()))
    [episode] = store.episodes()
    assert episode.won and [s.action for s in episode.steps] == ["", "go east", "take key"] and episode.actions == 2
    assert episode.steps[0].t == 0 and episode.steps[0].observation  # the opening: first observation and belief
    assert all(step.belief for step in episode.steps)  # a belief state for every timestep, before and after acting
    assert store.concepts() == ["Search the neighbouring room before anything else when an item is missing."]
    model, backend, trace = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms()))
    retrieved = {e.memory: e.items for e in kinds(trace, "ma_retrieval")}
    assert retrieved["episodic"] == ["Your task is to: take the key."]
    assert retrieved["conceptual"] == store.concepts()
    assert "Search the neighbouring room" in backend.history[0].messages[-1].content


def test_a_rule_that_restates_its_question_or_loops_is_corrected_before_it_is_kept(tmp_path: Path) -> None:
    """Stop 54: the 1.5B answered "The task was solved. One general rule:" with that line ten times over, and the
    loop was the memory's only rule. Such a reply is refused by the form, with a correction, like bad JSON."""
    store = MemoryStore(tmp_path)
    script = winning_script()
    script["learning"] = [reply(text="The team has completed this task."),  # a part of the question, nothing new
                          reply(text="go east and go east and go east and go east and go east and go east"),
                          reply(text="General lesson: Search the neighbouring room before anything else when an "
                                     "item is missing.")]  # a label of the question's words first: what follows is kept
    model, backend, _ = scripted(by_role(script))
    memory = MemorySettings(store, episodic=False, embedder=HashingEmbedder())
    assert asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms())).won
    lessons = calls(backend, "learning")
    assert len(lessons) == 3 and "restates the question" in lessons[1].messages[-1].content
    assert "repeats the same words" in lessons[2].messages[-1].content
    assert store.concepts() == ["Search the neighbouring room before anything else when an item is missing."]
    assert '"title":"Note"' in lessons[0].messages[-1].content  # the prompt the runs before the check were asked


@pytest.mark.parametrize(("question", "text", "kept"), [
    (LESSON_QUESTION, "Which general lesson from this game would help in other games of this kind?", None),
    (LESSON_QUESTION, "General lesson from this game: Which general lesson from this game would help? Answer.", None),
    (LESSON_QUESTION, "General lesson: Open a container before searching it.", "Open a container before searching it."),
    ("One new idea:", "One new idea is to open the fridge.", "One new idea is to open the fridge."),
    ("One new idea:", "One new idea: one new idea: try the fridge", None),  # the question twice
    ("One new idea:", "Someone has a new idea: try the fridge.", "Someone has a new idea: try the fridge."),
])
def test_an_answer_keeps_its_own_words_and_is_refused_when_it_has_none(question: str, text: str,
                                                                       kept: str | None) -> None:
    from pydantic import ValidationError

    from noosphere.metaagent.forms import answer_form

    if kept is None:
        with pytest.raises(ValidationError, match="restates the question"):
            answer_form(question).model_validate({"text": text})
    else:
        assert answer_form(question).model_validate({"text": text}).text == kept


def test_a_reflection_may_say_a_phrase_again_but_not_loop() -> None:
    from pydantic import ValidationError

    from noosphere.metaagent.forms import Note

    plain = "I should go to the kitchen first, then I should go to the fridge, and I should go to the table."
    assert Note(text=plain).text == plain
    with pytest.raises(ValidationError, match="over and over"):
        Note(text="take the key and go east, " * 3)


def test_memory_recalled_when_stuck_waits_for_the_first_focus_loop_and_a_game_never_stuck_recalls_nothing(
        tmp_path: Path) -> None:
    """`at="stuck"`: stops 48 and 50 found that any recalled text before the 1.5B's first step moved it, more often
    away from the winning action; a stuck team is where moving the next step is wanted."""
    memory = MemorySettings(MemoryStore(tmp_path), conceptual=False, k=1, embedder=HashingEmbedder(), at="stuck",
                            view="planner")
    model, _, _ = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms()))  # a won game to recall
    model, backend, trace = scripted(by_role(winning_script()))
    assert asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms())).won
    assert not kinds(trace, "ma_retrieval")  # never stuck: nothing recalled
    marker = "their rooms and objects are not in this one"  # the title of the recalled games, in the planner view
    assert not any(marker in m.content for r in backend.history for m in r.messages)
    model, bare, _ = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model).play(TwoRooms()))
    # the game without memory, prompt for prompt (the memory agents not offered either); then the closing belief
    assert [r.messages for r in backend.history[:len(bare.history)]] == [r.messages for r in bare.history]
    assert not any("retrieve_memory" in m.content for r in backend.history for m in r.messages)
    script = winning_script()
    script["planning"] = [reply(plan="rest", action="wait"), reply(plan="rest", action="wait"),
                          reply(plan="east", action="go east"), reply(plan="grab", action="take key")]
    script["focus"] = [reply(situation="Waiting did nothing.", action="go east")]
    model, backend, trace = scripted(by_role(script))
    assert asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms())).won
    order = [e.kind for e in trace.events if e.kind in ("ma_focus", "ma_retrieval")]
    assert order == ["ma_focus", "ma_retrieval"]  # once, when the loop opened
    assert kinds(trace, "ma_retrieval")[0].items == ["Your task is to: take the key."]
    assert kinds(trace, "ma_retrieval")[0].step == kinds(trace, "ma_focus")[0].step
    planners = ["\n".join(m.content for m in r.messages) for r in calls(backend, "planning")]
    recalled = [marker in text for text in planners]
    assert recalled[0] is False and recalled[-1] is True  # the planner reads it from the loop on, not before
    offered = ["retrieve_memory" in r.messages[-1].content for r in calls(backend, "conscious")]
    assert offered[0] is False and any(offered)  # the memory agent joins the team with the recall
    with pytest.raises(UnknownNameError, match="unknown recall time 'later'"):
        MemorySettings(MemoryStore(tmp_path), at="later")  # type: ignore[arg-type]


def test_kin_retrieval_recalls_a_won_game_of_the_games_own_kind_and_nothing_for_another_kind(tmp_path: Path) -> None:
    memory = MemorySettings(MemoryStore(tmp_path), episodic=True, conceptual=False, method="kin", k=2,
                            embedder=HashingEmbedder())
    recalled = []
    other_kind = TwoRooms()
    other_kind.kind = "heat"
    for env in (TwoRooms(), TwoRooms(), other_kind):
        model, backend, trace = scripted(by_role(winning_script()))
        asyncio.run(MetaAgent(model, memory=memory).play(env))
        [at_start, *_] = [e.items for e in kinds(trace, "ma_retrieval")]
        recalled.append((at_start, "Memory:" in backend.history[0].messages[-1].content))
    # the first game has nothing to recall; the second its won twin; a game of another kind nothing
    assert recalled == [([], False), (["Your task is to: take the key."], True), ([], False)]


def test_the_planner_recall_view_keeps_memory_out_of_the_belief_and_episodes_without_beliefs(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    model, _, _ = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model, memory=MemorySettings(store, embedder=HashingEmbedder())).play(TwoRooms()))
    assert all(step.belief for step in store.episodes()[0].steps)
    for view in RECALL_VIEWS:
        memory = MemorySettings(store, k=1, embedder=HashingEmbedder(), view=view)
        for planner_view in PLANNER_VIEWS:
            steps = {"planning": [reply(thought="the key is east", action="go east"),
                                  reply(thought="grab it", action="take key")]} if planner_view == "percept" else {}
            model, backend, _ = scripted(by_role(winning_script() | steps))  # ReAct's step in the percept view
            assert asyncio.run(MetaAgent(model, memory=memory, planner_view=planner_view).play(TwoRooms())).won
            planning = next(r for r in backend.history if r.agent.startswith("planning"))
            planner = "\n".join(m.content for m in planning.messages)
            assert "take key" in planner and "Search the neighbouring room" in planner  # the episode and the rule
            others = ["\n".join(m.content for m in r.messages) for r in backend.history
                      if not r.agent.startswith(("planning", "motor"))]
            assert len(others) >= 2 and all(("Search the neighbouring room" in text) == (view == "team")
                                            for text in others)  # no other agent's call, in any step
            # the next step's belief writer reads the plan after the motor acted: its reasons in the team view alone
            second = next(r for r in backend.history[1:] if r.agent.startswith("conscious")).messages[-1].content
            assert "Plan: go east" in second and ("the key is east" in second) == (view == "team")
            assert ("     belief: " in planner) == (view == "team")  # the old beliefs are the paper's view's alone
            assert ("their rooms and objects are not in this one" in planner) == (view == "planner")
    state = EpisodeState("Take the key.", "You are in a hall.", ("go east",), recall="Rules: search first.",
                         recall_shared=False)
    state.plan, state.planned_action = "go east (because the rules say to search first)", "go east"
    nodes = ("conscious", "planning", "motor", "idea", "learning", "orchestrator")
    read = {node: briefed(state, node, "?")[-1].content for node in nodes}
    assert {node for node, text in read.items() if "Rules: search first." in text} == {"planning", "motor"}
    # the planner's reasons may quote the memory: the others see the planned action alone
    assert {node for node, text in read.items() if "the rules say" in text} == {"planning", "motor"}
    assert all("Plan: go east" in text for text in read.values())
    # a belief may name an object only a recalled game showed when the believer read that game (the team view)
    state.recall, state.belief = "Earlier: the key was in drawer 7.", "The key is in drawer 7."
    state.seen |= {("drawer", "1")}
    for shared in (True, False):
        state.recall_shared, state.needs_focus = shared, ""
        flag_hallucination("conscious", state)
        assert bool(state.needs_focus) == (not shared) and ("drawer 7" in state.needs_focus) == (not shared)
    with pytest.raises(UnknownNameError, match="recall view"):
        MemorySettings(store, view="everyone")  # type: ignore[arg-type]


def test_without_memory_the_orchestrator_is_not_offered_the_memory_agents() -> None:
    model, backend, _ = scripted(by_role(winning_script()))
    agent = MetaAgent(model)
    assert agent.graph.successors("conscious") == ("planning", "focus", "idea")
    assert "retrieve_memory" not in agent.graph.edges and agent.graph.default("conscious") == "planning"
    asyncio.run(agent.play(TwoRooms()))
    [first_pick, *_] = [r for r in backend.history if r.agent == "conscious+orchestrator"]
    offered = first_pick.messages[-1].content
    assert "- idea:" in offered and "retrieve_memory" not in offered and "learning" not in offered
    assert first_pick.json_schema["properties"]["next_agent"]["enum"] == ["planning", "focus", "idea"]
    with pytest.raises(ConfigError, match="no successor"):
        TransitionGraph({"conscious": ("learning",), "learning": ("conscious",)}).without("learning")


def test_a_replacement_graph_is_checked_when_it_is_built() -> None:
    with pytest.raises(ConfigError, match="conscious"):
        TransitionGraph({"planning": ("motor",), "motor": ("planning",)})
    with pytest.raises(ConfigError, match="default"):
        TransitionGraph({"conscious": ("planning",), "planning": ("conscious",)}, defaults={"conscious": "motor"})
    with pytest.raises(ConfigError, match="no edges"):
        TransitionGraph({"conscious": ("planning",)})
    loops = DEFAULT_GRAPH.loops()
    assert ["conscious", "focus", "internal_perception"] in loops
    assert ["conscious", "planning", "motor", "external_perception"] in loops  # autopilot
    assert all("motor" in loop for loop in loops if "focus" not in loop)  # every other way ends in an action


def test_react_plays_and_reflexion_retries_with_a_lesson() -> None:
    model, _, _ = scripted(by_role({"react": [reply(thought="east", action="go east"),
                                               reply(thought="take", action="take key")]}))
    assert asyncio.run(react(model, TwoRooms())).won
    model, backend, _ = scripted(by_role({
        "reflexion": [reply(thought="wait", action="wait"), reply(thought="wait", action="wait"),
                      reply(thought="east", action="go east"), reply(thought="take", action="take key")],
        "reflection": [reply(text="Waiting wastes actions; move towards the key.")]}))
    result = asyncio.run(reflexion(model, TwoRooms(), trials=3, max_actions=2))
    assert result.won
    later = [r for r in backend.history if r.agent == "reflexion"][-1]
    assert "Waiting wastes actions" in later.messages[-1].content
    [reflection] = [r for r in backend.history if r.agent == "reflection"]
    read = reflection.messages[-1].content  # the failed trial itself, not just its length
    assert "take the key" in read and "1. wait -> Nothing happens." in read and "2. wait" in read


class GuidedTwoRooms(TwoRooms):
    def reset(self) -> Reset:
        start = super().reset()
        return Reset(start.task, start.observation, start.admissible, guide="Keys open nothing here; take them.")


def test_the_worlds_guide_opens_every_agents_system_message() -> None:
    """The environment's affordances reach the meta-agent's team and ReAct alike, where they stay a cached prefix."""
    model, backend, _ = scripted(by_role(winning_script()))
    assert asyncio.run(MetaAgent(model).play(GuidedTwoRooms())).won
    systems = {r.messages[0].content for r in backend.history}
    assert len(systems) == 1 and systems.pop().endswith("\n\nKeys open nothing here; take them.")
    model, backend, _ = scripted(by_role({"react": [reply(thought="east", action="go east"),
                                                     reply(thought="take", action="take key")]}))
    assert asyncio.run(react(model, GuidedTwoRooms())).won
    assert all("Keys open nothing here" in r.messages[0].content for r in backend.history)
    model, backend, _ = scripted(by_role(winning_script()))
    asyncio.run(MetaAgent(model).play(TwoRooms()))  # no guide: the team's prompt alone
    assert {r.messages[0].content for r in backend.history} == {TEAM}


def test_textworld_bench_plays_generated_games_resumably_with_success_per_type(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    moves = [reply(thought="follow the path", action=action) for action in game.expert_actions()]
    backend = ScriptedBackend(by_agent({"react": moves}))

    def opener(model_id: str, **kwargs: object) -> Model:
        return Model(backend, **kwargs)  # type: ignore[arg-type]

    args = ["bench", "textworld", "--system", "react", "--per-challenge", "1", "--limit", "1", "--games-dir",
            str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"]
    code, _, err = invoke(args, opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert row["correct"] and row["task_type"] == "coin_collector" and row["actions"] == len(moves)
    report = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert report["success_rate"] == report["coin_collector_success_rate"] == 100.0
    assert report["coin_collector_games"] == 1


def test_game_runs_created_apart_are_played_together_each_in_order_with_its_own_report(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    moves = [reply(thought="follow the path", action=action) for action in game.expert_actions()]

    def opener(model_id: str, **kwargs: object) -> Model:  # each run opens its own model, so its own script
        return Model(ScriptedBackend(by_agent({"react": list(moves)})), **kwargs)  # type: ignore[arg-type]

    folders = []
    for out in ("a", "b"):
        code, printed, err = invoke(["bench", "textworld", "--system", "react", "--per-challenge", "1", "--limit",
                                     "1", "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / out),
                                     "--create-only"], opener)
        assert code == 0, err
        [folder] = list((tmp_path / out).iterdir())
        assert str(folder) in printed and not (folder / "items.jsonl").exists()
        folders.append(folder)
    before = [(f / "result.json").read_bytes() for f in folders]

    def refusing(model_id: str, **kwargs: object) -> Model:  # a model that cannot be opened: a usage error
        raise UsageError(f"no model {model_id} here")

    code, _, err = invoke(["bench", "together", *map(str, folders), "--no-cache"], refusing)
    assert code == 2 and "no model" in err
    assert [(f / "result.json").read_bytes() for f in folders] == before  # still "created", as `--resume` leaves it
    code, _, err = invoke(["bench", "together", *map(str, folders), "--no-cache"], opener)
    assert code == 0, err
    for folder in folders:
        [row] = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
        assert row["correct"] and row["actions"] == len(moves)
        assert (folder / "report.md").read_text().startswith("# TextWorld tier 1")


@pytest.mark.parametrize("parallel", [1, 2])
def test_bench_together_plays_a_runs_games_at_once_only_where_no_memory_carries(tmp_path: Path, parallel: int) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.bench.games import in_order
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    games = textworld_games(tmp_path / "games", tier=1, per_challenge=2, challenges=("coin_collector",))
    moves = {game.name: [reply(thought="on", action=a) for a in game.expert_actions()] for game in games}

    def play(request: Any) -> str:  # each game's next expert move, told apart by its task
        asked = " ".join(" ".join(m.content.split()) for m in request.messages if isinstance(m.content, str))
        game = next(g for g in games if " ".join(g.reset().task.split())[:80] in asked)
        return moves[game.name].pop(0)

    invoke(["bench", "textworld", "--system", "react", "--challenges", "coin_collector", "--per-challenge", "2",
            "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "react"), "--create-only"],
           lambda m, **k: None)
    [folder] = (tmp_path / "react").iterdir()
    code, _, err = invoke(["bench", "together", str(folder), "--no-cache", "--parallel", str(parallel)],
                          lambda m, **k: Model(ScriptedBackend(play, latency_s=0.05), **k))
    assert code == 0, err
    kinds = [json.loads(line)["kind"] for line in (folder / "trace.jsonl").read_text().splitlines()]
    bench = [k for k in kinds if k.startswith("bench_item")]
    assert bench == (["bench_item_started"] * 2 + ["bench_item_finished"] * 2 if parallel == 2 else
                     ["bench_item_started", "bench_item_finished"] * 2)
    assert all(json.loads(line)["correct"] for line in (folder / "items.jsonl").read_text().splitlines())
    assert in_order({"system": "metaagent", "memory": "episodic"}) and not in_order({"system": "metaagent",
                                                                                     "memory": "none"})
    assert not in_order({"system": "react", "memory": "both"})  # a baseline's config may name a memory it ignores


def created_react_runs(tmp_path: Path, *outs: str) -> list[Path]:
    """One ReAct run folder (`--create-only`, one coin collector) under each of `outs`, to be played together."""
    from tests.test_cli import invoke

    folders = []
    for out in outs:
        invoke(["bench", "textworld", "--system", "react", "--per-challenge", "1", "--limit", "1", "--games-dir",
                str(tmp_path / "games"), "--out", str(tmp_path / out), "--create-only"], lambda m, **k: None)
        folders.extend((tmp_path / out).iterdir())
    return folders


def test_a_run_done_before_the_others_are_interrupted_is_reported_complete(tmp_path: Path) -> None:
    """Ctrl-C (or TERM) while one run still plays: the run whose games were all scored is finished "ok" with a
    whole report, the other "interrupted" with a partial one."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    moves = [reply(thought="follow the path", action=action) for action in game.expert_actions()]

    def stop(request: Any) -> Any:
        raise KeyboardInterrupt

    def opener(model_id: str, **kwargs: Any) -> Model:
        if "slow" in str(kwargs["trace"].path):
            return Model(ScriptedBackend(stop, latency_s=2.0), **kwargs)
        return Model(ScriptedBackend(by_agent({"react": list(moves)})), **kwargs)

    folders = created_react_runs(tmp_path, "quick", "slow")
    code, _, _ = invoke(["bench", "together", *map(str, folders), "--no-cache"], opener)
    assert code == 130
    quick, slow = (json.loads((folder / "result.json").read_text()) for folder in folders)
    assert quick["status"] == "ok" and "partial" not in (folders[0] / "report.md").read_text()
    assert slow["status"] == "interrupted" and "partial: interrupted" in (folders[1] / "report.md").read_text()


def test_runs_stopped_while_their_models_load_are_finished_as_interrupted(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    def opener(model_id: str, **kwargs: Any) -> Model:
        if "second" in str(kwargs["trace"].path):
            raise KeyboardInterrupt  # Ctrl-C (or TERM) while the second run's model loads
        return Model(ScriptedBackend([]), **kwargs)

    folders = created_react_runs(tmp_path, "first", "second")
    code, _, _ = invoke(["bench", "together", *map(str, folders), "--no-cache"], opener)
    assert code == 130
    assert [json.loads((folder / "result.json").read_text())["status"] for folder in folders] == [
        "interrupted", "interrupted"]


def test_a_run_that_cannot_start_fails_alone_and_the_others_play_on(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.envs import textworld_games
    from noosphere.errors import ModelError
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    moves = [reply(thought="follow the path", action=action) for action in game.expert_actions()]
    folders = created_react_runs(tmp_path, "broken", "fine")

    def opener(model_id: str, **kwargs: Any) -> Model:
        if "broken" in str(kwargs["trace"].path):
            raise ModelError(model_id, "its weights are missing")
        return Model(ScriptedBackend(by_agent({"react": list(moves)})), **kwargs)

    code, _, err = invoke(["bench", "together", *map(str, folders), "--no-cache"], opener)
    assert code != 0 and "its weights are missing" in err
    broken, fine = (json.loads((folder / "result.json").read_text()) for folder in folders)
    assert broken["status"] == "failed" and "its weights are missing" in broken["error"]
    assert fine["status"] == "ok" and (folders[1] / "report.md").exists()
    code, _, err = invoke(["bench", "together", str(folders[1]), str(folders[1])], opener)
    assert code == 2 and "given twice" in err


def test_bench_together_names_a_run_it_cannot_play(tmp_path: Path) -> None:
    from noosphere.runs import Run
    from tests.test_cli import invoke

    with Run.create(tmp_path, command="bench", config={"benchmark": "gsm8k"}) as run:
        run.finish({}, status="created")
    code, _, err = invoke(["bench", "together", str(run.directory)], lambda model_id, **kwargs: None)
    assert code == 2 and "is a gsm8k run" in err and "alfworld and textworld" in err


def test_games_with_memory_refuse_to_run_in_parallel(tmp_path: Path) -> None:
    from tests.test_cli import invoke

    args = ["bench", "textworld", "--system", "metaagent", "--memory", "episodic", "--parallel", "2",
            "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--quiet"]
    code, _, err = invoke(args, lambda model_id, **kwargs: None)
    assert code == 2 and "carries from one game to the next" in err
    assert not (tmp_path / "runs").exists()  # refused before a run folder was made


def test_transition_matrices_count_moves_over_games_and_are_drawn(tmp_path: Path) -> None:
    from noosphere.bench.transitions import probabilities, transition_counts, write_transition_figures

    rows = [{"moves": [["conscious", "planning"], ["planning", "motor"], ["motor", "conscious"]]},
            {"moves": [["conscious", "planning"], ["conscious", "focus"]]}, {"moves": []}]
    agents, counts = transition_counts(rows)
    assert agents == ["conscious", "planning", "motor", "focus"]
    assert counts[0].tolist() == [0, 2, 0, 1] and counts.sum() == 5
    normalised = probabilities(counts)
    assert normalised[0].tolist() == pytest.approx([0, 2 / 3, 0, 1 / 3])
    assert normalised[3].tolist() == [0, 0, 0, 0]  # focus never handed on: a row of zeros, not a division by zero
    written = write_transition_figures(tmp_path, rows)
    assert [p.name for p in written] == ["transitions.json", "transition_counts.png", "transition_probabilities.png"]
    assert json.loads(written[0].read_text())["counts"] == counts.tolist()
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written[1:])
    assert write_transition_figures(tmp_path / "none", [{"moves": []}]) == []  # baselines: nothing to draw


def test_a_belief_that_gives_up_or_invents_objects_goes_round_the_focus_loop_once_per_timestep() -> None:
    script = winning_script()
    script["conscious"] = [belief("The key is nowhere; this task is unsolvable."),
                           belief("Stuck again: the task cannot be completed."), belief()]
    script["focus"] = [reply(situation="The key is east.", action="go east")]
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model).play(TwoRooms()))
    assert result.won and result.focus_loops == 1  # the second give-up at the same timestep is not looped again
    caught = kinds(trace, "ma_focus")[0]
    assert "conscious agent's text" in caught.reason and "cannot be done" in caught.reason
    [focus_call] = [r for r in backend.history if r.agent == "focus"]
    assert "cannot be done" in focus_call.messages[-1].content


def test_off_task_text_is_judged_against_what_the_game_has_shown() -> None:
    seen = {("drawer", "1"), ("drawer", "2"), ("fridge", "1")}
    assert off_task("I will open fridge 3 next.", won=False, seen=seen) == (
        "it names objects the game never showed: fridge 3")
    assert off_task("Drawer 2 is empty; at timestep 4 I try fridge 1.", won=False, seen=seen) is None
    assert off_task("The task is complete.", won=False, seen=seen) == "it claims a success the game has not granted"
    assert off_task("The task is complete.", won=True, seen=seen) is None
    assert off_task("The task is not yet complete; it will be done once the key is taken.", won=False,
                    seen=seen) is None
    assert "cannot be done" in off_task("I give up, the door is locked.", won=False, seen=seen)
    assert off_task("Don't give up: the key cannot be found until drawer 2 is open.", won=False, seen=seen) is None
    assert off_task("The task cannot be completed without the key.", won=False, seen=seen) is None
    assert off_task("I don't think the task has been completed.", won=False, seen=seen) is None  # a contraction
    assert off_task("It isn't true that the task is complete.", won=False, seen=seen) is None
    # the belief's "Done" part reports progress: half a task done is no claim of success
    assert off_task("At: drawer 1. Done: the first part of the task is done, holding the key.", won=False,
                    seen=seen) is None
    assert off_task("At: drawer 1. Done: the task is done.", won=False, seen=seen) == (
        "it claims a success the game has not granted")


def test_an_agent_that_keeps_failing_gets_one_focus_loop_per_timestep_then_the_team_acts() -> None:
    script = winning_script()
    script["conscious"] = ["not json at all"]  # every belief fails to parse: the conscious agent always forfeits
    script["focus"] = [reply(situation="Still west.", action="go east")]
    model, _, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, max_actions=2).play(TwoRooms()))
    assert result.won and result.actions == 2
    loops = kinds(trace, "ma_focus")
    assert [f.step for f in loops] == [0, 1] and all("conscious gave no usable output" in f.reason for f in loops)
    assert [(o.step, o.recovered) for o in kinds(trace, "ma_focus_outcome")] == [(1, True), (2, True)]


@pytest.mark.parametrize(("known", "pick"), [
    ("The task is complete.", "focus"),  # a belief that claims success, then asks for the focus loop again
    ("The task is complete.", "motor"),  # ... or picks outside the graph
    ("the key may be east", "focus"),  # a sound belief whose orchestrator keeps picking the focus loop
])
def test_the_focus_loop_runs_at_most_once_per_timestep_whoever_asks_for_it(known: str, pick: str) -> None:
    """The 0.5B model on TextWorld: the conscious agent's call kept picking `focus` after the focus loop had
    replayed the observation, and the team went round it until the transition cap without one action."""
    script = {**winning_script(orchestrator=[reply(next="focus")]), "conscious": [belief(known, pick=pick)],
              "focus": [reply(situation="The key is near.", action="look")]}
    model, backend, trace = scripted(by_role(script))
    agent = MetaAgent(model, max_actions=2)
    result = asyncio.run(agent.play(TwoRooms()))
    assert result.won and result.actions == 2 and result.transitions < agent.max_transitions
    into_focus = [t.step for t in kinds(trace, "ma_transition") if t.target == "focus"]
    assert sorted(set(into_focus)) == into_focus and into_focus  # entered, and never twice at one timestep
    assert len(backend.history) <= 4 * result.actions  # at worst: belief, focus, belief again, plan and action
    refused = [t for t in kinds(trace, "ma_transition") if t.source == "conscious" and not t.valid]
    assert all(t.target == "planning" and t.by == "orchestrator" for t in refused)
    if pick == "focus":  # after the loop the conscious agent is no longer offered it
        offered = [r.json_schema["properties"]["next_agent"]["enum"] for r in calls(backend, "orchestrator")]
        assert ["planning", "idea"] in offered and refused


def test_each_memory_mode_stores_only_what_it_keeps(tmp_path: Path) -> None:
    for episodic, conceptual in ((True, False), (False, True)):
        store = MemoryStore(tmp_path / f"{episodic}-{conceptual}")
        memory = MemorySettings(store, episodic=episodic, conceptual=conceptual, embedder=HashingEmbedder())
        model, backend, _ = scripted(by_role(winning_script()))
        asyncio.run(MetaAgent(model, memory=memory).play(TwoRooms()))
        assert len(store.episodes()) == int(episodic)
        assert len(store.concepts()) == int(conceptual)
        assert any(r.agent == "learning" for r in backend.history) == conceptual


def test_a_graph_file_replaces_the_default_and_bad_agents_fail_before_the_run(tmp_path: Path) -> None:
    autopilot = tmp_path / "autopilot.yaml"
    autopilot.write_text("edges:\n  conscious: [planning]\n  planning: [motor]\n  motor: [external_perception]\n"
                         "  external_perception: [conscious]\n")
    graph = TransitionGraph.from_file(autopilot)
    assert TransitionGraph.from_data(graph.to_data()) == graph
    model, backend, _ = scripted(by_role(winning_script()))
    assert asyncio.run(MetaAgent(model, graph=graph).play(TwoRooms())).won
    assert not any(r.agent == "orchestrator" for r in backend.history)  # one successor each: nothing to choose
    typo = TransitionGraph({"conscious": ("planer",), "planer": ("conscious",)})
    with pytest.raises(UnknownNameError, match="planning"):
        MetaAgent(model, graph=typo)
    no_action = TransitionGraph({"conscious": ("planning",), "planning": ("conscious",)})
    with pytest.raises(ConfigError, match="could never act"):
        MetaAgent(model, graph=no_action)
    with pytest.raises(ConfigError, match="edges"):
        TransitionGraph.from_data({"conscious": ["planning"]})


def test_textworld_bench_runs_the_metaagent_through_the_memory_loop_and_keeps_its_memory(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from noosphere.llm.types import Request
    from noosphere.memory import MemoryStore
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    expert = list(game.expert_actions())
    picked: list[str] = []

    def pick(offered: list[str]) -> str:  # the extended loop once, then the autopilot
        choice = next((a for a in ("retrieve_memory", "idea") if a in offered and not picked), "planning")
        picked.append(choice)
        return choice if choice in offered else offered[0]

    def play(request: Request) -> str:
        options = (request.json_schema or {}).get("properties", {})
        if request.agent == "orchestrator":  # its own call, after the retrieve-memory agent
            return reply(next=pick(options["next"]["enum"]))
        if request.agent == "conscious+orchestrator":  # the pick rides on the belief's call
            return belief("I follow the path", pick=pick(options["next_agent"]["enum"]))
        step = len(calls(backend, "motor")) - 1
        action = expert[min(step, len(expert) - 1)]
        return {"conscious": belief("I follow the path"), "planning+motor": reply(plan="r", action=action),
                "motor": reply(action=action)}.get(request.agent or "", reply(text="Keep going along the path."))

    backend = ScriptedBackend(play)
    args = ["bench", "textworld", "--system", "metaagent", "--memory", "episodic", "--per-challenge", "1",
            "--limit", "1", "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--no-cache",
            "--quiet"]
    code, _, err = invoke(args, lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert row["correct"] and row["actions"] == len(expert)
    moves = {tuple(move) for move in row["moves"]}
    assert {("conscious", "retrieve_memory"), ("retrieve_memory", "idea"), ("idea", "planning")} <= moves
    assert picked[0] == "retrieve_memory" and not any(r.agent == "orchestrator" for r in backend.history)
    # episodic memory only: the learning agent is left out, so the graph alone leads from retrieve-memory to idea
    counts = json.loads((run_dir / "transitions.json").read_text())
    assert "retrieve_memory" in counts["agents"] and (run_dir / "transition_probabilities.png").exists()
    hops = {(a, b): n for a, row_ in zip(counts["agents"], counts["counts"], strict=True)
            for b, n in zip(counts["agents"], row_, strict=True)}
    autopilot = [("conscious", "planning"), ("planning", "motor"), ("motor", "external_perception"),
                 ("external_perception", "conscious")]  # the loop, role by role, though two roles share a call
    assert [hops[hop] for hop in autopilot] == [len(expert) - 1, *[len(expert)] * 3] and row["focus_loops"] == 0
    [episode] = MemoryStore(run_dir / "memory").episodes()  # the episode survives in the run's memory
    assert episode.won and [s.action for s in episode.steps[1:]] == expert


def test_the_percept_history_window_moves_in_steps_so_prompts_share_a_prefix() -> None:
    from noosphere.metaagent import EpisodeState

    state = EpisodeState("Your task is to: take the key.", "You are in the west room.", WEST)
    prompts = []
    for t in range(1, 15):
        state.record("wait", f"Nothing happens at {t}.", WEST, False, False)
        prompts.append(state.percept(recent=5))
    history_of = [p.split("Admissible actions:")[0] for p in prompts]
    assert "\n6. wait" in history_of[12] and "\n5. wait" not in history_of[12]  # t = 13 shows steps 6 to 13
    assert history_of[13].startswith(history_of[12])  # t = 14 extends the same window
    assert prompts[-1].endswith("Actions taken: 14.")  # what changes every step comes last


def test_the_conscious_agent_reads_its_dated_belief_before_the_result_it_must_update_it_with() -> None:
    """Placed last, the old belief was copied instead of updated: it now comes before the percept, dated."""
    model, backend, _ = scripted(by_role({**winning_script(), "conscious": [
        belief("In the west room; the key may be east."), belief("In the east room with the key.")]}))
    asyncio.run(MetaAgent(model).play(TwoRooms()))
    second = calls(backend, "conscious")[1].messages[1].content
    dated, rest = second.split("Belief state at timestep 0: At: the west room. Done: nothing yet. "
                               "Known: In the west room; the key may be east. Next: find the key.", 1)
    assert "Your task is to: take the key." in dated and "Current observation: You are in the east room" in rest
    assert "Write the belief state for timestep 1" in rest and "result of the last action" in rest


def test_on_the_percept_view_the_planner_is_asked_what_react_is_asked_not_the_belief_or_its_last_plan() -> None:
    """`planner_view="percept"`: the conscious agent still writes the belief (the orchestrator's pick, the focus
    checks and episodic memory use it), but the planner is asked ReAct's step, word for word."""
    script = {**winning_script(), "conscious": [belief("the key is surely in the west room")] * 2,
              "planning": [reply(thought="the key is east", action="go east"),
                           reply(thought="grab", action="take key")]}
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, planner_view="percept").play(TwoRooms()))
    assert result.won and [r.agent for r in backend.history] == ["conscious+orchestrator", "planning+motor"] * 2
    planner = calls(backend, "planning")
    assert all("Belief state" not in r.messages[1].content and "surely" not in r.messages[1].content
               for r in planner)
    assert "Plan:" not in planner[1].messages[1].content
    assert "Plan: go east (because the key is east)" in calls(backend, "conscious")[1].messages[1].content
    assert kinds(trace, "ma_belief")[0].belief.endswith("Next: find the key.")
    react_model, react_backend, _ = scripted(lambda request: script["planning"][len(react_backend.history) - 1])
    asyncio.run(react(react_model, TwoRooms()))
    assert [r.messages for r in planner] == [r.messages for r in react_backend.history]  # ReAct's prompts exactly
    assert [r.json_schema for r in planner] == [r.json_schema for r in react_backend.history]
    # the team's view, the paper's, is the default: there the planner reads the belief and writes a plan
    model, backend, _ = scripted(by_role({**script, "planning": winning_script()["planning"]}))
    asyncio.run(MetaAgent(model).play(TwoRooms()))
    assert "surely in the west room" in calls(backend, "planning")[0].messages[1].content
    with pytest.raises(UnknownNameError, match="planner view"):
        MetaAgent(model, planner_view="belief")  # type: ignore[arg-type]


def test_the_percept_view_puts_memory_before_reacts_percept_and_the_focus_note_last() -> None:
    state = EpisodeState("Your task is to: take the key.", "You are in the west room.", WEST)
    state.recall, state.focus_note, state.plan, state.belief = "keys lie east", "Go east.", "wait (because)", "lost"
    prompt = planner_on_percept(state)[1].content
    assert prompt.startswith("Memory: keys lie east\n\nYour task is to: take the key.")
    assert prompt.endswith("Current observation: You are in the west room.\nActions taken: 0.\n\nFocus: Go east.\n\n"
                           "Next step:")
    assert "wait (because)" not in prompt and "lost" not in prompt


def test_runs_played_together_share_one_call_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench together` opens one cache for its runs, so identical calls in flight at once are generated once."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    from noosphere.cli import bench_run
    from noosphere.envs import textworld_games
    from noosphere.llm import Model, ScriptedBackend
    from noosphere.llm.cache import CallCache
    from tests.test_cli import invoke

    [game] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    moves = [reply(thought="follow the path", action=action) for action in game.expert_actions()]
    opened: list[object] = []
    monkeypatch.setattr(bench_run, "open_cache", lambda no_cache: opened.append(CallCache(tmp_path / "c.sqlite"))
                        or opened[-1])
    caches: list[object] = []

    def opener(model_id: str, **kwargs: object) -> Model:
        caches.append(kwargs.get("cache"))
        return Model(ScriptedBackend(by_agent({"react": list(moves)})), **kwargs)  # type: ignore[arg-type]

    folders = []
    for out in ("a", "b"):
        code, _, err = invoke(["bench", "textworld", "--system", "react", "--per-challenge", "1", "--limit", "1",
                               "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / out), "--no-cache",
                               "--create-only"], opener)
        assert code == 0, err
        folders += list((tmp_path / out).iterdir())
    caches.clear()
    code, _, err = invoke(["bench", "together", *map(str, folders)], opener)
    assert code == 0, err
    # one cache shared by both runs, behind each run's own copy of its calls (`calls.sqlite` in its folder)
    assert len(opened) == 1 and [cache.shared for cache in caches] == [opened[0], opened[0]]  # type: ignore[attr-defined]
    assert sorted(cache.path.parent for cache in caches) == sorted(folders)  # type: ignore[attr-defined]


def test_on_the_percept_view_a_motor_asked_alone_reads_reacts_prompt_not_the_belief() -> None:
    """The planner's call fails (no admissible action, retried): the motor then chooses alone, on ReAct's prompt."""
    script = {**winning_script(), "conscious": [belief("the key is surely in the west room")],
              "planning": [reply(thought="?", action="fly")] * 3 + [reply(thought="grab", action="take key")],
              "motor": [reply(action="go east")], "focus": [reply(situation="The key is east.", action="go east")]}
    model, backend, _ = scripted(by_role(script))
    asyncio.run(MetaAgent(model, planner_view="percept", max_actions=2).play(TwoRooms()))
    [alone] = [r for r in backend.history if r.agent == "motor"]
    assert alone.messages[0].content.startswith("You play a text game") and "JSON schema" in alone.messages[0].content
    assert "surely" not in alone.messages[1].content and alone.messages[1].content.endswith("Next step:")
    assert "thought" not in json.dumps(alone.json_schema)


def test_a_focus_loop_the_orchestrator_picks_is_counted_and_its_note_does_not_outlive_the_next_action() -> None:
    """Only hallucinations used to count as focus loops: a loop the orchestrator chose was never measured, and the
    focus agent's note ("... Next action: X") stayed in every later prompt."""
    script = {**winning_script(), "conscious": [belief(pick="focus"), belief()],
              "focus": [reply(situation="The key is east.", action="go east")]}
    model, backend, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, max_actions=2).play(TwoRooms()))
    assert result.won and result.focus_loops == 1 and result.focus_recoveries == 1
    [loop] = kinds(trace, "ma_focus")
    assert loop.step == 0 and loop.reason == "the orchestrator picked it"
    assert [(o.step, o.loop, o.recovered) for o in kinds(trace, "ma_focus_outcome")] == [(1, 1, True)]
    later = [r for r in calls(backend, "planning")][-1]  # the plan after the advised action no longer reads it
    assert "Next action: go east" not in later.messages[-1].content


def test_a_flag_with_no_way_into_the_focus_loop_is_answered_by_the_next_action() -> None:
    """An idea that gives up is flagged where the graph offers no focus edge (idea leads to planning): the action
    that follows did something, so the conscious agent after it is not sent round the loop for a stale flag."""
    script = {**winning_script(), "conscious": [belief(pick="idea"), belief()],
              "idea": [reply(text="The task cannot be done, give up.")]}
    model, _, trace = scripted(by_role(script))
    result = asyncio.run(MetaAgent(model, max_actions=2).play(TwoRooms()))
    assert result.won and result.focus_loops == 0 and not kinds(trace, "ma_focus")
    hops = [(t.source, t.target) for t in kinds(trace, "ma_transition")]
    assert ("conscious", "idea") in hops and ("conscious", "focus") not in hops


@pytest.mark.parametrize(("mode", "offered"), [
    ((False, False), ("planning", "focus", "idea")),
    ((True, False), ("planning", "focus", "retrieve_memory", "idea")),
    ((False, True), ("planning", "focus", "idea", "learning")),
    ((True, True), ("planning", "focus", "retrieve_memory", "idea", "learning")),
])
def test_each_memory_mode_offers_only_the_memory_agents_it_uses(tmp_path: Path, mode: tuple[bool, bool],
                                                                 offered: tuple[str, ...]) -> None:
    episodic, conceptual = mode
    memory = (MemorySettings(MemoryStore(tmp_path), episodic=episodic, conceptual=conceptual,
                             embedder=HashingEmbedder()) if episodic or conceptual else None)
    agent = MetaAgent(scripted(by_role(winning_script()))[0], memory=memory)
    assert agent.graph.successors("conscious") == offered
    assert ("record_memory" in agent.graph.edges) == conceptual


def test_a_graph_that_acts_only_through_a_memory_agent_fails_where_that_agent_is_left_out(tmp_path: Path) -> None:
    from noosphere.bench.games import load_graph

    detour = tmp_path / "detour.yaml"
    detour.write_text("edges:\n  conscious: [focus, retrieve_memory]\n  retrieve_memory: [planning]\n"
                      "  planning: [motor]\n  motor: [external_perception]\n  external_perception: [conscious]\n"
                      "  focus: [internal_perception]\n  internal_perception: [conscious]\n")
    assert load_graph(detour, "both") and load_graph(detour, "episodic")
    for mode in ("none", "conceptual"):
        with pytest.raises(ConfigError, match="could never act"):
            load_graph(detour, mode)
    with pytest.raises(ConfigError, match="could never act"):
        MetaAgent(scripted(by_role(winning_script()))[0], graph=TransitionGraph.from_file(detour))


def test_a_games_run_replays_a_game_killed_after_it_was_stored_from_the_memory_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The episode and its rules are stored when the game ends, its result row after: a kill in between replays
    the game, which must neither recall itself nor be stored twice."""
    from noosphere.bench import games

    monkeypatch.setattr(games, "default_embedder", HashingEmbedder)
    config = {"system": "metaagent", "memory": "both", "retrieve": "random", "k": 4, "max_actions": 4, "seed": 0}
    store = MemoryStore(tmp_path)
    store.add_game(None, ["A rule from the game before this one, which must stay."], "earlier-game")
    for _ in range(2):  # the first attempt stored and was killed; the replay
        model, _, trace = scripted(by_role(winning_script()))
        assert asyncio.run(games.player(model, config, tmp_path)(TwoRooms())).won
        recalled = {e.memory: e.items for e in kinds(trace, "ma_retrieval")}
        assert recalled["episodic"] == []  # the killed attempt's episode is not this game's memory
    assert [e.game for e in store.episodes()] == ["two-rooms"]
    assert store.concepts() == ["A rule from the game before this one, which must stay.",
                                "Search the neighbouring room before anything else when an item is missing."]


def test_reflexions_costs_are_per_action_of_every_trial() -> None:
    from noosphere.bench.games import summarise

    model, backend, _ = scripted(by_role({
        "reflexion": [reply(thought="wait", action="wait"), reply(thought="wait", action="wait"),
                      reply(thought="east", action="go east"), reply(thought="take", action="take key")],
        "reflection": [reply(text="Waiting wastes actions; move towards the key.")]}))
    result = asyncio.run(reflexion(model, TwoRooms(), trials=3, max_actions=2))
    assert result.won and result.actions == 2 and result.actions_taken == 4
    row = {"correct": True, "actions": result.actions, "actions_taken": result.actions_taken,
           "calls": len(backend.history), "tokens": 0}
    assert summarise([row])["calls_per_action"] == 1.25  # 5 calls (4 steps, 1 reflection) over 4 actions
    assert summarise([row])["actions_per_success"] == 2  # the winning trial's
    assert StepCost.of(model, [result]).calls_per_action == 1.25  # game_step_cost's figure too


def test_a_failed_call_is_traced_with_what_was_done_instead() -> None:
    """A forfeited turn leaves a `ma_forfeit` event naming the agent, the error and the fallback: ReAct's step plays
    `look`, a reflection that failed teaches nothing, and the game goes on."""
    model, _, trace = scripted(by_role({"reflexion": [ModelError("scripted", "boom"), reply(thought="w", action="wait"),
                                                      reply(thought="east", action="go east"),
                                                      reply(thought="take", action="take key")],
                                        "reflection": [ModelError("scripted", "down")]}))
    result = asyncio.run(reflexion(model, TwoRooms(), trials=2, max_actions=2))
    assert result.won and [a.action for a in kinds(trace, "ma_action")][:2] == ["look", "wait"]
    forfeits = kinds(trace, "ma_forfeit")
    assert [(f.step, f.agent, f.instead) for f in forfeits] == [(1, "reflexion", "look"),
                                                                (2, "reflection", "no lesson from this trial")]
    assert "boom" in forfeits[0].error and "down" in forfeits[1].error


def test_rules_are_clustered_with_the_runs_seed_and_memory_needs_a_folder(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.bench import games
    from noosphere.metaagent import recollection

    seeds: list[int] = []
    monkeypatch.setattr(recollection, "sleep", lambda store, embedder, *, seed=0: seeds.append(seed))
    memory = MemorySettings(MemoryStore(tmp_path), episodic=False, conceptual=True, embedder=HashingEmbedder())
    model = scripted(by_role(winning_script()))[0]
    asyncio.run(MetaAgent(model, memory=memory, seed=7, max_actions=2).play(TwoRooms()))
    assert seeds == [7]
    config = {"system": "metaagent", "memory": "both", "retrieve": "random", "k": 4, "max_actions": 4, "seed": 0}
    with pytest.raises(UsageError, match="without --cluster"):  # a worker's run has no folder to keep it in
        games.player(model, config, None)
    with pytest.raises(UnknownNameError, match="unknown system 'reactt'"):
        games.player(model, {**config, "system": "reactt"}, tmp_path)
