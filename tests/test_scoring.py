"""Option scoring in the model layer (scripted and provider doubles) and probability scores in the workspace."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from noosphere.errors import (
    BudgetExceededError,
    CapabilityError,
    ModelError,
    OutputParseError,
    UnknownNameError,
    UsageError,
)
from noosphere.llm import Budget, CallCache, Capabilities, Message, Model, ScriptedBackend, UsageLedger
from noosphere.llm.litellm_backend import first_token_scores
from noosphere.llm.scoring import contextual_calibration, from_logprobs
from noosphere.llm.types import ScoreRequest
from noosphere.observation import Observation
from noosphere.trace import Trace
from noosphere.workspace import WorkspaceSettings, classify
from noosphere.workspace.scores import ANSWER_CORRECT_QUESTION
from tests.helpers import scripted


def scorer_of(table: dict[str, float]) -> Any:
    return lambda request: {option: table.get(option, 0.0) for option in request.options}


async def test_probabilities_over_the_options_with_entropy_and_a_trace_event() -> None:
    model, backend, trace = scripted([], scorer=scorer_of({"sarcastic": 0.3, "not sarcastic": 0.1}))
    scores = await model.score_options([Message.user("Is it sarcastic?")], ["sarcastic", "not sarcastic"],
                                       agent="stm")
    assert scores.probs == pytest.approx((0.75, 0.25))
    assert scores.best == "sarcastic" and scores.prob("not sarcastic") == pytest.approx(0.25)
    assert scores.entropy == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    [event] = trace.of_kind("options_scored")
    assert event.options == ["sarcastic", "not sarcastic"] and event.probs == pytest.approx([0.75, 0.25])
    assert event.agent == "stm" and event.method == "logprob" and event.note is None
    assert backend.score_history[0].options == ("sarcastic", "not sarcastic")


def test_length_normalisation_is_named_and_changes_the_ranking() -> None:
    # a two-token option with 0.5 per token against a one-token option at 0.3
    logprobs = (2 * math.log(0.5), math.log(0.3))
    total = from_logprobs(("a b", "c"), logprobs, (2, 1), "sum", "logprob")
    per_token = from_logprobs(("a b", "c"), logprobs, (2, 1), "mean", "logprob")
    assert total.best == "c" and per_token.best == "a b"
    assert sum(total.probs) == pytest.approx(1.0) and sum(per_token.probs) == pytest.approx(1.0)


@pytest.mark.parametrize(("options", "match"), [
    (["Yes", "Yes"], "listed twice"),
    (["Yes", ""], "empty"),
    (["Yes", "   "], "empty"),
    (["Yes"], "at least two"),
    ("Yes", "not one string"),
    (["Yes", 3], "must be strings"),
    (None, "list of strings, not NoneType"),
    (3, "list of strings, not int"),
    (b"Yes", "not one string"),
])
async def test_bad_option_sets_are_refused_before_any_call(options: Any, match: str) -> None:
    model, backend, _ = scripted([], scorer=scorer_of({}))
    with pytest.raises(UsageError, match=match):
        await model.score_options("q", options)
    assert backend.score_history == []


@pytest.mark.parametrize(("arguments", "match"), [
    ({"method": "verbal"}, "unknown scoring method 'verbal'"),
    ({"method": "first_token"}, "unknown scoring method"),
    ({"fallback": "verbal"}, "unknown fallback 'verbal'"),
    ({"prefix": None}, "prefix must be a string"),
    ({"prefix": 3}, "prefix must be a string"),
    ({"samples": 0}, "at least 1 and at most 1024 .each is a model call., not 0"),
    ({"method": "samples", "samples": -2}, "not -2"),
    ({"method": "samples", "samples": 10**9}, "at most 1024 .*not 1000000000"),  # a billion calls were started
    ({"method": "samples", "samples": 2.5}, "whole number, not float"),
    ({"method": "samples", "samples": "3"}, "whole number, not str"),
    ({"method": "samples", "samples": True}, "whole number, not bool"),
])
async def test_bad_scoring_arguments_are_refused_before_any_call_never_read_as_another(arguments: dict[str, Any],
                                                                                       match: str) -> None:
    model, backend, trace = scripted(lambda request: {"answer": "a"}, scorer=scorer_of({}))
    with pytest.raises(UsageError, match=match):
        await model.score_options("q", ["a", "b"], **arguments)
    with pytest.raises(UsageError, match=match):
        model.check_scoring(["a", "b"], **{k: v for k, v in arguments.items()})
    assert backend.score_history == [] and backend.history == [] and not trace.of_kind("options_scored")


async def test_unknown_normalisation_is_refused() -> None:
    model, backend, _ = scripted([], scorer=scorer_of({}))
    with pytest.raises(UsageError, match="normalisation"):
        await model.score_options("q", ["a", "b"], normalise="max")  # type: ignore[arg-type]
    assert backend.score_history == []


async def test_a_model_that_cannot_score_fails_fast_and_never_falls_back_silently() -> None:
    model, backend, trace = scripted([])
    assert not model.capabilities.logprobs
    with pytest.raises(CapabilityError, match="logprobs"):
        await model.score_options("q", ["Yes", "No"])
    assert backend.history == [] and not trace.of_kind("options_scored")


async def test_sampling_fallback_only_when_asked_and_says_so() -> None:
    answers = iter(["Yes", "Yes", "No", "Yes"])
    model, backend, trace = scripted(lambda request: {"answer": next(answers)})
    scores = await model.score_options("Is it?", ["Yes", "No"], fallback="samples", samples=4)
    assert scores.method == "samples" and scores.probs == pytest.approx((0.75, 0.25))
    assert len(backend.history) == 4
    assert {r.settings.temperature for r in backend.history} == {0.7}
    assert len({r.settings.seed for r in backend.history}) == 4
    [event] = trace.of_kind("options_scored")
    assert event.method == "samples" and "sampled answers" in (event.note or "")


async def test_sampling_that_never_names_an_option_is_an_output_error() -> None:
    model, _, _ = scripted(lambda request: "no idea")
    with pytest.raises(OutputParseError):
        await model.score_options("Is it?", ["Yes", "No"], fallback="samples", samples=2)


async def test_p_true_is_the_probability_of_yes() -> None:
    model, backend, _ = scripted([], scorer=scorer_of({"Yes": 0.2, "No": 0.6}))
    assert await model.p_true("Is 2 + 2 = 5? Answer Yes or No.") == pytest.approx(0.25)
    assert backend.score_history[0].options == ("Yes", "No")


async def test_scores_are_cached_and_counted_as_calls(tmp_path: Path) -> None:
    calls = []

    def scorer(request: ScoreRequest) -> dict[str, float]:
        calls.append(request)
        return {"A": 0.9, "B": 0.1}

    backend = ScriptedBackend([], scorer=scorer)
    ledger = UsageLedger()
    model = Model(backend, trace=Trace(None), cache=CallCache(tmp_path / "c.sqlite"), ledger=ledger)
    first = await model.score_options("pick", ["A", "B"])
    second = await model.score_options("pick", ["A", "B"])
    third = await model.score_options("pick", ["A", "B"], prefix="Answer: ")
    assert first == second and len(calls) == 2 and third.best == "A"
    assert ledger.calls == 3
    events = model.trace.of_kind("options_scored")
    assert [e.cached for e in events] == [False, True, False]


async def test_a_spent_budget_stops_scoring_before_the_call() -> None:
    backend = ScriptedBackend([], scorer=scorer_of({"A": 1.0}))
    model = Model(backend, trace=Trace(None), ledger=UsageLedger(Budget(max_calls=1)))
    await model.score_options("pick", ["A", "B"])
    with pytest.raises(BudgetExceededError):
        await model.score_options("pick again", ["A", "B"])
    assert len(backend.score_history) == 1


async def test_a_retryable_fault_while_scoring_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.llm import model as model_module

    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.0)
    outcomes = iter([ModelError("scripted", "busy", retryable=True), {"A": 0.5, "B": 0.5}])
    model, _, trace = scripted([], scorer=lambda request: next(outcomes))
    scores = await model.score_options("pick", ["A", "B"])
    assert scores.probs == pytest.approx((0.5, 0.5)) and len(trace.of_kind("model_retried")) == 1


# provider scoring: first-token alternatives ------------------------------------------------------

def test_first_token_scores_add_up_the_alternatives_an_option_starts_with() -> None:
    top = [("Yes", math.log(0.6)), (" yes", math.log(0.1)), ("No", math.log(0.2)), ("Maybe", math.log(0.05))]
    yes, no = first_token_scores(("Yes", "No"), top)
    assert math.exp(yes) == pytest.approx(0.7) and math.exp(no) == pytest.approx(0.2)
    # an option no alternative starts gets the smallest alternative's share, an upper bound
    _, _, unseen = first_token_scores(("Yes", "No", "Perhaps"), top)
    assert math.exp(unseen) == pytest.approx(0.05)
    # one alternative alone (a provider that caps them): the other option has at most what it leaves over
    yes, no = first_token_scores(("Yes", "No"), [("Yes", -0.001)])
    assert math.exp(no) == pytest.approx(1 - math.exp(-0.001)) and yes > no + 6


def test_first_token_scores_refuse_options_that_share_their_first_token() -> None:
    with pytest.raises(UsageError, match="same token"):
        first_token_scores(("not sure", "not sarcastic"), [("not", -0.1), ("yes", -2.0)])


def _fake_response(top: list[tuple[str, float]] | None) -> Any:
    logprobs = None if top is None else SimpleNamespace(content=[SimpleNamespace(
        token=top[0][0], logprob=top[0][1],
        top_logprobs=[SimpleNamespace(token=t, logprob=lp) for t, lp in top])])
    choice = SimpleNamespace(logprobs=logprobs, message=SimpleNamespace(content=top[0][0] if top else "Yes"),
                             finish_reason="length")
    return SimpleNamespace(choices=[choice], usage=SimpleNamespace(prompt_tokens=12, completion_tokens=1))


@pytest.mark.provider_double
async def test_a_provider_with_logprobs_scores_options_and_one_without_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.llm import open_model
    from noosphere.llm.litellm_backend import import_litellm

    litellm = import_litellm()
    sent: list[dict[str, Any]] = []
    ended = _fake_response([("Yes", 0.0)])
    ended.choices[0].logprobs.content = []  # logprobs sent, for no token: the reply ended at once
    responses = iter([_fake_response([("Yes", math.log(0.8)), ("No", math.log(0.15))]), _fake_response(None), ended])

    async def fake_acompletion(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return next(responses)

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    model = open_model("litellm:openai/gpt-4o-mini", trace=Trace(None))
    assert model.capabilities.logprobs
    scores = await model.score_options("Is it raining? Answer Yes or No.", ["Yes", "No"])
    assert scores.method == "first_token" and scores.prob("Yes") == pytest.approx(0.8 / 0.95)
    assert sent[0]["logprobs"] is True and sent[0]["top_logprobs"] == 20 and sent[0]["max_tokens"] == 1
    [event] = model.trace.of_kind("options_scored")
    assert "first token" in (event.note or "")
    with pytest.raises(CapabilityError, match="provider returned none"):
        await model.score_options("Is it snowing? Answer Yes or No.", ["Yes", "No"])
    with pytest.raises(ModelError, match="for no token"):
        await model.score_options("Is it hailing? Answer Yes or No.", ["Yes", "No"])
    with pytest.raises(CapabilityError, match="prefix"):
        await model.score_options("Is it?", ["Yes", "No"], prefix="Answer: ")
    with pytest.raises(UsageError, match="same once case and spaces are ignored"):
        await model.score_options("Is it?", ["Yes", " yes"])
    assert len(sent) == 3 and model.ledger.calls == 1  # both refused before any call (the failed one is not counted)


@pytest.mark.provider_double
async def test_first_tokens_that_name_no_option_or_carry_no_logprob_are_model_errors_and_none_sent_is_usage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.llm import open_model
    from noosphere.llm.litellm_backend import import_litellm

    litellm = import_litellm()
    empty_top = _fake_response([("Yes", -0.1)])
    empty_top.choices[0].logprobs.content[0].top_logprobs = []
    null_top = _fake_response([("Yes", -0.1)])
    null_top.choices[0].logprobs.content[0].top_logprobs = None
    responses = iter([_fake_response([("Sure", math.log(0.7)), ("I", math.log(0.2))]), empty_top, null_top])

    async def fake_acompletion(**kwargs: Any) -> Any:
        return next(responses)

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    model = open_model("litellm:openai/gpt-4o-mini", trace=Trace(None))
    with pytest.raises(ModelError, match="none of the options \\['Yes', 'No'\\] is among the first token's 2"):
        await model.score_options("Is it raining?", ["Yes", "No"])  # not a uniform 0.5 / 0.5
    with pytest.raises(ModelError, match="an empty top_logprobs"):  # this call's fault: the turn forfeits
        await model.score_options("Is it snowing?", ["Yes", "No"])
    with pytest.raises(CapabilityError, match="top_logprobs"):  # never sent: a server that ignores it stops the run
        await model.score_options("Is it hailing?", ["Yes", "No"])
    assert not model.trace.of_kind("options_scored")


@pytest.mark.provider_double
async def test_a_providers_reply_carries_the_sum_of_its_token_logprobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.llm import open_model
    from noosphere.llm.litellm_backend import import_litellm

    litellm = import_litellm()
    sent: list[dict[str, Any]] = []
    tokens = SimpleNamespace(content=[SimpleNamespace(token="Re", logprob=-0.25), SimpleNamespace(token="d",
                                                                                                  logprob=-0.5)])
    replies = iter([SimpleNamespace(choices=[SimpleNamespace(logprobs=tokens, message=SimpleNamespace(content="Red"),
                                                             finish_reason="stop")],
                                    usage=SimpleNamespace(prompt_tokens=9, completion_tokens=2)),
                    _fake_response(None),
                    SimpleNamespace(choices=[SimpleNamespace(  # a token without its logprob: none for the reply
                        logprobs=SimpleNamespace(content=[SimpleNamespace(token="Re", logprob=None)]),
                        message=SimpleNamespace(content="Red"), finish_reason="stop")],
                        usage=SimpleNamespace(prompt_tokens=9, completion_tokens=1)),
                    SimpleNamespace(choices=[SimpleNamespace(  # an empty reply: no token, so no logprob either
                        logprobs=SimpleNamespace(content=[]), message=SimpleNamespace(content=""),
                        finish_reason="stop")], usage=SimpleNamespace(prompt_tokens=9, completion_tokens=0))])

    async def fake_acompletion(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return next(replies)

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    model = open_model("litellm:openai/gpt-4o-mini", trace=Trace(None))
    completion = await model.complete("Name a primary colour.", logprobs=True)
    assert sent[0]["logprobs"] is True and "top_logprobs" not in sent[0]
    assert completion.logprob == pytest.approx(-0.75) and completion.token_probability == pytest.approx(
        math.exp(-0.375))
    with pytest.raises(CapabilityError, match="provider returned none"):
        await model.complete("Name another.", logprobs=True)
    assert model.ledger.total.prompt_tokens == 9 + 12  # the reply without logprobs was paid for: it is counted
    with pytest.raises(CapabilityError, match="provider returned none"):
        await model.complete("And another.", logprobs=True)
    with pytest.raises(ModelError, match="empty") as empty:  # this turn's fault, not the model's inability
        await model.complete("And one more.", logprobs=True)
    assert not isinstance(empty.value, CapabilityError)


@pytest.mark.provider_double
def test_a_provider_model_without_logprobs_declares_it() -> None:
    from noosphere.llm import open_model

    model = open_model("litellm:anthropic/claude-3-5-haiku-20241022")
    assert not model.capabilities.logprobs


# the workspace with probability scores -------------------------------------------------------------

def _workspace_script(stm_probs: list[dict[str, float]], relevance: float = 0.9) -> Any:
    """Processors write text; every yes/no question gets `relevance`; the STM's label scores come in turn."""
    stm = iter(stm_probs)

    def reply(request: Any) -> Any:
        return {"response": f"evidence from {request.agent}", "additional_question": "who speaks?"}

    def scorer(request: ScoreRequest) -> dict[str, float]:
        if request.options == ("Yes", "No"):
            return {"Yes": relevance, "No": 1 - relevance}
        return next(stm)

    return reply, scorer


