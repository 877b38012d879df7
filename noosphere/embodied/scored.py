"""The single agent deciding by probabilities: issue 26's option scores on issue 30's robot, a configuration beside
the paper's systems, not one of them.

The 1.5B model, asked to write its action, says "move forward" on almost every step, into walls and closed doors,
even when the prompt says the last move changed nothing: its log is a column of "You chose: move forward", and the
model copies it. This agent reads the same prompt as `SingleAgent` (its log, the step, what the last action did,
the view) but writes nothing: the model's probability of each movement action as the reply is taken from its
token log-probabilities (`Model.score_options`). With `calibrate` (the default) the same prompt is scored once more
with the view replaced by a content-free line, and each action's probability is divided by that prior (contextual
calibration, Zhao et al. 2021), so what counts is what the view adds to the model's habit, not the habit. The
action of highest probability is taken; `stop` is never offered (as for the random explorer).

Its log entries are what the robot saw (the view's first line and the things in view, in the environment's words),
since the model writes no note; the questions after the episode are answered from that log. Two scoring calls a
step with calibration, one without; the prompt's prefix is the same for both, so the second is mostly cached.
"""

from __future__ import annotations

from noosphere.embodied.policy import Decision, LogEntry, log_text
from noosphere.embodied.single import ROLE, STEP_PROMPT
from noosphere.envs.gridworld import GUIDE, MOVES, GridWorld
from noosphere.llm import Message, Model
from noosphere.llm.scoring import contextual_calibration

CONTENT_FREE = "(nothing: the camera gives no picture this step)"
"""The view in the calibration prompt: the same log and step, no information about what lies around the robot."""
REPLY_RULE = "Reply with the action only."


def observed(view: str, limit: int = 160) -> str:
    """What a view showed, in one line: where the robot is and the things in view (`room 1, facing south; a grey
    key, 2 to the right`), cut at `limit` characters."""
    lines = view.splitlines()
    where = lines[0].removeprefix("You are in ").rstrip(".") if lines else ""
    things = [line.removeprefix("- ") for line in lines if line.startswith("- ")]
    text = "; ".join([where, *things]) if things else f"{where}; nothing in view"
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


class ScoredSingleAgent:
    """One model's probabilities over the movement actions, each step, optionally calibrated."""

    def __init__(self, model: Model, *, max_steps: int, calibrate: bool = True) -> None:
        self.model, self.max_steps, self.calibrate = model, max_steps, calibrate
        self.name = "single-scored" if calibrate else "single-scored-raw"
        self.log: list[LogEntry] = []

    def _messages(self, step: int, last: str, view: str) -> list[Message]:
        prompt = STEP_PROMPT.format(log=log_text(self.log, window=None), step=step, steps=self.max_steps, view=view,
                                    last=f"Your last action: {last}. " if last else "", actions=", ".join(MOVES))
        return [Message.system(f"{ROLE}\n\n{GUIDE}"), Message.user(f"{prompt} {REPLY_RULE}")]

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        view = world.view_text()
        scores = await self.model.score_options(self._messages(step, last, view), MOVES, agent=self.name)
        probs = scores.probs
        detail: dict[str, object] = {"probs": dict(zip(MOVES, (round(p, 4) for p in probs), strict=True))}
        if self.calibrate:
            prior = await self.model.score_options(self._messages(step, last, CONTENT_FREE), MOVES,
                                                   agent=f"{self.name}-prior")
            probs = contextual_calibration(probs, prior.probs)
            detail |= {"prior": dict(zip(MOVES, (round(p, 4) for p in prior.probs), strict=True)),
                       "calibrated": dict(zip(MOVES, (round(p, 4) for p in probs), strict=True))}
        chosen = MOVES[max(range(len(MOVES)), key=lambda i: (probs[i], -i))]
        note = observed(view)
        self.log.append(LogEntry(step, last, note, chosen))
        return Decision(chosen, note=note, detail=detail)

    def memory(self) -> str:
        """The whole log: what it answers questions about the house from."""
        return log_text(self.log, window=None)
