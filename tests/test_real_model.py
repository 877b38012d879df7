"""End to end on real embedded models (0.5B and 135M), as CI runs them. Skipped without weights."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from noosphere.envs import Environment, Reset, Step
from noosphere.errors import OutputParseError
from noosphere.llm import Message, Settings, open_model
from noosphere.llm.weights import LOCAL_WEIGHTS, is_installed
from noosphere.systems.base import Answer
from noosphere.trace import Trace
from tests.skip_policy import GAME_EXTRAS
from tests.test_cli import invoke


def _require(name: str) -> str:
    if not is_installed(LOCAL_WEIGHTS[name]):
        pytest.skip(f"weights for {name} not installed ({LOCAL_WEIGHTS[name].pip_command})")
    return f"local:{name}"


pytestmark = pytest.mark.real_model


class Scores(BaseModel):
    relevance: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    surprise: float = Field(ge=0.0, le=1.0)


def test_small_qwen_answers_with_valid_json() -> None:
    trace = Trace(None)
    model = open_model(_require("qwen2.5-coder-0.5b"), trace=trace)
    completion = model.complete_sync(
        [Message.system("You judge sarcasm."), Message.user("Is 'Oh great, another Monday.' sarcastic?")],
        output=Answer, settings=Settings(max_tokens=256))
    assert isinstance(completion.output, Answer) and completion.output.answer.strip()
    assert 0.0 <= completion.output.confidence <= 1.0
    [call, *_] = trace.of_kind("model_call")
    assert call.prompt_tokens > 0 and call.completion_tokens > 0 and call.latency_s > 0


def test_same_weights_are_loaded_once_per_process() -> None:
    first = open_model(_require("smollm2-135m"))
    second = open_model("local:smollm2-135m")
    assert first.backend.llama is second.backend.llama


def test_tiny_model_output_is_repaired_or_rejected_cleanly() -> None:
    """The 135M model often breaks JSON rules. Each outcome must account for itself: a valid object made of the
    numbers the model wrote, or a rejection after exactly the tries allowed, each a traced call, the second shown
    the first reply and its error. Under a grammar every reply is the object itself, as written (the grammar fixes
    its shape, not the ranges of its numbers, so a reply can still be refused for a score above 1)."""
    model_id = _require("smollm2-135m")
    prompts = ["Rate how relevant, confident and surprising this is: 'the sky is green'.",
               "Give three scores for the sentence 'water is wet'."]
    for prompt in prompts:
        # Unconstrained (no grammar) so the tiny model's raw habits show; then constrained.
        for constrained in (False, True):
            trace = Trace(None)
            model = open_model(model_id, trace=trace, constrain=constrained)
            try:
                completion = model.complete_sync(prompt, output=Scores, settings=Settings(max_tokens=80, max_retries=1))
            except OutputParseError as error:
                first, second = trace.of_kind("model_call")
                assert error.attempts == 2 and len(error.errors) == 2 and second.attempt == 2
                assert second.messages[-2] == {"role": "assistant", "content": first.response}
                assert error.errors[0] in second.messages[-1]["content"]
                kinds = [e.repair for e in trace.of_kind("output_repaired") if e.repair != "json_repaired"]
                assert len(kinds) == 2 and set(kinds) <= {"empty", "refusal", "invalid"}
                assert trace.of_kind("output_failed")[0].attempts == 2
            else:
                calls = trace.of_kind("model_call")
                assert completion.attempts == len(calls) and completion.text == calls[-1].response
                written = [float(n) for n in re.findall(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", completion.text)]
                assert all(any(abs(value - n) < 1e-9 for n in written)
                           for value in completion.output.model_dump().values())
                if constrained:
                    assert Scores.model_validate_json(completion.text) == completion.output
            if constrained:
                for call in trace.of_kind("model_call"):
                    reply = json.loads(call.response)
                    assert set(reply) == set(Scores.model_fields), call.response
                    assert all(isinstance(value, int | float) for value in reply.values()), call.response
                assert not [e for e in trace.of_kind("output_repaired") if e.repair == "json_repaired"]


def test_cli_ask_on_a_real_model(tmp_path: Path) -> None:
    model_id = _require("qwen2.5-coder-0.5b")
    from noosphere.llm import open_model as real_opener

    code, out, err = invoke(["ask", "What is 2 + 2?", "--model", model_id, "--out", str(tmp_path), "--no-cache",
                             "--max-tokens", "64"], real_opener)
    assert code == 0, err
    assert "answer:" in out and "confidence:" in out
    [run_dir] = list(tmp_path.iterdir())
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["usage"]["total"]["calls"] >= 1


def test_small_workspace_end_to_end_on_a_real_model() -> None:
    """Two sensory processors and the STM on the 0.5B model: every phase leaves its events."""
    from noosphere.workspace import Observation, ShortTermMemory, Workspace, WorkspaceSettings, sensory

    trace = Trace(None)
    model = open_model(_require("qwen2.5-coder-0.5b"), trace=trace, settings=Settings(max_tokens=200))
    observation = Observation.of({"utterance": '"Oh great, another Monday."',
                                  "dialogue": "ROSS: The printer is broken again.\nCHANDLER: Oh great."})
    processors = [sensory(name, model, name) for name in observation.names]
    stm = ShortTermMemory(model, labels=("sarcastic", "not sarcastic"))
    # threshold above 1 forces both iterations, so broadcast and link formation run for real
    workspace = Workspace(processors, stm, WorkspaceSettings(threshold=1.01, max_iterations=2))
    result = workspace.run_sync("Is the speaker sarcastic?", observation)
    assert result.label in ("sarcastic", "not sarcastic")
    assert result.iterations == 2 and result.stopped_by == "max_iterations"
    kinds = {event.kind for event in trace.events}
    assert {"ws_iteration", "ws_competition", "ws_stm", "ws_broadcast", "ws_finished"} <= kinds
    bids = [e for e in trace.of_kind("ws_chunk") if e.phase == "chunk"]
    forfeits = trace.of_kind("ws_forfeit")
    assert len(bids) + len([f for f in forfeits if f.phase == "chunk"]) == 4
    assert all(0.0 <= e.relevance <= 1.0 and e.weight == pytest.approx(e.relevance + e.confidence + 0.2 * e.surprise)
               for e in bids)


def test_small_society_end_to_end_on_a_real_model() -> None:
    """A democracy of two solvers and an organizer on the 0.5B model, with the rights to know and to execute. The
    solvers read different numbers, so their answers differ and a vote is held: the decision must be the count of
    ballots that every member filled in (decoded under a grammar, none may come back malformed) for an answer on
    the ballot paper; had the members agreed after all, the result must say so and be their answer."""
    from noosphere.bench.gsm8k import answer_key
    from noosphere.observation import Observation
    from noosphere.society import Member, democracy

    trace = Trace(None)
    model = open_model(_require("qwen2.5-coder-0.5b"), trace=trace, settings=Settings(max_tokens=160))
    solvers = [Member("adder", model, "You solve arithmetic problems step by step.", sees=("first",)),
               Member("checker", model, "You solve arithmetic problems and double-check each step.", sees=("second",))]
    society = democracy(solvers, Member("organizer", model, "You ask questions that expose arithmetic mistakes."),
                        rights=("know", "execute"), rounds=1)
    observation = Observation.of({"first": "Tom has 3 apples and buys 4 more.",
                                  "second": "Tom has 5 apples and buys 4 more."})
    result = society.run_sync("How many apples does Tom have now?", observation, answer_key=answer_key)
    phases = [e.phase for e in trace.of_kind("soc_phase")]
    assert phases == ["mission", "mindstorm", "opinion", "execution"]
    latest = {record.member: record.answer for record in result.records if record.member in ("adder", "checker")}
    options = {answer_key(answer) for answer in latest.values() if answer.strip()}
    assert options and answer_key(result.answer) in options
    if len(options) == 1:
        assert result.decided_by == "unanimous" and not [b for b in trace.of_kind("soc_ballot") if not b.standing]
        return
    assert result.decided_by == "vote"  # not "standing": that is what the society falls back on when no ballot parses
    ballots = [b for b in trace.of_kind("soc_ballot") if not b.standing]
    # every member's ballot came back well formed: none forfeited in the vote (a member may still forfeit a
    # discussion turn whose free text outruns max_tokens; that is the forfeit policy, not a ballot failure)
    assert sorted(b.voter for b in ballots) == ["adder", "checker"]
    assert not [f for f in trace.of_kind("soc_forfeit") if f.phase == "execution"]
    firsts = [answer_key(b.ranking[0]) for b in ballots]
    assert set(firsts) <= options
    tally = trace.of_kind("soc_tally")[-1]
    assert answer_key(tally.winner) == answer_key(result.answer) and answer_key(result.answer) in firsts
    assert sum(tally.scores.values()) == len(ballots)  # plurality: one point a ballot, nothing else counted
    assert result.ballots and {b.voter for b in result.ballots} == {"adder", "checker"}


class RecordedGame:
    """A game that keeps what it offered: the admissible actions before each step, and each step's outcome."""

    def __init__(self, game: Environment) -> None:
        self.game, self.name, self.kind = game, game.name, game.kind
        self.offered: list[tuple[str, ...]] = []
        self.steps: list[tuple[str, Step]] = []

    def reset(self) -> Reset:
        start = self.game.reset()
        self.offered = [start.admissible]
        return start

    def step(self, action: str) -> Step:
        outcome = self.game.step(action)
        self.steps.append((action, outcome))
        self.offered.append(outcome.admissible)
        return outcome

    def close(self) -> None:
        self.game.close()