async def test_a_probability_workspace_takes_its_label_and_alpha_from_the_label_scores() -> None:
    reply, scorer = _workspace_script([{"sarcastic": 0.55, "not sarcastic": 0.45},
                                       {"sarcastic": 0.9, "not sarcastic": 0.1}])
    model, backend, trace = scripted(reply, scorer=scorer)
    observation = Observation.of({"utterance": "Oh great.", "speaker": "Chandler"})
    result = await classify(model, "Sarcastic?", observation, ("sarcastic", "not sarcastic"),
                            settings=WorkspaceSettings(scores="logprob", threshold=0.8, max_iterations=3))
    assert result.label == "sarcastic" and result.confidence == pytest.approx(0.9)
    assert result.iterations == 2 and result.stopped_by == "confidence"  # alpha 0.55 < tau: the loop went on
    # processors wrote no scores of their own: their chunks carry the probabilities
    produced = trace.of_kind("ws_chunk")
    assert produced and all(c.relevance == pytest.approx(0.9) and c.confidence == pytest.approx(0.9)
                            for c in produced)
    assert all(r.json_schema is None or "relevance" not in r.json_schema["properties"] for r in backend.history)
    # high relevance to the winner's question formed links, which fusion then used
    assert trace.of_kind("ws_link") and trace.of_kind("ws_fusion")
    stm_events = trace.of_kind("ws_stm")
    assert [e.confidence for e in stm_events] == pytest.approx([0.55, 0.9])


