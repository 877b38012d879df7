"""ReAct deciding by probabilities: issue 26's option scores in a text game, a configuration beside the papers'.

The signal table (`benchmarks/results/signal/`) found that the 1.5B model's P(True) to "does the action above bring
the game closer to its goal?", asked after a ReAct step, separates the actions that raised a TextWorld game's score
from the others (AUROC 0.91), mostly between kinds of action (taking, unlocking, cooking against walking about).
This step uses that probability where it can act: among a few actions the model itself finds likely.

Each step (`ScoredDecision`):
1. ReAct's call as it is: the model writes its thought and an admissible action.
2. The policy: one scoring call gives the probability of every admissible action as the continuation of that same
   reply after its thought (`Model.score_options`, length normalisation `mean`, so a long action such as "take red
   hot pepper from fridge" is not outweighed by "look" for its extra tokens). The written action and the most
   probable others make `candidates` actions in all.
3. The judge: P(True) of `PROGRESS_QUESTION` after the reply with each candidate as its action (the signal table's
   question, asked the same way).
4. The candidate of highest P(True) is taken if its P(True) exceeds the written action's by at least `margin`;
   otherwise the written action stands.

Why a margin: with none (`margin=0`, the first run, stop 41) the judge overrode the written action on differences of
0.01 ("take passkey" 0.706 lost to "examine passkey" 0.718 on a game ReAct wins in one action), while the signal
table puts the mean P(True) of the actions that raised a score 0.11 above that of the others (0.72 against 0.61).
The default margin, 0.05, is about half that gap, fixed from the signal table before any run with it: the judge
may change the model's mind only when it tells a kind of action apart, not on its noise within a kind.

Calls per action: one generation and `1 + candidates` scoring calls (fewer where the game offers at most `candidates`
actions: no policy call, as every one is a candidate; none with a single one); the scoring calls share the step's
prompt, so the local backend evaluates it once and each candidate's few tokens after it. Every step's candidates,
their policy probabilities and P(True) are an `ActionsJudged` event (None where not scored). A scoring call that
fails forfeits only itself: without the policy the written action is the only candidate; an unjudged candidate
cannot be taken, and without the written action's own P(True) the written action stands.

The meta-agent takes the same judge (`MetaAgent(judge=...)`, `--judge`): `choose` is given the planning and motor
agents' reply, whose last field is the motor's action, and the prompt that call read.

The reply the policy continues and the judge reads is the model's reply re-serialised (`json.dumps`: a space after
each colon and comma), not its text as decoded (compact JSON from the grammar): the candidates then differ only in
their action. The signal table judged the text as decoded. Scoring calls read the prompt of the step's first
attempt (`Model.instructed`), not a repair turn's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from noosphere.concurrent import Forfeit, attempt, gather_turns
from noosphere.errors import CapabilityError, UsageError
from noosphere.llm import Message, Model
from noosphere.metaagent.events import ActionsJudged, TurnForfeited
from noosphere.metaagent.forms import step_form
from noosphere.metaagent.state import EpisodeState

PROGRESS_QUESTION = "Does the action above bring the game closer to its goal? Answer Yes or No."
"""What the judge is asked after each candidate: the wording the signal table measured (AUROC 0.91 on TextWorld)."""
DEFAULT_MARGIN = 0.05
"""How much higher the judge's P(True) of another candidate must be than the written action's: about half the gap the
signal table measured between the actions that raised a TextWorld score and the others."""


def reply_with(step: dict[str, str], action: str) -> str:
    """The step's reply as the model's JSON, with `action` as its action (the thought as the model wrote it)."""
    return json.dumps({**step, "action": action}, ensure_ascii=False)


def reply_head(step: dict[str, str]) -> str:
    """The reply up to where its action's text begins: `{"thought": "...", "action": "`."""
    whole = reply_with(step, "")
    return whole[: whole.rindex('"')]


def reply_tail(action: str) -> str:
    """The rest of the reply after `reply_head`: the action as JSON writes it, then the reply's end (so "go" is not
    scored as the start of "go east")."""
    return json.dumps(action, ensure_ascii=False)[1:] + "}"


