"""Environment variables set for one block alone, never for the rest of the process.

Some packages read a setting from the environment once, when they are imported or load a model:
LiteLLM whether to fetch its price map from the network, the Hugging Face hub whether it is offline.
noosphere sets what it needs around that import or load and puts the environment back afterwards,
so importing noosphere, or using it, changes nothing for the rest of the program.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set each variable the process does not already have (a value the user set wins) for the `with` block,
    then remove it again."""
    added = [name for name in values if name not in os.environ]
    for name in added:
        os.environ[name] = values[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
