"""Argument types shared by the scripts under `benchmarks/` (argparse, not typer: they are scripts)."""

from __future__ import annotations

import argparse


def at_least_one(text: str) -> int:
    """A whole number of 1 or more: a count of items, games, actions, trials or parallel calls (`--limit 0` would
    otherwise mean every item, `--parallel 0` the script's own count, `--games 0` no cost per action)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be 1 or more")
    return value
