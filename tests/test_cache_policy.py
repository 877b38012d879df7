"""The offline replay of `benchmarks/cache_policy.py`: reuse and cells held, with and without an idle budget."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def policy() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cache_policy", ROOT / "benchmarks" / "cache_policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cache_policy"] = module
    spec.loader.exec_module(module)
    return module


def calls(policy: ModuleType) -> list:
    system = tuple(range(100))  # a shared system prompt, then each conversation's own text
    own = {name: tuple(range(1000 * (i + 1), 1000 * (i + 1) + 300)) for i, name in enumerate("abc")}
    out, t = [], 0.0
    for turn in range(3):
        for name in "abc":
            prompt = (*system, *own[name], *range(5000 + turn * 10, 5000 + turn * 10 + turn))
            out.append(policy.Call(t, t + 1, prompt, (7, 8)))
            t += 2
    return out


def test_keeping_caches_reuses_each_conversations_prefix_and_holds_its_cells(policy: ModuleType) -> None:
    kept = policy.replay(calls(policy))
    # the first call evaluates all 400 tokens, the next two copy the system prompt (100) and evaluate their own 300;
    # later turns continue their own cache and evaluate only what their turn added (1 token, then 2)
    assert kept["evaluated"] == 400 + 300 + 300 + 3 * 1 + 3 * 2
    assert kept["reused_pct"] > 60


def test_an_idle_budget_drops_caches_and_loses_their_reuse(policy: ModuleType) -> None:
    kept, tight = policy.replay(calls(policy)), policy.replay(calls(policy), idle_budget=150)
    assert tight["evaluated"] > kept["evaluated"]
    assert tight["cells_per_decoded_token"] < kept["cells_per_decoded_token"]
