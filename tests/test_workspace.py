"""The global workspace on the scripted model: each phase, threshold and ablation, via trace events."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import pytest

from noosphere.errors import CapabilityError, UnknownNameError, UsageError
from noosphere.llm import Capabilities, Model, ScriptedBackend
from noosphere.trace import Trace
from noosphere.workspace import (
    Chunk,
    FreeProcessor,
    LinkGraph,
    LinkPolicy,
    Observation,
    Perception,
    ProcessorMemory,
    ShortTermMemory,
    WeightRule,
    Workspace,
    WorkspaceSettings,
    compete,
    sensory,
)
from tests.helpers import by_agent, chunk_reply, stm_reply


def chunk(name: str, weight: float) -> Chunk:
    return Chunk(name, 1, f"{name} gist", "", weight, 0.0, 0.0, 0.0)


def test_weight_rule_is_one_one_point_two() -> None:
    assert WeightRule()(0.5, 0.5, 1.0) == pytest.approx(1.2)
    assert WeightRule(relevance=2, confidence=0, surprise=0)(0.4, 1, 1) == pytest.approx(0.8)


def test_argmax_takes_the_heaviest_and_breaks_ties_by_seed() -> None:
    chunks = [chunk("a", 0.3), chunk("b", 0.9), chunk("c", 0.9)]
    assert compete(chunks[:2], "argmax", random.Random(0)).winner.processor == "b"
    winners = {compete(chunks, "argmax", random.Random(seed)).winner.processor for seed in range(20)}
    assert winners == {"b", "c"}
    assert (compete(chunks, "argmax", random.Random(7)).winner
            == compete(chunks, "argmax", random.Random(7)).winner)


def test_uptree_reaches_stm_in_proportion_to_weight_whatever_the_position() -> None:
    weights = {"a": 0.5, "b": 1.0, "c": 2.0, "d": 0.25, "e": 1.25}
    total = sum(weights.values())
    draws = 20000
    for order in (list(weights), list(reversed(weights)), ["c", "a", "e", "b", "d"]):
        rng = random.Random(11)
        chunks = [chunk(name, weights[name]) for name in order]
        wins = Counter(compete(chunks, "uptree", rng).winner.processor for _ in range(draws))
        for name, weight in weights.items():
            expected = weight / total
            # 4 standard deviations of a binomial proportion: fails by chance about once in 15,000 runs.
            tolerance = 4 * (expected * (1 - expected) / draws) ** 0.5
            assert abs(wins[name] / draws - expected) < tolerance, (order, name, wins)
    result = compete([chunk(n, w) for n, w in weights.items()], "uptree", random.Random(1))
    assert max(m["depth"] for m in result.matches) == 3  # ceil(log2 5)
    rng = random.Random(5)  # no weight at all: each of three chunks wins a third of the time, not c a half
    wins = Counter(compete([chunk(n, 0.0) for n in "abc"], "uptree", rng).winner.processor for _ in range(6000))
    assert all(abs(wins[n] / 6000 - 1 / 3) < 4 * (2 / 9 / 6000) ** 0.5 for n in "abc"), wins


def test_link_rule_thresholds_and_weighted_links() -> None:
    graph = LinkGraph(LinkPolicy(create_above=0.8, remove_below=0.2))
    assert graph.update("w", "p", 0.85).change == "created"
    assert graph.update("w", "p", 0.5) is None
    assert graph.update("w", "w", 0.99) is None
    assert graph.update("w", "p", 0.1).change == "removed" and len(graph) == 0
    assert graph.update("w", "p", 0.8) is None  # strictly above
    weighted = LinkGraph(LinkPolicy(weighted=True, delta=0.4, decay=0.5, keep_above=0.1))
    assert weighted.update("w", "p", 0.9).weight == pytest.approx(0.4)
    assert weighted.update("w", "p", 0.9).change == "strengthened"  # 0.8
    assert weighted.update("w", "p", 0.1).change == "weakened"  # 0.4
    assert [(c.change, round(c.weight, 2)) for c in weighted.decay()] == [("decayed", 0.2)]
    assert [c.change for c in weighted.decay()] == ["removed"]  # 0.1 is not above keep_above


def make_workspace(script: dict[str, list[object]], settings: WorkspaceSettings | None = None,
                   names: tuple[str, ...] = ("a", "b", "c"), latency_s: float = 0.0,
                   ) -> tuple[Workspace, ScriptedBackend, Trace]:
    backend = ScriptedBackend(by_agent(script), latency_s=latency_s)
    trace = Trace(None)
    model = Model(backend, trace=trace)
    observation_views = names
    processors = [sensory(name, model, view) for name, view in zip(names, observation_views, strict=True)]
    return Workspace(processors, ShortTermMemory(model), settings), backend, trace


OBSERVATION = Observation.of({"a": "view of a", "b": "view of b", "c": "view of c"})


def test_confident_first_answer_stops_after_one_iteration_and_cancels_linking() -> None:
    workspace, backend, trace = make_workspace({
        "a": [chunk_reply("A thinks yes", "what does b see?", 0.9, 0.9)],
        "b": [chunk_reply("B unsure", "", 0.5, 0.5)],
        "c": [chunk_reply("C unsure", "", 0.4, 0.4)],
        "stm": [stm_reply("yes", 0.95)],
    })
    result = workspace.run_sync("is it so?", OBSERVATION)
    assert (result.answer, result.confidence, result.iterations, result.stopped_by) == ("yes", 0.95, 1, "confidence")
    [competition] = trace.of_kind("ws_competition")
    assert competition.winner == "a" and competition.weights["a"] == pytest.approx(1.8)
    [stm] = trace.of_kind("ws_stm")
    assert stm.stop and stm.threshold == 0.8
    stm_request = next(r for r in backend.history if r.agent == "stm")
    assert "A thinks yes" in stm_request.messages[-1].content
    assert not trace.of_kind("ws_link") and not trace.of_kind("ws_fusion")
    # the speculative broadcast is rolled back when the STM stops the loop
    assert not trace.of_kind("ws_broadcast")
    assert all(not p.read().winners for p in workspace.processors.values())
    # each processor saw only its own view
    for request in backend.history:
        if request.agent in ("a", "b", "c"):
            seen = request.messages[-1].content
            assert f"view of {request.agent}" in seen
            assert all(f"view of {other}" not in seen for other in "abc" if other != request.agent)


def test_without_speculation_no_link_question_is_asked_when_the_first_answer_stops_the_loop() -> None:
    script = {"a": [chunk_reply("A thinks yes", "what does b see?", 0.9, 0.9)],
              "b": [chunk_reply("B unsure", "", 0.5, 0.5)], "c": [chunk_reply("C unsure", "", 0.4, 0.4)],
              "stm": [stm_reply("yes", 0.95)]}
    workspace, backend, trace = make_workspace(script, WorkspaceSettings(speculative_links=False), latency_s=0.01)
    assert workspace.run_sync("is it so?", OBSERVATION).answer == "yes"
    assert sorted(r.agent for r in backend.history) == ["a", "b", "c", "stm"]
    assert {e.phase for e in trace.of_kind("ws_chunk")} == {"chunk"}


def full_loop_script() -> dict[str, list[object]]:
    return {
        # a: bid, then answers b's fusion question, then bids again
        "a": [chunk_reply("A: likely sarcastic", "what tone does b hear?", 0.9, 0.8),
              chunk_reply("A answers b", "", 0.7, 0.7),
              chunk_reply("A: sarcastic, given b's tone", "", 0.9, 0.9)],
        # b: bid, answers the winner's question (relevant: link), answers a's fusion question, bids again
        "b": [chunk_reply("B: neutral words", "who speaks?", 0.5, 0.5),
              chunk_reply("B: the tone is mocking", "is the speaker smiling?", 0.95, 0.8),
              chunk_reply("B tells a: mocking tone", "", 0.9, 0.8),
              chunk_reply("B: sarcastic", "", 0.8, 0.8)],
        # c: bid, answers the winner's question (irrelevant: no link), bids again
        "c": [chunk_reply("C: nothing", "", 0.2, 0.2), chunk_reply("C: cannot tell", "", 0.1, 0.3),
              chunk_reply("C: still nothing", "", 0.2, 0.2)],
        "stm": [stm_reply("maybe", 0.4), stm_reply("sarcastic", 0.7)],
    }


@pytest.mark.parametrize("speculative", [True, False])
def test_full_loop_broadcast_links_fusion_then_last_answer_at_max_iterations(speculative: bool) -> None:
    workspace, backend, trace = make_workspace(full_loop_script(),
                                               WorkspaceSettings(max_iterations=2, speculative_links=speculative))
    result = workspace.run_sync("is the speaker sarcastic?", OBSERVATION)
    assert (result.answer, result.confidence, result.stopped_by, result.iterations) == (
        "sarcastic", 0.7, "max_iterations", 2)
    assert result.winners == ("a", "a")
    [broadcast] = trace.of_kind("ws_broadcast")
    assert broadcast.winner == "a" and broadcast.recipients == ["a", "b", "c"]
    assert [(e.a, e.b, e.change) for e in trace.of_kind("ws_link")] == [("a", "b", "created")]
    assert result.links == [["a", "b"]]
    fusion = {(e.asker, e.answerer): (e.question, e.answer) for e in trace.of_kind("ws_fusion")}
    assert fusion == {("a", "b"): ("what tone does b hear?", "B tells a: mocking tone"),
                      ("b", "a"): ("is the speaker smiling?", "A answers b")}
    # iteration 2 prompts carry the broadcast winner and the fused answers
    second_bid_of_a = [r for r in backend.history if r.agent == "a"][-1].messages[-1].content
    assert "A: likely sarcastic" in second_bid_of_a and "B tells a: mocking tone" in second_bid_of_a
    second_bid_of_c = [r for r in backend.history if r.agent == "c"][-1].messages[-1].content
    assert "A: likely sarcastic" in second_bid_of_c and "mocking" not in second_bid_of_c
    # calls: K bids + (K - 1) link answers + 2L fusion + 1 STM, then K + 1 in the final iteration
    assert len(backend.history) == (3 + 2 + 2 + 1) + (3 + 1)
    phases = Counter(e.phase for e in trace.of_kind("ws_chunk"))
    assert phases == {"chunk": 6, "link": 2}


@pytest.mark.parametrize(("ablation", "check"), [
    ("no_broadcast", lambda t, b: not t.of_kind("ws_broadcast")),
    ("no_fusion", lambda t, b: not t.of_kind("ws_fusion") and t.of_kind("ws_link")),
    ("no_uptree", lambda t, b: {e.method for e in t.of_kind("ws_competition")} == {"random"}),
    ("no_ltm", lambda t, b: "A: likely" not in [r for r in b.history if r.agent == "c"][-1].messages[-1].content),
])
def test_ablations(ablation: str, check) -> None:
    workspace, backend, trace = make_workspace(full_loop_script(),
                                               WorkspaceSettings(max_iterations=2, ablations=frozenset({ablation})))
    result = workspace.run_sync("is the speaker sarcastic?", OBSERVATION)
    assert result.iterations == 2
    assert check(trace, backend)


def test_unknown_ablation_suggests() -> None:
    with pytest.raises(UnknownNameError, match="no_fusion"):
        WorkspaceSettings(ablations=frozenset({"no_fusoin"}))


@pytest.mark.parametrize(("settings", "match"), [
    ({"max_concurrency": 0}, "max_concurrency must be at least 1"),  # hung: a semaphore of 0 lets no call in
    ({"max_concurrency": -1}, "max_concurrency must be at least 1"),
    ({"max_iterations": 2.5}, "max_iterations must be a whole number"),
    ({"max_iterations": True}, "max_iterations must be a whole number"),
    ({"threshold": float("nan")}, "threshold must be a confidence"),  # no confidence reached it: ran silently
    ({"threshold": float("inf")}, "threshold must be a confidence"),
    ({"threshold": -0.5}, "threshold must be a confidence"),
    ({"threshold": "0.8"}, "threshold must be a number"),
    ({"seed": 1.5}, "seed must be a whole number"),
    ({"competition": "best"}, "unknown competition 'best'"),  # a KeyError after the first bids
    ({"ablations": "no_fusion"}, "not one string"),
])
def test_settings_a_run_would_hang_fail_or_ignore_are_refused_at_once(settings: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        WorkspaceSettings(**settings)


def test_a_threshold_above_one_is_allowed_and_never_stops_the_loop_early() -> None:
    assert WorkspaceSettings(threshold=1.01).threshold == 1.01


def test_failing_processor_forfeits_and_the_run_goes_on() -> None:
    workspace, _, trace = make_workspace({
        "a": ["not json at all"],
        "b": [chunk_reply("B answers", "", 0.6, 0.6)],
        "c": [chunk_reply("C answers", "", 0.5, 0.5)],
        "stm": [stm_reply("fine", 0.9)],
    })
    result = workspace.run_sync("q", OBSERVATION)
    assert result.answer == "fine"
    [forfeit] = trace.of_kind("ws_forfeit")
    assert forfeit.processor == "a" and "OutputParseError" in forfeit.error
    assert trace.of_kind("ws_competition")[0].winner == "b"


def test_everyone_failing_ends_the_run_without_answer() -> None:
    workspace, _, trace = make_workspace({"a": [""], "b": [""], "c": [""], "stm": [stm_reply("x", 1)]})
    result = workspace.run_sync("q", OBSERVATION)
    assert result.stopped_by == "no_chunks" and result.confidence == 0.0
    assert len(trace.of_kind("ws_forfeit")) == 3


@pytest.mark.parametrize("calls", [2, 3])  # spent among the processors' bids, or at the STM
def test_a_spent_run_budget_stops_the_workspace_instead_of_forfeiting_its_processors(calls: int) -> None:
    from noosphere.errors import BudgetExceededError
    from noosphere.llm import Budget, UsageLedger

    backend = ScriptedBackend(by_agent({name: [chunk_reply(f"{name} answers", "", 0.6, 0.6)] for name in "abc"}
                                       | {"stm": [stm_reply("fine", 0.9)]}))
    model = Model(backend, trace=Trace(None), ledger=UsageLedger(Budget(max_calls=calls)))
    workspace = Workspace([sensory(name, model, name) for name in "abc"], ShortTermMemory(model))
    with pytest.raises(BudgetExceededError):
        workspace.run_sync("q", OBSERVATION)
    assert not model.trace.of_kind("ws_forfeit") and len(backend.history) == calls


def test_threshold_is_a_setting() -> None:
    script = full_loop_script()
    script["stm"] = [stm_reply("maybe", 0.4)]
    workspace, _, _ = make_workspace(script, WorkspaceSettings(threshold=0.3, max_iterations=3))
    assert workspace.run_sync("q", OBSERVATION).stopped_by == "confidence"


def test_image_view_needs_a_vision_model() -> None:
    model = Model(ScriptedBackend([], capabilities=Capabilities(json_schema=True)))
    with pytest.raises(CapabilityError, match="vision"):
        sensory("frames", model, "frames", media_kind="image")


def test_free_processor_keeps_rewarded_examples() -> None:
    model = Model(ScriptedBackend([]))
    free = FreeProcessor("free", model, max_examples=2)
    for index, reward in enumerate([1.0, -1.0, 1.0, 1.0]):
        free.feedback(f"q{index}", Chunk("free", 1, f"answer {index}", "", 1, 1, 1, 0), reward)
    assert [q for q, _ in free.examples] == ["q2", "q3"]
    prompt = free.user_prompt("q", Perception(""))
    assert "answer 3" in prompt and "answer 1" not in prompt


def test_stm_samples_turn_agreement_into_alpha() -> None:
    from noosphere.workspace import Chunk

    replies = [stm_reply("mocking", 1.0, "sarcastic"), stm_reply("mocking", 1.0, "sarcastic"),
               stm_reply("sincere", 1.0, "not sarcastic"), "not json"]
    backend = ScriptedBackend(replies)
    stm = ShortTermMemory(Model(backend), labels=("sarcastic", "not sarcastic"), samples=4)
    winner = Chunk("p0", 0, "the praise is for something bad", "", 2.0, 1.0, 1.0, 0.0)
    answer = asyncio.run(stm.answer("Sarcastic?", winner))
    # two of four samples agree (the unparseable one counts against): alpha 0.5, not the 1.0 each claimed
    assert (answer.label, answer.confidence) == ("sarcastic", 0.5)
    first_attempts = [r for r in backend.history if len(r.messages) == 2]
    assert len(first_attempts) == 4 and {r.settings.temperature for r in first_attempts} == {0.8}
    assert len({r.settings.seed for r in first_attempts}) == 4


# per-run state ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("carry_over", [False, True])
def test_each_run_starts_with_no_links_and_empty_memories_unless_the_settings_carry_them_over(
        carry_over: bool) -> None:
    workspace, backend, trace = make_workspace(full_loop_script(),
                                               WorkspaceSettings(max_iterations=2, carry_over=carry_over))
    first = workspace.run_sync("is the speaker sarcastic?", OBSERVATION)
    assert first.links == [["a", "b"]]
    seen = len(backend.history)
    second = workspace.run_sync("is the speaker sarcastic?", OBSERVATION)  # the scripts' last replies ask nothing
    first_bid_of_c = next(r for r in backend.history[seen:] if r.agent == "c").messages[-1].content
    if carry_over:
        assert second.links == [["a", "b"]] and "A: likely sarcastic" in first_bid_of_c
    else:
        assert second.links == [] and "A: likely sarcastic" not in first_bid_of_c
        assert "Questions you already asked" not in first_bid_of_c
    assert [e.links for e in trace.of_kind("ws_finished")] == [[["a", "b"]], second.links]


def test_the_link_step_commits_the_broadcast_and_its_replies_or_rolls_both_back() -> None:
    from noosphere.workspace.speculation import LinkStep

    model = Model(ScriptedBackend([]), trace=Trace(None))
    processors = {name: sensory(name, model, name) for name in "ab"}
    winner = Chunk("a", 1, "A's gist", "what do you see?", 1.0, 1.0, 1.0, 0.0)
    asked: list[str] = []

    async def ask() -> dict[str, Chunk]:
        asked.append("asked")
        processors["b"].write(processors["b"].read().with_own(chunk("b", 0.9)))  # as the link question does
        return {"b": chunk("b", 0.9)}

    async def begin_then(end: str, speculative: bool) -> object:
        step = LinkStep.begin(winner, processors, broadcast=True, ask=ask, speculative=speculative,
                              trace=model.trace, iteration=1)
        assert all(p.read().winners == (winner,) for p in processors.values())
        await asyncio.sleep(0)  # a speculative question starts while the STM would be answering
        return await step.commit() if end == "commit" else await step.rollback()

    assert asyncio.run(begin_then("commit", speculative=False)) == {"b": chunk("b", 0.9)}
    assert [e.winner for e in model.trace.of_kind("ws_broadcast")] == ["a"]
    assert processors["b"].read().winners == (winner,) and len(processors["b"].read().own) == 1
    for processor in processors.values():
        processor.write(ProcessorMemory())
    asked.clear()
    asyncio.run(begin_then("rollback", speculative=True))
    assert asked == ["asked"] and len(model.trace.of_kind("ws_broadcast")) == 1  # rolled back: not traced again
    assert all(p.read().empty for p in processors.values())


async def test_a_speculative_question_that_failed_does_not_undo_an_answer_that_stopped_the_loop() -> None:
    """The link question started beside the STM met a spent budget; the STM's alpha then stopped the loop: the
    question's fault belongs to a step that is abandoned, and the run keeps its answer."""
    from noosphere.errors import BudgetExceededError
    from noosphere.trace import Trace
    from noosphere.workspace import Chunk
    from noosphere.workspace.speculation import LinkStep

    async def ask() -> dict[str, Chunk]:
        raise BudgetExceededError("tokens", 10, 10)

    step = LinkStep.begin(Chunk("a", 0, "gist", "why?", 1.0, 1.0, 1.0, 0.0), {}, broadcast=False, ask=ask,
                          speculative=True, trace=Trace(None), iteration=1)
    await asyncio.sleep(0.01)  # the question has failed by the time the STM answers
    await step.rollback()  # no error: the answer stands
    assert step.asking is not None and isinstance(step.asking.exception(), BudgetExceededError)  # it had failed


def test_weighted_links_decay_in_an_iteration_whose_winner_asked_nothing() -> None:
    from noosphere.workspace.links import LinkPolicy

    script = {"a": [chunk_reply("A: sarcastic?", "what tone does b hear?", 0.9, 0.8), chunk_reply("A to b", ""),
                    chunk_reply("A: surely sarcastic", "", 0.95, 0.95)],
              "b": [chunk_reply("B: words", "", 0.3, 0.3), chunk_reply("B: mocking tone", "", 0.95, 0.8),
                    chunk_reply("B to a", ""), chunk_reply("B: words", "", 0.3, 0.3)],
              "c": [chunk_reply("C: nothing", "", 0.1, 0.1)],
              "stm": [stm_reply("maybe", 0.3)]}
    workspace, _, trace = make_workspace(script, WorkspaceSettings(max_iterations=3,
                                                                   links=LinkPolicy(weighted=True)))
    workspace.run_sync("is the speaker sarcastic?", OBSERVATION)
    changes = [(e.iteration, e.change, round(e.weight, 3)) for e in trace.of_kind("ws_link")]
    assert (1, "created", 0.5) in changes and (2, "decayed", 0.45) in changes, changes  # 2: a won, asking nothing