async def test_a_judged_alpha_is_the_stms_p_true_of_its_label_not_the_labels_probability() -> None:
    """The label is the most probable one; alpha is P(Yes) to "is this answer right?" asked after it."""
    judged = iter([0.6, 0.85])

    def scorer(request: ScoreRequest) -> dict[str, float]:
        if request.options != ("Yes", "No"):
            return {"sarcastic": 0.01, "not sarcastic": 0.99}  # the gist named a label: it is copied
        if request.agent == "stm":
            assert request.messages[-2].content == "not sarcastic"  # judged after the label it chose
            assert request.messages[-1].content == ANSWER_CORRECT_QUESTION
            yes = next(judged)
            return {"Yes": yes, "No": 1 - yes}
        return {"Yes": 0.9, "No": 0.1}

    model, _, trace = scripted(lambda r: {"response": "not sarcastic: a plain apology", "additional_question": "q?"},
                               scorer=scorer)
    labels = ("sarcastic", "not sarcastic")
    settings = WorkspaceSettings(scores="logprob", threshold=0.8, max_iterations=3, stm_alpha="judged")
    result = await classify(model, "Sarcastic?", Observation.of({"a": "x", "b": "y"}), labels, settings=settings)
    assert result.label == "not sarcastic" and result.confidence == pytest.approx(0.85)
    assert [e.confidence for e in trace.of_kind("ws_stm")] == pytest.approx([0.6, 0.85])
    assert result.iterations == 2  # alpha 0.6 < tau went on, where the label's 0.99 would have stopped at once
    with pytest.raises(UsageError, match="judged alpha"):
        await classify(model, "q", Observation.of({"a": "x"}), labels, settings=WorkspaceSettings(stm_alpha="judged"))
    with pytest.raises(UnknownNameError, match="STM alpha"):
        WorkspaceSettings(stm_alpha="verbal")  # type: ignore[arg-type]


