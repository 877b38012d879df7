"""The global workspace loop (CTM-AI, Algorithm 1).

Each iteration: every processor bids a chunk (in parallel); the up-tree competition picks one; the
winner is broadcast into every processor's memory; the short-term memory answers from it with a
confidence alpha and, while that call runs, every other processor answers the winner's follow-up
question (link formation, begun speculatively: `speculation.LinkStep`, committed if the loop goes on,
rolled back if alpha clears the threshold); relevance creates or removes links; linked processors
then ask their neighbours their own questions (fusion). One iteration is three model latencies (bids,
STM with links, fusion) and about 2(K + L) calls.

A processor that fails at run time forfeits its turn and the run goes on; a usage error or a spent
budget stops the run (`noosphere.concurrent`). Each `run` starts from a fresh link graph and empty
processor memories, unless `WorkspaceSettings.carry_over` keeps them from the run before.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, TypeVar

from noosphere.concurrent import Forfeit, attempt, gather_turns
from noosphere.errors import UnknownNameError, UsageError
from noosphere.observation import Observation
from noosphere.trace import Trace
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.competition import COMPETITIONS, CompetitionMethod, compete
from noosphere.workspace.events import (
    ChunkProduced,
    CompetitionHeld,
    FusionExchanged,
    IterationStarted,
    LinkChanged,
    ProcessorForfeited,
    StmAnswered,
    WorkspaceFinished,
)
from noosphere.workspace.links import LinkChange, LinkGraph, LinkPolicy
from noosphere.workspace.memory import FusionNote, ProcessorMemory
from noosphere.workspace.processor import Processor
from noosphere.workspace.scores import SCORE_SOURCES, ScoreSource
from noosphere.workspace.speculation import LinkStep
from noosphere.workspace.stm import STM_ALPHAS, ShortTermMemory, StmAlpha, StmAnswer

ABLATIONS = ("no_uptree", "no_broadcast", "no_fusion", "no_ltm")
Ablation = Literal["no_uptree", "no_broadcast", "no_fusion", "no_ltm"]
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class WorkspaceSettings:
    threshold: float = 0.8
    """tau: the STM's confidence at or above which the loop stops."""
    max_iterations: int = 3
    """T: the answer of the last iteration is returned when no iteration reaches tau."""
    competition: CompetitionMethod = "argmax"
    links: LinkPolicy = field(default_factory=LinkPolicy)
    ablations: frozenset[str] = frozenset()
    speculative_links: bool = True
    """Ask the link question while the STM answers: an iteration costs one model latency less, and the
    calls are cancelled if the loop stops. Off, they start only when the loop goes on, which spends no
    compute on unneeded questions when many items share the machine (a benchmark scoring in parallel)."""
    max_concurrency: int = 16
    seed: int = 0
    scores: ScoreSource = "verbal"
    """Where chunk scores and the STM's alpha come from (`workspace.scores`). The workspace's builders
    (`classifier`, `ask --system ctm`, the benchmarks) give it to the processors and the STM they make."""
    calibrate: bool = False
    """Contextual calibration of the STM's label probabilities (with labels and probability scores)."""
    stm_alpha: StmAlpha = "label"
    """With labels and probability scores, what alpha is: the answer label's probability ("label") or the STM's
    P(True) that the answer is right ("judged", CTM-AI's quality score; `workspace.stm`)."""
    carry_over: bool = False
    """Keep the link graph and the processors' memories from one `run` to the next (one workspace asked a
    series of related queries). Off, each run starts with no links and empty memories, as a society
    resets its members; what a processor keeps outside its memory (a `FreeProcessor`'s rewarded
    examples) is its own and stays either way."""

    def __post_init__(self) -> None:
        """Refuse at once what a run would otherwise fail on after its first calls (an unknown competition, a
        threshold or a count of the wrong type), hang on (no concurrency at all) or take silently (a NaN
        threshold, which no confidence reaches). A threshold above 1 is allowed: the loop then never stops early."""
        if isinstance(self.ablations, str):
            raise UsageError(f"ablations must be a set of names, not one string {self.ablations!r}")
        for name in self.ablations:
            if name not in ABLATIONS:
                raise UnknownNameError("ablation", name, ABLATIONS)
        _check_count("max_iterations", self.max_iterations)
        _check_count("max_concurrency", self.max_concurrency)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise UsageError(f"seed must be a whole number, not {self.seed!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise UsageError(f"threshold must be a number, not {self.threshold!r}")
        if not math.isfinite(self.threshold) or self.threshold < 0:
            raise UsageError(f"threshold must be a confidence of 0 or more, not {self.threshold}")
        if self.competition not in COMPETITIONS:
            raise UnknownNameError("competition", str(self.competition), COMPETITIONS)
        if self.scores not in SCORE_SOURCES:
            raise UnknownNameError("score source", self.scores, SCORE_SOURCES)
        if self.stm_alpha not in STM_ALPHAS:
            raise UnknownNameError("STM alpha", str(self.stm_alpha), STM_ALPHAS)


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    if value < 1:
        raise UsageError(f"{name} must be at least 1, not {value}")


@dataclass(frozen=True)
class WorkspaceResult:
    answer: str
    confidence: float
    label: str | None
    iterations: int
    stopped_by: str
    winners: tuple[str, ...]
    links: list[list[str]]


class Workspace:
    def __init__(self, processors: list[Processor], stm: ShortTermMemory, settings: WorkspaceSettings | None = None,
                 *, trace: Trace | None = None) -> None:
        names = [p.name for p in processors]
        if not processors or len(set(names)) != len(names):
            raise UsageError(f"a workspace needs processors with distinct names, got {names}")
        self.processors = {p.name: p for p in processors}
        self.stm = stm
        self.settings = settings or WorkspaceSettings()
        self.trace = trace if trace is not None else stm.model.trace
        self.links = LinkGraph(self.settings.links)

    def run_sync(self, query: str, observation: Observation | None = None) -> WorkspaceResult:
        return asyncio.run(self.run(query, observation))

    async def run(self, query: str, observation: Observation | None = None) -> WorkspaceResult:
        """Algorithm 1: up to T iterations of bid, compete, broadcast, answer, link and fuse."""
        observation = observation or Observation()
        settings = self.settings
        self._start_run()
        rng = random.Random(settings.seed)
        answer: StmAnswer | None = None
        winners: list[str] = []
        stopped_by, iteration = "max_iterations", 0
        for iteration in range(1, settings.max_iterations + 1):
            tick, final = 2 * iteration - 1, iteration == settings.max_iterations
            self.trace.emit(IterationStarted(iteration=iteration, tick=tick))
            chunks = await self._bid(query, observation, tick, iteration)
            if not chunks:
                stopped_by = "no_chunks"
                break
            winner = self._compete(chunks, rng, iteration)
            winners.append(winner.processor)
            step = self._begin_link_step(winner, observation, tick, iteration, final)
            try:
                answer = await self._stm_answer(query, winner, iteration, answer)
            except BaseException:  # a spent budget or a usage error: nothing speculative is left running
                with contextlib.suppress(Exception):
                    await step.rollback()
                raise
            if answer.confidence >= settings.threshold or final:
                stopped_by = "confidence" if answer.confidence >= settings.threshold else "max_iterations"
                await step.rollback()
                break
            replies = await step.commit()
            self._form_links(winner, replies or {}, iteration)  # weighted links decay even when nothing was asked
            if "no_fusion" not in settings.ablations:
                await self._fuse(observation, tick + 1, iteration)
        final_answer = answer or StmAnswer("", 0.0)
        self.trace.emit(WorkspaceFinished(answer=final_answer.answer, label=final_answer.label,
                                          confidence=final_answer.confidence, iterations=iteration,
                                          stopped_by=stopped_by, links=self.links.edges()))
        return WorkspaceResult(final_answer.answer, final_answer.confidence, final_answer.label, iteration,
                               stopped_by, tuple(winners), self.links.edges())

    def _start_run(self) -> None:
        """A run's own state: a fresh link graph and empty memories, unless the settings carry them over."""
        if self.settings.carry_over:
            return
        self.links = LinkGraph(self.settings.links)
        for processor in self.processors.values():
            processor.write(ProcessorMemory())

    async def _bid(self, query: str, observation: Observation, tick: int, iteration: int) -> dict[str, Chunk]:
        """Every processor bids a chunk for the query (without long-term memory under `no_ltm`)."""
        if "no_ltm" in self.settings.ablations:
            for processor in self.processors.values():
                processor.write(ProcessorMemory())
        return await self._execute_all({name: query for name in self.processors}, observation, tick, iteration,
                                       "chunk")

    def _compete(self, chunks: dict[str, Chunk], rng: random.Random, iteration: int) -> Chunk:
        """The up-tree competition (a random pick under `no_uptree`) puts one chunk into the STM."""
        method = "random" if "no_uptree" in self.settings.ablations else self.settings.competition
        result = compete(list(chunks.values()), method, rng)
        self.trace.emit(CompetitionHeld(iteration=iteration, method=result.method, winner=result.winner.processor,
                                        weights={c.processor: round(c.weight, 4) for c in chunks.values()},
                                        matches=list(result.matches)))
        return result.winner

    def _begin_link_step(self, winner: Chunk, observation: Observation, tick: int, iteration: int,
                         final: bool) -> LinkStep:
        """The broadcast and the link question, written and asked before the STM answers (Algorithm 1 writes,
        then asks); nothing of it is kept in the last iteration, which only answers."""
        asks = not final and bool(winner.question)
        broadcast = not final and "no_broadcast" not in self.settings.ablations
        return LinkStep.begin(winner, self.processors, broadcast=broadcast,
                              ask=partial(self._ask_links, winner, observation, tick, iteration) if asks else None,
                              speculative=self.settings.speculative_links, trace=self.trace, iteration=iteration)

    async def _gather(self, jobs: dict[K, Callable[[], Awaitable[Chunk]]], iteration: int, phase: str,
                      who: Callable[[K], str]) -> dict[K, Chunk]:
        """Run jobs at once (at most `max_concurrency`) under the forfeit policy; results keep the jobs' order."""
        results = await gather_turns(jobs.values(), limit=self.settings.max_concurrency)
        done: dict[K, Chunk] = {}
        for key, result in zip(jobs, results, strict=True):
            if isinstance(result, Forfeit):
                self.trace.emit(ProcessorForfeited(iteration=iteration, phase=phase, processor=who(key),
                                                   error=str(result)))
            else:
                done[key] = result
        return done

    async def _execute_all(self, questions: dict[str, str], observation: Observation, tick: int, iteration: int,
                           phase: str) -> dict[str, Chunk]:
        """Each named processor answers its question; its chunk joins its own memory."""
        jobs = {name: _bind(self.processors[name], question, observation, tick) for name, question in questions.items()}
        chunks = await self._gather(jobs, iteration, phase, who=str)
        for name, chunk in chunks.items():
            processor = self.processors[name]
            processor.write(processor.read().with_own(chunk))
            self.trace.emit(ChunkProduced(iteration=iteration, phase=phase, processor=name, tick=tick,
                                          gist=chunk.gist, question=chunk.question, relevance=chunk.relevance,
                                          confidence=chunk.confidence, surprise=chunk.surprise, weight=chunk.weight))
        return chunks

    async def _ask_links(self, winner: Chunk, observation: Observation, tick: int, iteration: int) -> dict[str, Chunk]:
        """Every other processor answers the winner's follow-up question; its relevance decides the link."""
        askers = {name: winner.question for name in self.processors if name != winner.processor}
        return await self._execute_all(askers, observation, tick + 1, iteration, "link")

    async def _stm_answer(self, query: str, winner: Chunk, iteration: int, previous: StmAnswer | None) -> StmAnswer:
        answer = await attempt(self.stm.answer(query, winner))
        if isinstance(answer, Forfeit):  # the STM forfeits: the previous answer (or the winner's gist) stands
            self.trace.emit(ProcessorForfeited(iteration=iteration, phase="stm", processor=self.stm.name,
                                               error=str(answer)))
            answer = previous or StmAnswer(winner.gist, 0.0)
        stop = answer.confidence >= self.settings.threshold
        self.trace.emit(StmAnswered(iteration=iteration, winner=winner.processor, answer=answer.answer,
                                    label=answer.label, confidence=answer.confidence,
                                    threshold=self.settings.threshold, stop=stop))
        return answer

    def _form_links(self, winner: Chunk, answers: dict[str, Chunk], iteration: int) -> None:
        changes: list[LinkChange] = self.links.decay()
        for name, chunk in answers.items():
            change = self.links.update(winner.processor, name, chunk.relevance)
            if change is not None:
                changes.append(change)
        for change in changes:
            self.trace.emit(LinkChanged(iteration=iteration, a=change.a, b=change.b, change=change.change,
                                        relevance=change.relevance, weight=change.weight))

    async def _fuse(self, observation: Observation, tick: int, iteration: int) -> None:
        """Each linked processor asks its neighbours its latest question; answers go into its memory.

        The latest question is the one in its last turn: for a processor that answered the winner's question, the
        follow-up it wrote then (what it wants to know now that it has seen the winner), else its bid's. Algorithm
        1 of the CTM-AI paper reads the bid's question; the later one is asked here, and a processor whose later
        turn asked nothing asks nothing in fusion."""
        jobs: dict[tuple[str, str], Callable[[], Awaitable[Chunk]]] = {}
        questions: dict[str, str] = {}
        for name, processor in self.processors.items():
            own = processor.read().own
            question = own[-1].question if own else ""
            if not question:
                continue
            questions[name] = question
            for neighbour in self.links.neighbours(name):
                jobs[(name, neighbour)] = _bind(self.processors[neighbour], question, observation, tick)
        answers = await self._gather(jobs, iteration, "fusion", who=lambda key: key[1])
        for (asker, answerer), chunk in answers.items():
            processor = self.processors[asker]
            note = FusionNote(answerer, questions[asker], chunk.gist, tick)
            processor.write(processor.read().with_fusion(note))
            self.trace.emit(FusionExchanged(iteration=iteration, asker=asker, answerer=answerer,
                                            question=questions[asker], answer=chunk.gist))


def _bind(processor: Processor, question: str, observation: Observation, tick: int
          ) -> Callable[[], Awaitable[Chunk]]:
    return lambda: processor.execute(question, observation, tick=tick)

