"""The batch engine of the embedded backend, on real small models. Skipped without weights."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from noosphere.errors import ModelError
from noosphere.llm import Message, Settings, open_model
from noosphere.llm.batching import GenerationJob
from noosphere.llm.weights import LOCAL_WEIGHTS, is_installed

pytestmark = pytest.mark.real_model

GREEDY = Settings(max_tokens=24, temperature=0.0)


def _require(name: str) -> str:
    if not is_installed(LOCAL_WEIGHTS[name]):
        pytest.skip(f"weights for {name} not installed ({LOCAL_WEIGHTS[name].pip_command})")
    return f"local:{name}"


def test_one_request_in_the_engine_matches_the_serial_path_token_for_token() -> None:
    model_id = _require("qwen2.5-coder-0.5b")
    serial, batched = open_model(model_id, slots=None), open_model(model_id)
    for prompt in ["Name three primary colours.", "What is 12 times 12? Explain briefly."]:
        alone = serial.complete_sync(prompt, settings=GREEDY)
        engine = batched.complete_sync(prompt, settings=GREEDY)
        assert engine.text == alone.text
        assert (engine.usage.prompt_tokens, engine.usage.completion_tokens) == (
            alone.usage.prompt_tokens, alone.usage.completion_tokens)


async def _together(model_id: str, prompts: list[str], output: type[BaseModel] | None = None) -> list:
    model = open_model(model_id)
    return await asyncio.gather(*[model.complete(p, settings=GREEDY, output=output) for p in prompts])


def test_concurrent_requests_are_decoded_in_shared_steps_and_share_their_prefix() -> None:
    model_id = _require("smollm2-135m")
    engine = open_model(model_id).backend.engine
    before = engine.stats.steps, engine.stats.generated_tokens, engine.stats.reused_prompt_tokens
    system = "You are a patient tutor who answers in one short sentence. " * 8
    prompts = [f"{system}\nQuestion {i}: what is {i} plus {i}?" for i in range(4)]
    replies = asyncio.run(_together(model_id, prompts))
    steps = engine.stats.steps - before[0]
    generated = engine.stats.generated_tokens - before[1]
    assert all(r.usage.completion_tokens > 0 for r in replies)
    assert generated > steps  # several sequences advanced in one decode step
    reused = engine.stats.reused_prompt_tokens - before[2]
    assert reused >= 3 * 60  # the shared prefix was evaluated once
    assert sum(r.usage.reused_prompt_tokens for r in replies) == reused  # and each call reports its share


class Colour(BaseModel):
    name: str
    warm: bool


def test_schema_constrained_output_holds_in_a_batch() -> None:
    model_id = _require("smollm2-135m")
    replies = asyncio.run(_together(model_id, [f"Describe colour number {i} as JSON." for i in range(4)], Colour))
    assert all(isinstance(r.output, Colour) for r in replies)


def test_cancelling_one_request_leaves_the_others_running() -> None:
    model_id = _require("smollm2-135m")
    model = open_model(model_id)
    long = Settings(max_tokens=64, temperature=0.0)

    stats = model.backend.engine.stats
    before = stats.generated_tokens  # the engine is shared with other tests of this model

    async def scenario() -> tuple[list, bool]:
        tasks = [asyncio.create_task(model.complete(f"Tell a story about animal {i}.", settings=long))
                 for i in range(3)]
        while stats.generated_tokens - before < 6:  # all three are decoding
            await asyncio.sleep(0.02)
        tasks[1].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        return done, model.backend.engine.stats.steps > 0

    results, stepped = asyncio.run(scenario())
    assert stepped and isinstance(results[1], asyncio.CancelledError)
    assert all(r.usage.completion_tokens > 0 for r in (results[0], results[2]))
    # the cancelled story stopped being decoded: far fewer tokens than the 64 it would have run to
    others = results[0].usage.completion_tokens + results[2].usage.completion_tokens
    assert stats.generated_tokens - before - others < long.max_tokens // 2
    assert not any(slot.job for slot in model.backend.engine._slots)  # the cancelled slot was released


def test_a_failed_decode_step_fails_its_jobs_with_a_retryable_error_and_the_engine_recovers() -> None:
    model_id = _require("smollm2-135m")
    model = open_model(model_id)
    engine = model.backend.engine
    poisoned = GenerationJob([1, 10**8, 2], max_tokens=4, temperature=0.0, top_p=1.0, seed=0)  # not a token id
    with pytest.raises(ModelError) as failure:
        engine.submit(poisoned).result(timeout=60)
    assert failure.value.retryable
    assert model.complete_sync("Say yes.", settings=GREEDY).usage.completion_tokens > 0


def test_a_conversation_keeps_its_cache_while_as_many_unrelated_requests_as_other_sequences_come_and_go() -> None:
    """Least recently used first: the follow-up of the latest conversation finds its prefix still cached."""
    model = open_model(_require("smollm2-135m"))
    others = len(model.backend.engine._slots) - 1
    opening = [Message.system("You are a ship's cook who answers in one sentence. " * 6),
               Message.user("What do sailors eat on long voyages?")]
    first = model.complete_sync(opening, settings=GREEDY)
    for i in range(others):
        model.complete_sync([Message.system(f"Persona {i}: a clerk who counts things. " * 6),
                             Message.user(f"Count to {i + 2}.")], settings=GREEDY)
    follow_up = model.complete_sync([*opening, Message.assistant(first.text), Message.user("And to drink?")],
                                    settings=GREEDY)
    assert follow_up.usage.reused_prompt_tokens >= first.usage.prompt_tokens - 4


def test_deterministic_decoding_does_not_depend_on_what_runs_beside_it() -> None:
    """Isolated jobs run one at a time from an empty cache: the same text alone and among three others
    that share its prefix (which, batched, would have copied that prefix and decoded beside it)."""
    model_id = _require("qwen2.5-coder-0.5b")
    model = open_model(model_id, deterministic=True)
    system = Message.system("You are a careful assistant who explains arithmetic step by step.")
    target = [system, Message.user("What is 17 times 23? Explain briefly.")]

    async def alone() -> str:
        return (await model.complete(target, settings=GREEDY)).text

    async def crowded() -> str:
        others = [model.complete([system, Message.user(f"What is {n} times 7?")], settings=GREEDY)
                  for n in range(11, 14)]
        results = await asyncio.gather(model.complete(target, settings=GREEDY), *others)
        return results[0].text

    first = asyncio.run(alone())
    assert first.strip()
    assert asyncio.run(crowded()) == first
    assert model.backend.engine.stats.reused_prompt_tokens == 0 or model.backend.deterministic