def test_a_workspace_without_labels_refuses_a_judged_alpha_and_calibration_rather_than_ignore_them() -> None:
    """`ask --system ctm` and BFCL's workspace have no label set: a setting that needs one is refused where the STM
    is made, before any call."""
    from noosphere.systems.ctm import workspace_for

    model, backend, _ = scripted([], scorer=lambda request: {"Yes": 0.9, "No": 0.1})
    for settings, says in ((WorkspaceSettings(scores="logprob", stm_alpha="judged"), "without labels"),
                           (WorkspaceSettings(scores="logprob", calibrate=True), "contextual calibration needs")):
        with pytest.raises(UsageError, match=says):
            workspace_for(model, Observation.of({"a": "x"}), settings)
    assert backend.history == []


async def test_low_probability_relevance_forms_no_links() -> None:
    reply, scorer = _workspace_script([{"sarcastic": 0.5, "not sarcastic": 0.5}] * 3, relevance=0.5)
    model, _, trace = scripted(reply, scorer=scorer)
    await classify(model, "Sarcastic?", Observation.of({"a": "x", "b": "y"}), ("sarcastic", "not sarcastic"),
                   settings=WorkspaceSettings(scores="logprob", max_iterations=2))
    assert not trace.of_kind("ws_link")


def test_contextual_calibration_divides_out_the_label_prior() -> None:
    # the model prefers the first label even on a content-free input: dividing it out flips the decision
    assert contextual_calibration((0.7, 0.3), (0.8, 0.2)) == pytest.approx((0.7 / 0.8 / (0.875 + 1.5),
                                                                            1.5 / (0.875 + 1.5)))


