"""What a key that a benchmark run's `config.json` lacks stands for.

A bench command saves some options only when they are given, and options added to a bench later are missing from
the configs of runs made before them. Either way the run played a known value: the one listed here. Resuming a run
(`noosphere bench ... --resume`) and pairing runs of one engine (`noosphere calibration`) read a missing key as
this value, so a run that saved `--processors functions` and an older one that could not are the same engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

ABSENT_MEANS: Mapping[str, Any] = MappingProxyType({
    "deterministic": False,
    # the game benchmarks' meta-agent options, saved when given (a react-scored run's margin: see the CLI)
    "judge": False, "margin": None, "graph": None, "planner_view": "team", "focus": "replay", "recall_view": "team",
    "recall_at": "start",
    # options added after runs were made without them, saved ever since (or, `repairs`, saved when set)
    "processors": "functions",  # bench bfcl
    "form": "statement", "repairs": 0,  # bench gsm8k
    "stm_alpha": "label",  # bench mustard
    "specify": False,  # bench roleplay
})


def saved_value(config: Mapping[str, Any], key: str) -> Any:
    """The value a run played for `key`: its config's, else what the key's absence stands for (None if unknown)."""
    return config[key] if key in config else ABSENT_MEANS.get(key)