def test_meta_agent_plays_a_small_generated_game_on_a_real_model(tmp_path: Path) -> None:
    """The 135M model drives the meta-agent for a few actions of a generated TextWorld game: every action it took
    was one the game offered at that moment, the trace and the memory tell exactly what the game answered, and the
    episode ended for a reason (its action cap, the game's end or the transition cap), not early."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    import asyncio

    from noosphere.envs import textworld_games
    from noosphere.memory import HashingEmbedder, MemoryStore
    from noosphere.metaagent import DEFAULT_GRAPH, MemorySettings, MetaAgent

    [generated] = textworld_games(tmp_path / "games", tier=1, per_challenge=1, challenges=("coin_collector",))
    game = RecordedGame(generated)
    trace = Trace(None)
    model = open_model(_require("smollm2-135m"), trace=trace, settings=Settings(max_tokens=120))
    memory = MemorySettings(MemoryStore(tmp_path / "memory"), embedder=HashingEmbedder())
    agent = MetaAgent(model, memory=memory, max_actions=2)
    result = asyncio.run(agent.play(game))
    game.close()
    assert game.steps, "the agent never acted"
    for (action, _), offered in zip(game.steps, game.offered, strict=False):
        assert action in offered, f"{action!r} was not admissible: {offered}"
    taken = trace.of_kind("ma_action")
    assert [(e.action, e.observation, e.done, e.won) for e in taken] == [
        (action, outcome.observation, outcome.done, outcome.won) for action, outcome in game.steps]
    assert result.actions == len(game.steps) and result.won == game.steps[-1][1].won
    last_done = game.steps[-1][1].done
    assert result.actions == 2 or last_done or result.transitions == agent.max_transitions
    assert not any(outcome.done for _, outcome in game.steps[:-1])  # nothing was played after the game ended
    transitions = trace.of_kind("ma_transition")
    assert len(transitions) == result.transitions and all(DEFAULT_GRAPH.allows(t.source, t.target)
                                                          for t in transitions)
    [episode] = MemoryStore(tmp_path / "memory").episodes()
    assert episode.actions == result.actions and episode.steps[0].t == 0  # timestep 0 opens the episode
    assert [step.action for step in episode.steps if step.action] == [action for action, _ in game.steps]