async def test_calibrated_stm_scores_a_content_free_input_once_per_query() -> None:
    def scorer(request: ScoreRequest) -> dict[str, float]:
        if request.options == ("Yes", "No"):
            return {"Yes": 0.9, "No": 0.1}
        if "N/A" in request.messages[-1].content:
            return {"sarcastic": 0.8, "not sarcastic": 0.2}
        return {"sarcastic": 0.7, "not sarcastic": 0.3}

    model, backend, _ = scripted(lambda r: {"response": "r", "additional_question": ""}, scorer=scorer)
    result = await classify(model, "Sarcastic?", Observation.of({"a": "x"}), ("sarcastic", "not sarcastic"),
                            settings=WorkspaceSettings(scores="logprob", calibrate=True, max_iterations=3))
    assert result.label == "not sarcastic"
    content_free = [r for r in backend.score_history if "N/A" in r.messages[-1].content]
    assert len(content_free) == 1


async def test_a_workspace_cannot_ask_probabilities_of_a_model_without_them() -> None:
    model, _, _ = scripted([])
    with pytest.raises(CapabilityError, match="logprobs"):
        await classify(model, "q", Observation.of({"a": "x"}), ("x", "y"), settings=WorkspaceSettings(scores="logprob"))
    with pytest.raises(UsageError, match="calibration"):
        await classify(model, "q", Observation.of({"a": "x"}), ("x", "y"), settings=WorkspaceSettings(calibrate=True))
    with pytest.raises(UsageError, match="not scores='samples'"):  # a sampled prior's zeros would decide the label
        await classify(model, "q", Observation.of({"a": "x"}), ("x", "y"),
                       settings=WorkspaceSettings(scores="samples", calibrate=True))


