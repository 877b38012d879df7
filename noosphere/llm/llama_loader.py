"""Loading GGUF weights once per process, with the thread and batch engine that go with them.

A `Llama` object is not thread-safe and holds the weights in memory, so each GGUF file is loaded
once per process and context size, and every generation on it runs on that model's one dedicated
thread, which serialises access and keeps the event loop free. One long-lived thread also matters
for speed: llama.cpp's OpenMP workers belong to the calling thread, and a new caller each time can
leave the old workers spinning against the new ones on a 2-core machine.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from noosphere.errors import MissingDependencyError, ModelError
from noosphere.llm.batching import BatchEngine, common_prefix

CELLS_PER_SLOT = 4096
"""The batch context holds `slots x CELLS_PER_SLOT` cells (at least one full request window)."""


@dataclass
class LoadedModel:
    llama: Any
    n_threads: int
    thread: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="llama"))
    grammars: dict[str, str] = field(default_factory=dict)
    engine: BatchEngine | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def batch_engine(self, slots: int, model_id: str) -> BatchEngine:
        """The model's one batch engine, created on first use (later callers share its slots)."""
        with self.lock:
            if self.engine is None:
                import llama_cpp

                n_ctx = max(self.llama.n_ctx(), slots * CELLS_PER_SLOT)
                self.engine = BatchEngine(self.llama._model.model, llama_cpp.llama_model_get_vocab(
                    self.llama._model.model), executor=self.thread, slots=slots, n_ctx=n_ctx,
                    n_threads=self.n_threads, model_id=model_id)
            return self.engine

    @cached_property
    def chat_formatter(self) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = self.llama
        template = llama.metadata.get("tokenizer.chat_template")
        if template is None:
            raise ModelError("local", "this GGUF file has no chat template; use slots=None")
        eos, bos = llama.token_eos(), llama.token_bos()
        return Jinja2ChatFormatter(template=template, eos_token=llama._model.token_get_text(eos),
                                   bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                                   stop_token_ids=[eos])

    def chat_prompt(self, messages: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
        """The prompt tokens and stop strings of the model's own chat template, as llama-cpp-python builds them."""
        result = self.chat_formatter(messages=messages)
        tokens = self.llama.tokenize(result.prompt.encode(), add_bos=not result.added_special, special=True)
        stops = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
        return tokens, stops

    def scoring_tokens(self, messages: list[dict[str, Any]], prefix: str, options: tuple[str, ...]
                       ) -> tuple[list[int], list[list[int]]]:
        """The prompt (with `prefix` begun as the assistant's reply) and each option's continuation tokens.

        Each whole text (prompt, prefix, option) is tokenized as the model would have produced it, and every
        option is scored from the same point: the longest token prefix that the prompt with its prefix and all
        the whole texts share. Where a tokenization merges the end of the prefix into an option (`"Answer: "`
        then `"Yes"` is `" Yes"`, not `" "` then `"Yes"`), that point moves back before the merge for every
        option alike, so no option is scored after a token the model would rarely write and all compete on the
        same footing.
        """
        result = self.chat_formatter(messages=messages)
        add_bos = not result.added_special

        def tokenize(text: str) -> list[int]:
            return self.llama.tokenize(text.encode(), add_bos=add_bos, special=True)

        context = tokenize(result.prompt + prefix)
        wholes = [tokenize(result.prompt + prefix + option) for option in options]
        shared = len(context)
        for whole in wholes:
            shared = min(shared, common_prefix(context, whole))
        if any(len(whole) <= shared for whole in wholes):  # an option that adds no token of its own after the point
            return context, [self.llama.tokenize(option.encode(), add_bos=False, special=False) for option in options]
        return context[:shared], [whole[shared:] for whole in wholes]


_GGML_LOG_ERROR = 4  # ggml: 1 debug, 2 info, 3 warn, 4 error, 5 continuation


def require_llama_cpp() -> None:
    """Refuse, in one line that names the pip command, to open a local model without llama-cpp-python (the
    `[local]` extra: it compiles llama.cpp, so a plain `pip install noosphere` leaves it out)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingDependencyError("llama-cpp-python", "local", "local models (llama.cpp)")


@dataclass
class GgufLoader:
    """The process's loaded GGUF models, by file and context size, and llama.cpp's log callback.

    Mutable on purpose: it is the cache. The callback is kept here because llama.cpp holds only a C pointer to
    it: the Python object must stay alive for as long as the process logs.
    """

    loaded: dict[tuple[str, int], LoadedModel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    log_callback: Any = None

    def load(self, path: Path, n_ctx: int, n_threads: int | None) -> LoadedModel:
        """Load a GGUF file once per process and context size; later callers share it."""
        key = (str(path.resolve()), n_ctx)
        with self.lock:
            if key not in self.loaded:
                require_llama_cpp()
                from llama_cpp import Llama

                self._quiet_logs()
                threads = n_threads or os.cpu_count() or 1  # llama-cpp-python would use only half the cores
                llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                              n_batch=512, flash_attn=True, verbose=False, seed=0)
                self.loaded[key] = LoadedModel(llama, threads)
            return self.loaded[key]

    def _quiet_logs(self) -> None:
        """Keep llama.cpp's informational lines (context sizes and the like) out of the user's terminal; errors
        still reach stderr."""
        if self.log_callback is not None:
            return
        import llama_cpp

        @llama_cpp.llama_log_callback
        def forward_errors(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            if level == _GGML_LOG_ERROR:
                sys.stderr.write(text.decode("utf-8", "replace"))

        self.log_callback = forward_errors
        llama_cpp.llama_log_set(forward_errors, ctypes.c_void_p(0))


LOADER = GgufLoader()
"""The one loader of the process: a model's weights are in memory once, however many backends use them."""


def load_gguf(path: Path, n_ctx: int, n_threads: int | None) -> LoadedModel:
    """Load a GGUF file once per process and context size (`LOADER`); later callers share it."""
    return LOADER.load(path, n_ctx, n_threads)
