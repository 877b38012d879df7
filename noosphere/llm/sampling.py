"""One sequence's sampler: llama.cpp's sampler chain, with an optional JSON grammar checked lazily.

The chain mirrors what llama-cpp-python's own completion uses (top-k 40, top-p, min-p 0.05,
temperature, a seeded draw; greedy at temperature 0), so a request decoded in a batch is sampled as
it would be alone. The grammar is applied the way llama.cpp's own server does it: the token is
drawn first without it and then checked alone against it, and only a rejected token costs a pass of
the grammar over the whole vocabulary. Checking every candidate of a 150,000-token vocabulary at
every step would cost more than the decode step itself for small models.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

TOP_K = 40
MIN_P = 0.05
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class SequenceSampler:
    def __init__(self, llama_cpp: Any, vocab: Any, *, grammar: str | None, temperature: float, top_p: float,
                 seed: int) -> None:
        self._llama = llama_cpp
        self._grammar: Any = None
        self._chain: Any = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        if temperature <= 0:
            samplers = [llama_cpp.llama_sampler_init_greedy()]
        else:
            samplers = [llama_cpp.llama_sampler_init_top_k(TOP_K), llama_cpp.llama_sampler_init_top_p(top_p, 1),
                        llama_cpp.llama_sampler_init_min_p(MIN_P, 1), llama_cpp.llama_sampler_init_temp(temperature),
                        llama_cpp.llama_sampler_init_dist(seed & 0xFFFFFFFF)]
        for sampler in samplers:
            llama_cpp.llama_sampler_chain_add(self._chain, sampler)
        if grammar is not None:
            self._grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not self._grammar:
                self.close()
                raise ValueError("llama.cpp rejected the grammar compiled from the JSON schema")
            self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
            self._one = np.zeros(1, dtype=_TOKEN_DATA)

    def sample(self, ctx: Any, index: int) -> int:
        """Pick the next token from the logits at `index` of the last batch, and advance the grammar."""
        token = int(self._llama.llama_sampler_sample(self._chain, ctx, index))
        if self._grammar is None:
            return token
        self._one[0] = (token, 1.0, 0.0)
        self._apply(self._grammar, self._one)
        if not np.isfinite(self._one[0]["logit"]):  # the grammar forbids it: draw again among what it allows
            candidates = np.empty(self._n_vocab, dtype=_TOKEN_DATA)
            candidates["id"] = np.arange(self._n_vocab)
            logits = self._llama.llama_get_logits_ith(ctx, index)
            candidates["logit"] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
            candidates["p"] = 0.0
            self._apply(self._grammar, candidates)
            selected = self._apply(self._chain, candidates)
            token = int(candidates[selected]["id"])
        self._llama.llama_sampler_accept(self._grammar, token)
        return token

    def _apply(self, sampler: Any, candidates: np.ndarray) -> int:
        """Run a sampler over candidate tokens in place; return the index it selected (or -1)."""
        llama = self._llama
        view = llama.llama_token_data_array(
            data=candidates.ctypes.data_as(ctypes.POINTER(llama.llama_token_data)), size=len(candidates),
            selected=-1, sorted=False)
        llama.llama_sampler_apply(sampler, ctypes.byref(view))  # sorts and truncates in place; index stays valid
        return int(view.selected)

    def close(self) -> None:
        for name in ("_chain", "_grammar"):
            sampler = getattr(self, name)
            if sampler:
                self._llama.llama_sampler_free(sampler)  # a chain frees the samplers added to it
            setattr(self, name, None)