async def test_sampled_scores_work_on_a_model_without_logprobs() -> None:
    def reply(request: Any) -> Any:
        schema = (request.json_schema or {}).get("title")
        if schema == "Choice":
            options = request.json_schema["properties"]["answer"]["enum"]
            return {"answer": options[0]}
        return {"response": "r", "additional_question": ""}

    backend = ScriptedBackend(reply, capabilities=Capabilities(json_schema=True))
    model = Model(backend, trace=Trace(None))
    result = await classify(model, "q", Observation.of({"a": "x"}), ("x", "y"),
                            settings=WorkspaceSettings(scores="samples", max_iterations=1))
    assert result.label == "x" and result.confidence == pytest.approx(1.0)
    scored = model.trace.of_kind("options_scored")  # the trace says why the probabilities were sampled
    assert scored and all(e.note.endswith("sampling was asked for (method='samples')") for e in scored)
    with pytest.raises(UsageError, match="after a prefix"):  # sampled answers start where the reply starts
        await model.score_options("Is it?", ["Yes", "No"], prefix="Answer: ", fallback="samples")
    fallen_back = Model(backend, trace=Trace(None))
    await fallen_back.score_options("Pick one.", ["x", "y"], fallback="samples", samples=2)
    [note] = [e.note for e in fallen_back.trace.of_kind("options_scored")]
    assert note.endswith("the model cannot score options")


