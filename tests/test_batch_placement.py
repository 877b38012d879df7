"""Where the batch engine puts a new request: pure slot bookkeeping, no model loaded."""

from __future__ import annotations

from collections import deque

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


def test_a_prefix_shared_with_a_longer_cache_is_copied_into_an_empty_slot_not_taken_over() -> None:
    """Members who share a system prompt must not overwrite each other's conversations."""
    system, conversation = list(range(100, 160)), list(range(500, 540))
    slots = [_Slot(0, cached=[*system, *conversation], last_used=1), _Slot(1)]
    assert place(slots, [*system, 7, 8, 9]) == (1, 0, 60)


def test_when_every_cache_holds_more_the_least_recently_used_goes_and_the_prefix_is_copied() -> None:
    system = list(range(100, 160))
    slots = [_Slot(0, cached=[*system, 1, *range(40)], last_used=5),
             _Slot(1, cached=list(range(900, 990)), last_used=2)]
    assert place(slots, [*system, 7, 8, 9]) == (1, 0, 60)


def test_no_request_starts_while_as_many_run_as_there_are_slots_even_with_idle_sequences_left() -> None:
    engine = BatchEngine.__new__(BatchEngine)
    running = GenerationJob([1, 2], 8, 0.0, 1.0, 0)
    engine._slots = [_Slot(0, job=running), _Slot(1, job=running), _Slot(2), _Slot(3)]
    engine.running_limit = 2
    engine._waiting = deque([GenerationJob([3, 4], 8, 0.0, 1.0, 0)])
    engine._admit()
    assert len(engine._waiting) == 1 and [s.job for s in engine._slots[2:]] == [None, None]


class _CellCounter:
    """Stands in for llama.cpp where admission only counts cells and drops sequences."""

    def __init__(self, engine: BatchEngine) -> None:
        self.engine, self.dropped = engine, []

    def llama_kv_self_used_cells(self, ctx: object) -> int:
        return sum(len(slot.cached) for slot in self.engine._slots)

    def llama_memory_seq_rm(self, memory: object, seq: int, start: int, end: int) -> bool:
        self.dropped.append(seq)
        return True


def test_a_sequence_started_afresh_frees_its_own_cells_before_any_other_cache_is_evicted() -> None:
    system = list(range(100, 160))
    engine = BatchEngine.__new__(BatchEngine)
    engine._slots = [_Slot(0, cached=list(range(1000, 1400)), last_used=1),
                     _Slot(1, cached=list(range(2000, 2300)), last_used=2),
                     _Slot(2, cached=[*system, *range(3000, 3140)], last_used=3)]
    engine.running_limit, engine.n_ctx, engine._memory, engine._ctx = 3, 1000, None, None
    engine._llama = _CellCounter(engine)
    engine._waiting = deque([GenerationJob([*system, *range(4000, 4340)], 100, 0.0, 1.0, 0)])
    started = []
    engine._start = lambda job, slot, source, reuse: started.append((slot.seq, source.seq, reuse))
    engine._admit()
    assert started == [(0, 2, 60)]
    assert engine._llama.dropped == [0] and len(engine._slots[1].cached) == 300  # nothing else was evicted
