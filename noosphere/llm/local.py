"""The embedded backend: llama.cpp in process through llama-cpp-python.

The weights are loaded once per process (`llama_loader`). JSON output is enforced while decoding
with a grammar compiled from the JSON schema (compiled once per schema).

By default requests are decoded together by a `BatchEngine` with `slots` sequences in one context,
so the K concurrent calls of a workspace phase or a society round cost about one generation, not K;
`slots=None` keeps the plain one-request-at-a-time path of llama-cpp-python.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from noosphere.errors import ContextOverflowError, ModelError, UsageError
from noosphere.llm.batching import BatchEngine, GenerationJob
from noosphere.llm.gbnf import schema_grammar
from noosphere.llm.llama_loader import LoadedModel, load_gguf
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, ScoreReply, ScoreRequest, Usage

DEFAULT_CONTEXT = 8192
DEFAULT_SLOTS = 8
T = TypeVar("T")


class LocalBackend:
    native_tools = False
    in_process = True

    def __init__(self, model_id: str, path: Path, *, fingerprint: str, n_ctx: int = DEFAULT_CONTEXT,
                 n_threads: int | None = None, constrain: bool = True, slots: int | None = DEFAULT_SLOTS,
                 deterministic: bool = False) -> None:
        """`constrain=False` turns off grammar decoding: the schema is then only described in the prompt.

        `slots` is how many requests are decoded together; `None` serves one request at a time.
        `deterministic=True` decodes each request alone from an empty cache (`GenerationJob.isolated`): greedy
        output then never depends on what else was running (`--parallel`), at the cost of the batching.
        """
        self.deterministic = deterministic
        if slots is not None and slots < 1:
            raise UsageError(f"slots must be at least 1 (or None for serial decoding), not {slots}")
        self.slots = slots
        self.max_concurrency = slots or 1
        self.model_id = model_id
        self.path = path
        self._fingerprint = fingerprint
        self.context_window: int | None = n_ctx
        self.capabilities = Capabilities(vision=False, audio=False, tools=True, json_schema=constrain, logprobs=True)
        self._n_threads = n_threads
        self._loaded: LoadedModel | None = None

    @property
    def fingerprint(self) -> str:
        """The call cache's key for this model; deterministic decoding has its own, so that it never takes up an
        answer decoded in a batch."""
        return f"{self._fingerprint}+alone" if self.deterministic else self._fingerprint

    @property
    def loaded(self) -> LoadedModel:
        if self._loaded is None:
            assert self.context_window is not None
            self._loaded = load_gguf(self.path, self.context_window, self._n_threads)
        return self._loaded

    @property
    def llama(self) -> Any:
        """The underlying `llama_cpp.Llama`, for benchmarks that compare against raw calls."""
        return self.loaded.llama

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        llama = self.loaded.llama
        per_message_overhead = 5  # role markers of the chat template
        return sum(len(llama.tokenize(m.content.encode(), add_bos=False, special=False)) + per_message_overhead
                   for m in messages) + 3

    def _grammar(self, schema: dict[str, Any]) -> str:
        key = json.dumps(schema, sort_keys=True)
        cache = self.loaded.grammars
        if key not in cache:
            cache[key] = schema_grammar(schema)
        return cache[key]

    def run_on_model_thread(self, function: Callable[[], T]) -> T:
        """Run a blocking call on this model's thread (what `generate` does; benchmarks use it raw)."""
        return self.loaded.thread.submit(function).result()

    @property
    def engine(self) -> BatchEngine:
        """The model's batch engine (scoring uses it even on the serial path, with one slot)."""
        return self.loaded.batch_engine(self.slots or 1, self.model_id)

    def _scoring_tokens(self, request: ScoreRequest) -> tuple[list[int], list[list[int]]]:
        context, continuations = self.loaded.scoring_tokens([m.to_openai() for m in request.messages],
                                                            request.prefix, request.options)
        for option, tokens in zip(request.options, continuations, strict=True):
            if not tokens:  # summed over no token, its log-probability would be 0: probability 1, a silent winner
                raise UsageError(f"option {option!r} tokenizes to nothing on {self.model_id}")
        return context, continuations

    def check_score(self, request: ScoreRequest) -> None:
        """Refuse, before the call is counted or anything is decoded, an option that tokenizes to nothing after
        this prompt (known only once the prompt is tokenized, so not in `Model.check_scoring`)."""
        self._scoring_tokens(request)

    async def score(self, request: ScoreRequest) -> ScoreReply:
        """Exact option scores from the logits: one scoring job per option, all sharing the prompt's cache
        (the first evaluates the prompt, the others copy it), decoded with whatever else is running."""
        context, continuations = self._scoring_tokens(request)
        jobs = [GenerationJob([*context, *tokens], 0, 0.0, 1.0, 0, score_from=len(context),
                              isolated=self.deterministic) for tokens in continuations]
        futures = [asyncio.wrap_future(self.engine.submit(job)) for job in jobs]
        try:
            results = await asyncio.gather(*futures)
        except asyncio.CancelledError:
            for job in jobs:
                job.abandoned = True
            raise
        return ScoreReply(
            logprobs=tuple(sum(r.token_logprobs) for r in results),
            tokens=tuple(len(tokens) for tokens in continuations),
            usage=Usage(prompt_tokens=sum(r.prompt_tokens for r in results),
                        reused_prompt_tokens=sum(r.reused_prompt_tokens for r in results)))

    async def generate(self, request: Request) -> Reply:
        if self.slots is None and not request.logprobs:  # a reply's log-probability comes from the engine
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.loaded.thread, self._generate_serially, request)
        settings = request.settings
        tokens, stops = self.loaded.chat_prompt([m.to_openai() for m in request.messages])
        job = GenerationJob(tokens, settings.max_tokens, settings.temperature, settings.top_p, settings.seed,
                            stop=(*settings.stop, *stops),
                            grammar=self._grammar(request.json_schema) if request.json_schema else None,
                            isolated=self.deterministic, logprobs=request.logprobs)
        try:
            result = await asyncio.wrap_future(self.engine.submit(job))
        except asyncio.CancelledError:
            job.abandoned = True  # the engine stops decoding it at its next step
            raise
        return Reply(text=result.text, usage=Usage(result.prompt_tokens, result.completion_tokens,
                                                         reused_prompt_tokens=result.reused_prompt_tokens),
                     finish_reason=result.finish_reason,
                     logprob=sum(result.token_logprobs) if request.logprobs else None)

    def _generate_serially(self, request: Request) -> Reply:
        from llama_cpp import LlamaGrammar

        settings = request.settings
        grammar = LlamaGrammar.from_string(self._grammar(request.json_schema)) if request.json_schema else None
        try:
            response = self.loaded.llama.create_chat_completion(
                messages=[m.to_openai() for m in request.messages],
                temperature=settings.temperature, top_p=settings.top_p, max_tokens=settings.max_tokens,
                seed=settings.seed, stop=list(settings.stop) or None, grammar=grammar)
        except ValueError as exc:
            if "exceed context window" in str(exc):
                raise ContextOverflowError(self.model_id, self.count_tokens(request.messages) or 0,
                                           settings.max_tokens, self.context_window or 0) from exc
            raise ModelError(self.model_id, str(exc)) from exc
        except RuntimeError as exc:
            raise ModelError(self.model_id, str(exc)) from exc
        choice = response["choices"][0]
        usage = response.get("usage", {})
        return Reply(text=choice["message"].get("content") or "",
                     usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
                     finish_reason=choice.get("finish_reason") or "stop")