def test_options_are_scored_from_the_token_every_one_of_them_shares() -> None:
    """A tokenizer that merges the prefix's last space into " Yes" but not into "Maybe": both options are scored
    from before that space, each split as the model would write it, not "Yes" alone after a lone " "."""
    from types import SimpleNamespace

    from noosphere.llm.llama_loader import LoadedModel

    vocab = ["<p>", "Answer:", " Yes", " ", "Yes", "Maybe"]

    def tokenize(data: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        text, tokens = data.decode(), []
        while text:
            piece = max((v for v in vocab if text.startswith(v)), key=len)
            tokens.append(vocab.index(piece))
            text = text[len(piece):]
        return tokens

    loaded = LoadedModel(SimpleNamespace(tokenize=tokenize), n_threads=1)
    loaded.__dict__["chat_formatter"] = lambda messages: SimpleNamespace(prompt="<p>", added_special=True)
    context, continuations = loaded.scoring_tokens([], "Answer: ", ("Yes", "Maybe"))
    assert [vocab[i] for i in context] == ["<p>", "Answer:"]
    assert [[vocab[i] for i in c] for c in continuations] == [[" Yes"], [" ", "Maybe"]]
    context, continuations = loaded.scoring_tokens([], "Answer:", ("Yes", "Maybe"))  # nothing merges: as before
    assert [vocab[i] for i in context] == ["<p>", "Answer:"] and [[vocab[i] for i in c] for c in continuations] == [
        ["Yes"], ["Maybe"]]


async def test_an_option_that_tokenizes_to_nothing_is_refused_before_the_call_is_counted_or_decoded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Summed over no token, its log-probability would be 0 (probability 1): it would win every time, silently. The
    embedded backend's tokenizer is the one to know; `Model` asks it before the call counts against a budget."""
    from noosphere.llm.local import LocalBackend

    submitted: list[Any] = []
    engine = SimpleNamespace(submit=submitted.append)
    monkeypatch.setattr(LocalBackend, "engine", property(lambda self: engine))
    backend = LocalBackend("local:test", Path("unused.gguf"), fingerprint="test")
    backend._loaded = SimpleNamespace(  # type: ignore[assignment]
        scoring_tokens=lambda messages, prefix, options: ([1, 2], [[3] if o == "Yes" else [] for o in options]))
    trace = Trace()
    model = Model(backend, trace=trace)
    with pytest.raises(UsageError, match="option 'Maybe' tokenizes to nothing on local:test"):
        await model.score_options("Is it raining?", ["Yes", "Maybe"])
    assert submitted == [] and model.ledger._started == 0 and model.ledger.calls == 0
    assert not trace.of_kind("options_scored")


@pytest.mark.parametrize("logprobs", [(math.nan, -1.2), (math.inf, -1.2), (-math.inf, -math.inf)])
async def test_log_probabilities_no_probability_has_are_a_fault_not_a_uniform_guess(logprobs: tuple) -> None:
    """NaN, +inf, or every option at probability 0: before, a uniform 0.5 / 0.5 came back with full entropy, or NaN
    and +inf took an option's whole mass away. Now the turn's `ModelError`, not retried (the same call would give the
    same), and not cached."""
    from noosphere.llm.types import ScoreReply, Usage

    class Raw(ScriptedBackend):
        async def score(self, request: ScoreRequest) -> ScoreReply:
            self.score_history.append(request)
            return ScoreReply(logprobs, (1, 1), Usage(3, 0))

    trace = Trace()
    backend = Raw([], scorer=scorer_of({}))
    model = Model(backend, trace=trace)
    with pytest.raises(ModelError, match="probability"):
        await model.score_options("q", ["Yes", "No"])
    assert len(backend.score_history) == 1 and trace.of_kind("options_scored") == []


def test_nan_or_infinite_scores_are_refused_and_minus_infinity_for_one_option_is_not() -> None:
    from noosphere.llm.litellm_backend import first_token_scores
    from noosphere.llm.scoring import check_logprobs

    with pytest.raises(ModelError, match="'Yes'"):
        check_logprobs("m", ("Yes", "No"), (math.inf, -1.0))
    with pytest.raises(ModelError, match="'No'"):
        check_logprobs("m", ("Yes", "No"), (-1.0, math.nan))
    check_logprobs("m", ("Yes", "No"), (-math.inf, -0.1))  # an option the model cannot produce: probability 0
    check_logprobs("m", ("Yes", "No"), (1.1, 0.0))  # log-scores up to a constant (a plugin's, the scripted weights)
    with pytest.raises(ModelError, match="no probability has"):
        first_token_scores(("Yes", "No"), [("Yes", math.nan), ("No", -1.0)])
    with pytest.raises(ModelError, match="no probability has"):
        first_token_scores(("Yes", "No"), [("Yes", 0.5), ("No", -1.0)])
    yes, _ = first_token_scores(("Yes", "No"), [("Yes", 1e-7), ("No", -20.0)])  # a float's rounding above 0
    assert yes == pytest.approx(1e-7)
    # -inf alternatives (a provider's probability 0) were a ValueError from math.log(0): the option gets -inf, and
    # options that all do are the turn's ModelError
    assert first_token_scores(("Yes", "No"), [("Yes", -math.inf), ("No", -0.1)]) == (-math.inf, pytest.approx(-0.1))
    with pytest.raises(ModelError, match="probability 0"):
        check_logprobs("m", ("Yes", "No"), first_token_scores(("Yes", "No"), [("Yes", -math.inf), ("No", -math.inf)]))


async def test_a_cached_score_no_probability_has_is_asked_again(tmp_path: Path) -> None:
    """A cache written before replies were checked: its uniform guess was replayed as a score."""
    from noosphere.llm.cache import score_key

    cache = CallCache(tmp_path / "calls.sqlite")
    backend = ScriptedBackend([], scorer=scorer_of({"Yes": 0.9, "No": 0.1}))
    model = Model(backend, cache=cache)
    request = ScoreRequest((Message.user("q"),), ("Yes", "No"))
    cache.put_json(score_key(backend.fingerprint, request), {"logprobs": [-math.inf, -math.inf], "tokens": [1, 1],
                                                             "usage": {"prompt_tokens": 1, "completion_tokens": 0},
                                                             "method": "logprob"})
    scores = await model.score_options("q", ["Yes", "No"])
    assert scores.probs == pytest.approx((0.9, 0.1)) and len(backend.score_history) == 1


async def test_relative_weights_of_a_scripted_scorer_are_their_shares() -> None:
    model, _, _ = scripted([], scorer=lambda request: [3.0, 1.0])
    assert (await model.score_options("q", ["a", "b"])).probs == pytest.approx((0.75, 0.25))


@pytest.mark.provider_double
async def test_a_providers_reply_whose_token_logprobs_no_probability_has_is_the_turns_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A NaN or positive token logprob made the reply's logprob NaN or above 0, and its `token_probability` (a weighted
    vote's weight) NaN or above 1, silently; it is now the turn's ModelError, as such first-token scores are."""
    from noosphere.llm import open_model
    from noosphere.llm.litellm_backend import import_litellm

    litellm = import_litellm()
    replies = iter([math.nan, 3.0, -math.inf])

    async def fake_acompletion(**kwargs: Any) -> Any:
        tokens = SimpleNamespace(content=[SimpleNamespace(token="Re", logprob=-0.25),
                                          SimpleNamespace(token="d", logprob=next(replies))])
        return SimpleNamespace(choices=[SimpleNamespace(logprobs=tokens, message=SimpleNamespace(content="Red"),
                                                        finish_reason="stop")],
                               usage=SimpleNamespace(prompt_tokens=9, completion_tokens=2))

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    model = open_model("litellm:openai/gpt-4o-mini", trace=Trace(None))
    for _ in range(2):
        with pytest.raises(ModelError, match="no probability has") as caught:
            await model.complete("Name a primary colour.", logprobs=True)
        assert not isinstance(caught.value, CapabilityError)
    assert (await model.complete("Name a primary colour.", logprobs=True)).token_probability == 0.0  # probability 0


@pytest.mark.provider_double
async def test_a_providers_scoring_call_has_the_callers_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scoring call went to LiteLLM with the default 120 s whatever `Settings.timeout_s` said: a slow
    self-hosted server given 300 s had every long prompt's scoring cut at 120 s, retried and forfeited."""
    from noosphere.llm import Settings, open_model
    from noosphere.llm.litellm_backend import import_litellm

    litellm = import_litellm()
    sent: list[dict[str, Any]] = []

    async def fake_acompletion(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return _fake_response([("Yes", math.log(0.8)), ("No", math.log(0.15))])

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)
    model = open_model("litellm:openai/gpt-4o-mini", settings=Settings(timeout_s=300.0))
    await model.score_options("Is it raining?", ["Yes", "No"])
    await model.score_options("Is it snowing?", ["Yes", "No"], settings=Settings(timeout_s=30.0))
    assert [args["timeout"] for args in sent] == [300.0, 30.0]
