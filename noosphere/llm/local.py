"""The embedded backend: llama.cpp in process through llama-cpp-python.

A `Llama` object is not thread-safe and holds the weights in memory, so each GGUF file is loaded
once per process (`_load`) and every generation on it runs on that model's one dedicated thread,
which serialises access and keeps the event loop free. One long-lived thread also matters for
speed: llama.cpp's OpenMP workers belong to the calling thread, and a new caller each time can leave
the old workers spinning against the new ones on a 2-core machine. JSON output is enforced while
decoding with a grammar compiled from the JSON schema (compiled once per schema).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from noosphere.errors import ContextOverflowError, ModelError
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, Usage

DEFAULT_CONTEXT = 8192
T = TypeVar("T")


@dataclass
class _Loaded:
    llama: Any
    thread: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="llama"))
    grammars: dict[str, Any] = field(default_factory=dict)


_LOADED: dict[tuple[str, int], _Loaded] = {}
_LOAD_LOCK = threading.Lock()


_LOG_CALLBACK: Any = None
_GGML_LOG_ERROR = 4  # ggml: 1 debug, 2 info, 3 warn, 4 error, 5 continuation


def _quiet_llama_logs() -> None:
    """Keep llama.cpp's informational lines (context sizes and the like) out of the user's terminal.

    Errors still reach stderr; the callback object is kept alive for as long as the process runs.
    """
    global _LOG_CALLBACK
    if _LOG_CALLBACK is not None:
        return
    import llama_cpp

    @llama_cpp.llama_log_callback
    def forward_errors(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if level == _GGML_LOG_ERROR:
            sys.stderr.write(text.decode("utf-8", "replace"))

    _LOG_CALLBACK = forward_errors
    llama_cpp.llama_log_set(forward_errors, ctypes.c_void_p(0))


def _load(path: Path, n_ctx: int, n_threads: int | None) -> _Loaded:
    """Load a GGUF file once per process and context size; later callers share it."""
    key = (str(path.resolve()), n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from llama_cpp import Llama

            _quiet_llama_logs()
            threads = n_threads or os.cpu_count() or 1  # llama-cpp-python would use only half the cores
            llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                          n_batch=512, verbose=False, seed=0)
            _LOADED[key] = _Loaded(llama)
        return _LOADED[key]


class LocalBackend:
    native_tools = False
    max_concurrency = 1

    def __init__(self, model_id: str, path: Path, *, fingerprint: str, n_ctx: int = DEFAULT_CONTEXT,
                 n_threads: int | None = None, constrain: bool = True) -> None:
        """`constrain=False` turns off grammar decoding: the schema is then only described in the prompt."""
        self.model_id = model_id
        self.path = path
        self._fingerprint = fingerprint
        self.context_window: int | None = n_ctx
        self.capabilities = Capabilities(vision=False, audio=False, tools=True, json_schema=constrain)
        self._n_threads = n_threads
        self._loaded: _Loaded | None = None

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def loaded(self) -> _Loaded:
        if self._loaded is None:
            assert self.context_window is not None
            self._loaded = _load(self.path, self.context_window, self._n_threads)
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

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        key = json.dumps(schema, sort_keys=True)
        cache = self.loaded.grammars
        if key not in cache:
            # The grammar follows the schema's property order (fields meant to be written first, like a
            # reason before a verdict, stay first), so it is built from the unsorted JSON.
            cache[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return cache[key]

    def run_on_model_thread(self, function: Callable[[], T]) -> T:
        """Run a blocking call on this model's thread (what `generate` does; benchmarks use it raw)."""
        return self.loaded.thread.submit(function).result()

    def _generate_blocking(self, request: Request) -> Reply:
        settings = request.settings
        grammar = self._grammar(request.json_schema) if request.json_schema else None
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

    async def generate(self, request: Request) -> Reply:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.loaded.thread, self._generate_blocking, request)
