"""Loading GGUF weights once per process, with the thread and batch engine that go with them.

A `Llama` object is not thread-safe and holds the weights in memory, so each GGUF file is loaded
once per process and context size, and every generation on it runs on that model's one dedicated
thread, which serialises access and keeps the event loop free. One long-lived thread also matters
for speed: llama.cpp's OpenMP workers belong to the calling thread, and a new caller each time can
leave the old workers spinning against the new ones on a 2-core machine.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from noosphere.errors import ModelError
from noosphere.llm.batching import BatchEngine

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


_LOADED: dict[tuple[str, int], LoadedModel] = {}
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


def load_gguf(path: Path, n_ctx: int, n_threads: int | None) -> LoadedModel:
    """Load a GGUF file once per process and context size; later callers share it."""
    key = (str(path.resolve()), n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from llama_cpp import Llama

            _quiet_llama_logs()
            threads = n_threads or os.cpu_count() or 1  # llama-cpp-python would use only half the cores
            llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                          n_batch=512, flash_attn=True, verbose=False, seed=0)
            _LOADED[key] = LoadedModel(llama, threads)
        return _LOADED[key]
