"""What a key that a benchmark run's `config.json` lacks stands for.

A bench command saves some options only when they are given, and options added to a bench later are missing from
the configs of runs made before them. Either way the run played a known value: `played` fills it in. Resuming a run
(`noosphere bench ... --resume`) and pairing runs of one engine (`noosphere calibration`) read a config through it,
so a run that saved `--processors functions` and an older one that could not are the same engine. A key with no
known value stays absent (null).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

ABSENT_MEANS: Mapping[str, Any] = MappingProxyType({
    "deterministic": False,
    # the game benchmarks' meta-agent options, saved when given (a react-scored run's margin: `played`)
    "judge": False, "margin": None, "graph": None, "planner_view": "team", "focus": "replay", "recall_view": "team",
    "recall_at": "start",
    # options added after runs were made without them, or saved only when they differ from this value
    "scores": "verbal", "stm_samples": 1, "calibrate": False, "stm_alpha": "label", "ablation": [],  # mustard, bfcl
    "processors": "functions", "motor": "select",  # bench bfcl
    "form": "statement", "repairs": 0, "weighted": False,  # bench gsm8k (`weights`: `played`)
    "specify": False,  # bench roleplay
})


def played(config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with each key it lacks that has a known value filled in: `ABSENT_MEANS`, a react-scored run made
    before margins played margin 0 (`bench.games.player`), and a best-of-N run made before `--weights` has the
    weights its `--weighted` chose."""
    absent = copy.deepcopy(dict(ABSENT_MEANS))  # a caller's edit of a filled-in list never reaches the table
    if config.get("system") == "react-scored":
        absent["margin"] = 0.0
    absent["weights"] = "p-true" if config.get("weighted") else "none"
    return {**absent, **config}


def saved_value(config: Mapping[str, Any], key: str) -> Any:
    """The value a run played for `key`: its config's, else what the key's absence stands for (None if unknown)."""
    return config[key] if key in config else played(config).get(key)