@dataclass(frozen=True)
class ScoredDecision:
    """The `Decide` of `react` that takes the judge's choice among the policy's likeliest actions, by P(True), when it
    is clearly better than the written action."""

    candidates: int = 3
    margin: float = DEFAULT_MARGIN
    """How much higher another candidate's P(True) must be than the written action's to be taken instead."""

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise UsageError(f"a scored step needs at least one candidate action, not {self.candidates}")
        if not 0 <= self.margin < 1:
            raise UsageError(f"the judge's margin is a difference of probabilities in [0, 1), not {self.margin}")

    @staticmethod
    def check(model: Model) -> None:
        """Refuse a model that cannot score before any game is played."""
        if not model.capabilities.logprobs:
            raise CapabilityError(model.id, "logprobs (the scored ReAct step takes the action of highest P(True) "
                                            "from token log-probabilities)")
        if model.capabilities.first_token_scores:  # the policy scores every action as the rest of the reply
            raise CapabilityError(model.id, "scoring after a prefix of the reply (the scored step ranks each action "
                                            "as the continuation of the model's own reply, and this provider scores "
                                            "only a reply's first token)")

    async def __call__(self, model: Model, messages: list[Message], state: EpisodeState, agent: str) -> str:
        form = step_form(state.choices())
        completion = await attempt(model.complete(messages, output=form, agent=agent))
        if isinstance(completion, Forfeit):  # as ReAct does: a failed step still costs an action
            model.trace.emit(TurnForfeited(step=state.t + 1, agent=agent, error=str(completion), instead="look"))
            return "look"
        step = completion.output.model_dump()  # type: ignore[union-attr]
        return await self.choose(model, list(model.instructed(messages, form)), step, state, agent)

    async def choose(self, model: Model, messages: list[Message], step: dict[str, str], state: EpisodeState,
                     agent: str) -> str:
        """The action taken after a reply `step` whose last field is its `action` (the other fields, such as a
        thought or a plan, as the model wrote them), given the `messages` the model read (its format instruction
        included): the written action, or the judge's pick among the policy's likeliest by at least `margin`."""
        written = str(step["action"])
        candidates, policy = await self._candidates(model, messages, state, step, written, agent)
        judged: list[float | Forfeit | None] = [None]  # one candidate: nothing to judge it against
        if len(candidates) > 1:
            judged = list(await gather_turns([
                lambda action=action: model.p_true(  # type: ignore[misc]
                    [*messages, Message.assistant(reply_with(step, action)), Message.user(PROGRESS_QUESTION)],
                    agent=f"{agent}-judge")
                for action in candidates]))
        p_true = [p if isinstance(p, float) else None for p in judged]
        chosen = written
        if p_true[0] is not None:  # without the written action's own P(True) nothing is judged better than it
            best = max(range(len(candidates)), key=lambda i: (p_true[i] or 0.0, -i))
            if (p_true[best] or 0.0) >= p_true[0] + self.margin:
                chosen = candidates[best]
        model.trace.emit(ActionsJudged(
            step=state.t + 1, written=written, chosen=chosen, candidates=list(candidates),
            policy=[round(policy[action], 4) if action in policy else None for action in candidates],
            p_true=[None if p is None else round(p, 4) for p in p_true],
            forfeits=sum(isinstance(p, Forfeit) for p in judged)))
        return chosen

    async def _candidates(self, model: Model, messages: list[Message], state: EpisodeState, step: dict[str, str],
                          written: str, agent: str) -> tuple[tuple[str, ...], dict[str, float]]:
        """The written action and the policy's likeliest others, `candidates` in all, with the policy's probabilities
        (none when the scoring call failed, or when every admissible action is a candidate anyway: no call then)."""
        admissible = tuple(dict.fromkeys(state.choices()))
        others = [action for action in admissible if action != written]
        if self.candidates == 1 or not others:
            return (written,), {}
        if len(others) < self.candidates:
            return (written, *others), {}
        actions = (written, *others)
        scores = await attempt(model.score_options(messages, [reply_tail(action) for action in actions],
                                                   prefix=reply_head(step), normalise="mean", agent=f"{agent}-policy"))
        if isinstance(scores, Forfeit):
            model.trace.emit(TurnForfeited(step=state.t + 1, agent=f"{agent}-policy", error=str(scores),
                                           instead="the written action, unjudged"))
            return (written,), {}
        policy = dict(zip(actions, scores.probs, strict=True))
        ranked = sorted(others, key=lambda action: -policy[action])
        return (written, *ranked[: self.candidates - 1]), policy
