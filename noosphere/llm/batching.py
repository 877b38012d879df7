"""Continuous batching for the embedded backend: concurrent requests decoded together.

On a CPU a decode step is bound by reading the weights, so one step that advances eight sequences
costs little more than one that advances a single sequence; this engine lets every request that is
waiting join the next step. Each request gets a sequence (a slot) in one llama.cpp context whose KV
cache is unified, which lets a new request start from the longest prompt prefix already in the
cache (its slot's previous prompt, or another slot's, shared by reference): K processors that share
a system prompt and an observation evaluate it once. The context holds more sequences than run at
once (`caches`, twice the slots by default), so the conversations of a society that outnumber the
slots keep their caches between rounds. Requests that arrive together and share a
prefix with a prompt still being evaluated wait for it (one or two steps) and then copy it.

The engine runs on the model's one thread, only while it has work (`_drain`), so other work queued
on that thread (a serial call, a benchmark's raw call) runs between drains. Jobs are plain data; the
caller waits on the job's `concurrent.futures.Future`; a caller that stops waiting marks the job
abandoned, which frees its slot at the next step without disturbing the other sequences.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import CancelledError, Executor, Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from noosphere.errors import ContextOverflowError, ModelError
from noosphere.llm.sampling import SequenceSampler

CACHES_PER_SLOT = 2
"""Sequences kept per decode slot. Measured on the workload of `benchmarks/cache_pool.py` (twelve
three-turn conversations, 1.5B model, 8 slots): with 8 sequences the conversations evicted each
other's caches before their next turn (33-38 % of prompt tokens reused, 283-392 s); 16 kept them
(68 %, 242 s). Idle cells are not free, since every step attends over all used cells (one 3.9k-token
prompt on the 0.5B model was evaluated at 73 tokens/s alone and 42 beside 20k idle cells; on the 1.5B model,
~10k idle cells cost 4-6 %, `benchmarks/idle_cells.py`), so the cell budget stays `slots x CELLS_PER_SLOT` and the
least recently used cache goes when it runs out. Dropping idle caches sooner loses more reuse than it saves
(`benchmarks/cache_policy.py` on the meta-agent's and a society's traces)."""

MIN_SHARED_PREFIX = 32
"""Tokens a new request must share with a prompt in flight before it waits to copy them (fewer are the
chat template's opening, not a prefix); an idle cache that would lose fewer counts as continued."""


@dataclass(frozen=True)
class JobResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    reused_prompt_tokens: int = 0
    token_logprobs: tuple[float, ...] = ()
    """For a scoring job: the log-probability of each token after `score_from`, given the tokens before it."""


@dataclass
class GenerationJob:
    tokens: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    future: Future[JobResult] = field(default_factory=Future)
    abandoned: bool = False
    """Set by the caller that stopped waiting: a job already decoding cannot be cancelled through its
    future (a running `concurrent.futures.Future` refuses), so the engine drops it at the next step."""
    reused: int = 0
    """Prompt tokens copied from a cached prefix rather than evaluated (set when the job starts)."""
    score_from: int | None = None
    """A scoring job generates nothing: it evaluates `tokens` and returns the log-probability of each
    token from this position on (an option after its prompt). Its prefix up to here is shared as usual."""
    token_logprobs: list[float] = field(default_factory=list)
    """A scoring job's: each scored token's log-probability. A generation's with `logprobs`: each generated token's."""
    logprobs: bool = False
    """A generation that keeps the log-probability of each token it generates (under the raw logits)."""
    isolated: bool = False
    """Decode this job alone, from an empty sequence: nothing runs beside it and no cached prefix is used, so
    every matrix it goes through has the same shape whatever else was asked, and greedy output does not
    depend on the batch (llama.cpp's CPU kernels round differently for other shapes). Costs the batching."""

    @property
    def keep_from(self) -> int:
        """Tokens that may come from a cached prefix: all but the last one a generation needs logits of."""
        if self.isolated:
            return 0
        return len(self.tokens) - 1 if self.score_from is None else self.score_from - 1

    def gone(self) -> bool:
        return self.abandoned or self.future.cancelled()


@dataclass
class _Slot:
    """One sequence of the context: the tokens it caches and, while it runs, its job."""

    seq: int
    cached: list[int] = field(default_factory=list)
    """Tokens whose keys and values are in the cache for this sequence, in order."""
    job: GenerationJob | None = None
    pending: list[int] = field(default_factory=list)
    sampler: SequenceSampler | None = None
    next_token: int | None = None
    output: list[int] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    logits_at: int | None = None
    scored_at: list[tuple[int, int]] = field(default_factory=list)
    """For a scoring job: (batch index, next token) of each position whose logits the last step kept."""
    last_used: int = 0
    """When this slot last started a job (the engine's job counter): the least recently used cache goes first."""


@dataclass
class EngineStats:
    steps: int = 0
    evaluated_prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    generated_tokens: int = 0


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens `a` and `b` share from their start."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class BatchEngine:
    """Decodes up to `slots` sequences at a time, keeping `caches` sequences in `n_ctx` cells shared by all."""

    def __init__(self, model: Any, vocab: Any, *, executor: Executor, slots: int, n_ctx: int, n_batch: int = 512,
                 n_threads: int = 2, model_id: str = "local", caches: int | None = None) -> None:
        import llama_cpp

        self._llama = llama_cpp
        params = llama_cpp.llama_context_default_params()
        caches = max(caches or slots * CACHES_PER_SLOT, slots)
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = n_ctx, n_batch, n_batch, caches
        params.n_threads = params.n_threads_batch = n_threads
        params.kv_unified = True  # one pool of cells, so sequences can share a prefix by reference
        params.flash_attn = True  # measured: 15-25% faster at four sequences, the same speed at one
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if not self._ctx:
            raise ModelError(model_id, f"llama.cpp could not create a context of {n_ctx} cells and {caches} sequences")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._vocab, self._executor, self._model_id = vocab, executor, model_id
        self.n_ctx, self.n_batch = n_ctx, n_batch
        self._slots = [_Slot(seq) for seq in range(caches)]
        self.running_limit = slots
        self._incoming: deque[GenerationJob] = deque()
        self._waiting: deque[GenerationJob] = deque()
        self._lock = threading.Lock()
        self._running = False
        self._started = 0
        self.stats = EngineStats()

    def submit(self, job: GenerationJob) -> Future[JobResult]:
        if job.score_from is not None and not 0 < job.score_from < len(job.tokens):
            raise ValueError("a scoring job scores at least one token after a non-empty prompt")
        if len(job.tokens) + job.max_tokens > self.n_ctx:
            raise ContextOverflowError(self._model_id, len(job.tokens), job.max_tokens, self.n_ctx)
        with self._lock:
            self._incoming.append(job)
            if not self._running:
                self._running = True
                self._executor.submit(self._drain)
        return job.future

    def _drain(self) -> None:
        """Step until no job is waiting or running; runs on the model thread."""
        while True:
            with self._lock:
                self._waiting.extend(self._incoming)
                self._incoming.clear()
                if not self._waiting and not any(s.job for s in self._slots):
                    self._running = False
                    return
            try:
                self._release_cancelled()
                self._admit()
                if any(s.job for s in self._slots):
                    self._step()
            except Exception as exc:  # never leave a caller waiting on a broken step
                self._fail_all(ModelError(self._model_id, f"batched decoding failed: {exc}", retryable=True))

    def _fail_all(self, error: Exception) -> None:
        for slot in self._slots:
            if slot.job is not None:
                self._finish(slot, error=error)
            slot.cached = []
        self._llama.llama_memory_clear(self._memory, True)
        while self._waiting:
            job = self._waiting.popleft()
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(error)

    def _release_cancelled(self) -> None:
        for slot in self._slots:
            if slot.job is not None and slot.job.gone():
                self._finish(slot, error=CancelledError())
        self._waiting = deque(job for job in self._waiting if not job.gone())

    # admission ----------------------------------------------------------------------------------
    def _reserved(self) -> int:
        """Cells in use plus the cells the running jobs may still need."""
        used = int(self._llama.llama_kv_self_used_cells(self._ctx))
        return used + sum(len(s.pending) + s.job.max_tokens - len(s.output) for s in self._slots if s.job)

    def _admit(self) -> None:
        while self._waiting:
            free = [s for s in self._slots if s.job is None]
            if not free or len(self._slots) - len(free) >= self.running_limit:
                return
            job = self._waiting[0]
            running = [s.job for s in self._slots if s.job is not None]
            if any(other.isolated for other in running) or (job.isolated and running):
                return  # an isolated job runs alone: it waits for the others, and the others for it
            slot, source, reuse = self._placement(job, free)
            if self._prefix_in_flight(job) > reuse + MIN_SHARED_PREFIX:
                return  # a running prompt is evaluating this prefix right now: wait a step and copy it

            if (source is not slot or reuse == 0) and slot.cached:
                self._drop(slot)  # the job starts this sequence afresh: free its cells before counting
            need = len(job.tokens) - reuse + job.max_tokens
            while self._reserved() + need > self.n_ctx and self._evict_idle(keep={slot.seq, source.seq}):
                pass
            if self._reserved() + need > self.n_ctx:
                if any(s.job for s in self._slots):
                    return  # wait for running jobs to free cells
                while self._evict_idle(keep=set()):
                    pass
                slot, source, reuse = slot, slot, 0
            self._waiting.popleft()
            self._start(job, slot, source, reuse)

    def _placement(self, job: GenerationJob, free: list[_Slot]) -> tuple[_Slot, _Slot, int]:
        """The free slot to use, the slot to copy a prefix from, and that prefix's length."""
        def reusable(source: _Slot) -> int:
            return min(common_prefix(source.cached, job.tokens), job.keep_from)

        def lost(slot: _Slot) -> int:  # cached tokens this job would discard by taking the slot
            return len(slot.cached) - reusable(slot)

        # take a slot only when no cache worth keeping is lost: an empty one, or the cache this job
        # continues (a member's next round, a game's next step). A prefix shared with another cache
        # (a system prompt, a task) is copied from it by reference instead, and when every cache holds
        # more than this job needs, the least recently used one goes.
        intact = [slot for slot in free if lost(slot) < MIN_SHARED_PREFIX]
        own = max(intact, key=reusable) if intact else min(free, key=lambda slot: slot.last_used)
        source = max(self._slots, key=reusable)
        if reusable(source) <= reusable(own):
            source = own
        return own, source, max(reusable(source), 0)

    def _prefix_in_flight(self, job: GenerationJob) -> int:
        """The longest prefix `job` shares with a prompt that is still being evaluated."""
        return max((common_prefix(s.cached + s.pending, job.tokens) for s in self._slots if s.job and s.pending),
                   default=0)

    def _evict_idle(self, keep: set[int]) -> bool:
        """Drop the least recently used idle cache; False when there is none left to drop."""
        idle = [s for s in self._slots if s.job is None and s.cached and s.seq not in keep]
        if not idle:
            return False
        self._drop(min(idle, key=lambda s: s.last_used))
        return True

    def _drop(self, slot: _Slot) -> None:
        self._llama.llama_memory_seq_rm(self._memory, slot.seq, -1, -1)
        slot.cached = []

    def _start(self, job: GenerationJob, slot: _Slot, source: _Slot, reuse: int) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        sampler = None
        if job.score_from is None:
            try:
                sampler = SequenceSampler(self._llama, self._vocab, grammar=job.grammar,
                                          temperature=job.temperature, top_p=job.top_p, seed=job.seed)
            except ValueError as exc:
                job.future.set_exception(ModelError(self._model_id, str(exc)))
                return
        memory = self._memory
        if source is slot and not self._llama.llama_memory_seq_rm(memory, slot.seq, reuse, -1):
            reuse = 0  # this cache cannot drop a tail; start the sequence afresh
        if source is not slot or reuse == 0:
            self._llama.llama_memory_seq_rm(memory, slot.seq, -1, -1)
            if reuse:
                self._llama.llama_memory_seq_cp(memory, source.seq, slot.seq, 0, reuse)
        slot.cached = job.tokens[:reuse]
        slot.job, slot.sampler, slot.pending = job, sampler, job.tokens[reuse:]
        slot.next_token, slot.output, slot.text = None, [], bytearray()
        self._started += 1
        slot.last_used = self._started
        self.stats.reused_prompt_tokens += reuse
        job.reused = reuse

    # decoding -----------------------------------------------------------------------------------
    def _add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        batch = self._batch
        i = batch.n_tokens
        batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, 1, logits
        batch.seq_id[i][0] = seq
        batch.n_tokens = i + 1
        return i

    def _step(self) -> None:
        self._batch.n_tokens = 0
        evaluated: list[tuple[_Slot, list[int]]] = []
        running = [s for s in self._slots if s.job is not None]
        for slot in running:  # one token for every sequence that is generating
            if slot.next_token is not None:
                slot.logits_at = self._add(slot.next_token, len(slot.cached), slot.seq, True)
                evaluated.append((slot, [slot.next_token]))
        for slot in running:  # prompts fill the rest of the batch, oldest first
            room = self.n_batch - self._batch.n_tokens
            if not slot.pending or room <= 0:
                continue
            chunk, slot.pending = slot.pending[:room], slot.pending[room:]
            start = len(slot.cached)
            job = slot.job
            assert job is not None
            scoring = job.score_from is not None
            for offset, token in enumerate(chunk):
                position = start + offset
                if scoring:  # keep the logits of every position that predicts an option token
                    wanted = job.score_from - 1 <= position < len(job.tokens) - 1  # type: ignore[operator]
                    index = self._add(token, position, slot.seq, wanted)
                    if wanted:
                        slot.scored_at.append((index, job.tokens[position + 1]))
                else:
                    last = not slot.pending and offset == len(chunk) - 1
                    index = self._add(token, position, slot.seq, last)
            slot.logits_at = index if not slot.pending and not scoring else None
            evaluated.append((slot, chunk))
            self.stats.evaluated_prompt_tokens += len(chunk)
        status = self._llama.llama_decode(self._ctx, self._batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")
        self.stats.steps += 1
        for slot, tokens in evaluated:
            slot.cached.extend(tokens)
        for slot in running:
            if slot.logits_at is not None and slot.job is not None and slot.sampler is not None:
                self._sample(slot, slot.logits_at)
            elif slot.job is not None and slot.job.score_from is not None:
                self._score(slot)

    def _score(self, slot: _Slot) -> None:
        """Read the log-probability of each scored token from the step's logits; finish once all are read."""
        job = slot.job
        assert job is not None
        for index, target in slot.scored_at:
            job.token_logprobs.append(self._logprob(index, target))
        slot.scored_at = []
        if not slot.pending:
            self._finish(slot, reason="scored")

    def _logprob(self, index: int, token: int) -> float:
        """`token`'s log-probability under the logits the last step kept at batch position `index`."""
        n_vocab = int(self._llama.llama_vocab_n_tokens(self._vocab))
        logits = np.ctypeslib.as_array(self._llama.llama_get_logits_ith(self._ctx, index), shape=(n_vocab,))
        values = logits.astype(np.float64)
        top = values.max()
        return float(values[token] - top - np.log(np.exp(values - top).sum()))

    def _sample(self, slot: _Slot, index: int) -> None:
        job = slot.job
        assert job is not None and slot.sampler is not None
        token = slot.sampler.sample(self._ctx, index)
        slot.logits_at = None
        if self._llama.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, reason="stop")
            return
        if job.logprobs:  # the sampler read the logits without changing them
            job.token_logprobs.append(self._logprob(index, token))
        slot.output.append(token)
        slot.text.extend(self._piece(token))
        self.stats.generated_tokens += 1
        text = slot.text.decode("utf-8", "ignore")
        cut = min((text.find(s) for s in job.stop if s and s in text), default=-1)
        if cut >= 0:
            self._finish(slot, reason="stop", text=text[:cut])
        elif len(slot.output) >= job.max_tokens:
            self._finish(slot, reason="length")
        else:
            slot.next_token = token

    def _piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        n = self._llama.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, False)
        if n < 0:
            buffer = ctypes.create_string_buffer(-n)
            n = self._llama.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, False)
        return buffer.raw[:n]

    def _finish(self, slot: _Slot, *, reason: str = "stop", text: str | None = None,
                error: Exception | None = None) -> None:
        job = slot.job
        if slot.sampler is not None:
            slot.sampler.close()
        slot.job, slot.sampler, slot.pending, slot.next_token, slot.logits_at = None, None, [], None, None
        slot.scored_at = []
        if job is None or job.future.done():
            return
        if error is not None:
            job.future.set_exception(error)
            return
        job.future.set_result(JobResult(
            text=text if text is not None else slot.text.decode("utf-8", "replace"),
            prompt_tokens=len(job.tokens), completion_tokens=len(slot.output), finish_reason=reason,
            reused_prompt_tokens=job.reused, token_logprobs=tuple(job.token_logprobs)))
