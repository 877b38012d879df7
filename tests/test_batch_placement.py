"""Where the batch engine puts a new request: pure slot bookkeeping, no model loaded."""

from __future__ import annotations

from noosphere.llm.batching import BatchEngine, GenerationJob, _Slot


def place(slots: list[_Slot], tokens: list[int]) -> tuple[int, int, int]:
    engine = BatchEngine.__new__(BatchEngine)  # the placement reads the slots only
    engine._slots = slots
    own, source, reuse = engine._placement(GenerationJob(tokens, 8, 0.0, 1.0, 0), [s for s in slots if s.job is None])
    return own.seq, source.seq, reuse


def test_a_new_request_takes_an_empty_slot_then_the_least_recently_used_cache() -> None:
    kept = list(range(100, 160))
    assert place([_Slot(0, cached=kept, last_used=1), _Slot(1, last_used=2)], [7] * 40)[0] == 1
    assert place([_Slot(0, cached=kept, last_used=3), _Slot(1, cached=kept[::-1], last_used=2)], [7] * 40)[0] == 1


def test_a_request_continues_the_cache_it_shares_a_prefix_with() -> None:
    kept = list(range(100, 160))
    assert place([_Slot(0, last_used=0), _Slot(1, cached=kept, last_used=1)], [*kept, 5, 6]) == (1, 1, 60)
    # a few tokens in common (a chat template's opening) do not make a cache worth overwriting
    assert place([_Slot(0, last_used=0), _Slot(1, cached=kept, last_used=1)], [*kept[:3], 9] * 10)[0] == 0
