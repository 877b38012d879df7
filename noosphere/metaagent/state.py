"""What the agents of one episode share: the task, the latest percept, beliefs, plans and memory."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from noosphere.memory import EpisodeStep
from noosphere.metaagent.grounding import numbered_objects

INVALID_MARKERS = ("nothing happens", "not in the list of admissible actions", "i don't understand",
                   "you can't", "that's not a verb")
REPEAT_WINDOW = 4
"""An action is a repeat when one of the last this-many steps took it and saw the same result."""
ADMISSIBLE_SHOWN = 60
"""Admissible actions listed in a prompt; ALFWorld rooms rarely have more."""
FUTILE_WINDOW = 8
"""With `strike_futile`, an action that did nothing (refused, or its result the very observation the team already had)
within this many steps, and has not done something since, is struck from the focus agent's choices."""


@dataclass
class EpisodeState:
    task: str
    observation: str
    admissible: tuple[str, ...]
    guide: str = ""
    """How the world works (`Reset.guide`), told to every agent with the team's prompt."""
    last_valid_observation: str = ""
    t: int = 0
    transitions: int = 0
    belief: str = ""
    belief_at: int = 0
    """The timestep the belief state was written at: one behind the percept until the conscious agent
    has read the last action's result."""
    plan: str = ""
    planned_action: str = ""
    """The action of `plan`, without the planner's reasons: what an agent the memory is kept from reads."""
    proposal: str | None = None
    """The action the planning and motor agents' shared call chose, until the motor carries it out."""
    idea: str = ""
    focus_note: str = ""
    recall: str = ""
    recall_shared: bool = True
    """The recalled memory is in every agent's context (the paper); False: the planner's alone (`RecallView`)."""
    recalled: bool = False
    """Memory was recalled this game (possibly nothing, if it holds nothing yet)."""
    pending_action: str | None = None
    rules: list[str] = field(default_factory=list)
    steps: list[EpisodeStep] = field(default_factory=list)
    invalid_streak: int = 0
    needs_focus: str | None = None
    seen: set[tuple[str, str]] = field(default_factory=set)
    """Numbered objects ("drawer 3") the game has shown in any observation or admissible action."""
    focused_at: int = -1
    """The timestep of the last focus loop: one per timestep, so an agent that keeps failing cannot
    hold the team in loops of loops; the next trigger waits for the next action."""
    focus_pending: int = 0
    """The focus loop whose outcome the next action decides (0: none)."""
    focus_recoveries: int = 0
    """Focus loops whose next action did something (the loop put the team back on track)."""
    strike_futile: bool = False
    """The focus agent is told which actions did nothing lately and cannot choose them (`FocusMode` `strike`);
    False: it chooses among all admissible actions, as the paper's focus loop does."""
    mask_futile: bool = False
    """Every action choice (the planner's, the motor's, the focus agent's, and the admissible actions the percept lists)
    leaves out the actions that just did nothing; False: only the focus agent's, if `strike_futile`."""
    did_nothing: dict[str, int] = field(default_factory=dict)
    """Each action whose last try changed nothing (refused, or the observation came back as it was), with that
    timestep; an action that then does something leaves it."""
    done: bool = False
    won: bool = False
    opening: EpisodeStep = field(init=False)
    """Timestep 0 for episodic memory: the first observation, and the belief written before any action."""

    def __post_init__(self) -> None:
        self.last_valid_observation = self.last_valid_observation or self.observation
        self.opening = EpisodeStep(0, "", self.observation)
        self._see(self.observation, self.admissible)

    def _see(self, observation: str, admissible: tuple[str, ...]) -> None:
        self.seen |= numbered_objects(" ".join((self.task, observation, *admissible)))

    def percept(self, recent: int = 5, *, with_task: bool = True) -> str:
        """The task, the recent actions, the admissible actions and the latest observation.

        Ordered from what changes least to what changes most, and the history window moves only
        every `recent` steps (it shows between `recent` and `2 * recent - 1` steps): consecutive
        prompts then share a long prefix, which the local backend does not evaluate again.
        """
        start = max(0, (self.t // recent - 1) * recent)
        history = "\n".join(step.line(150) for step in self.steps[start:])
        actions = ", ".join(self.choices()[:ADMISSIBLE_SHOWN])
        return (f"{self.task + chr(10) if with_task else ''}Recent actions:\n{history or '(none yet)'}\n"
                f"Admissible actions: {actions}\nCurrent observation: {self.observation}\n"
                f"Actions taken: {self.t}.")

    def context(self, planner: bool = False) -> str:
        """Everything an agent may use: the percept plus what the other agents have written.

        What stays the same all game (the task, the recalled memory) comes first, so that consecutive
        prompts share a long prefix the local backend evaluates once. The belief state comes before the
        percept, dated: last before the question, a small model copied it instead of updating it with the
        action's result (a belief that stayed one room behind, seen on TextWorld). The price: the agent
        after the conscious one evaluates the percept again, once per step (measured: about 400 tokens).
        The memory is left out unless it is shared or this is the `planner`'s context; an agent the memory is kept
        from sees the planned action without the planner's reasons, which may quote the memory.
        """
        kept_from = bool(self.recall) and not (self.recall_shared or planner)
        parts = [self.task] + ([f"Memory: {self.recall}"] if self.recall and not kept_from else [])
        if self.belief:
            parts.append(f"Belief state at timestep {self.belief_at}: {self.belief}")
        parts.append(self.percept(with_task=False))
        plan = self.planned_action if kept_from else self.plan
        for title, text in (("Plan", plan), ("Idea", self.idea), ("Focus", self.focus_note)):
            if text:
                parts.append(f"{title}: {text}")
        return "\n\n".join(parts)

    def write_belief(self, belief: str) -> None:
        """The one place the belief state is written: dated, and kept with its timestep (or the opening)
        for episodic memory."""
        self.belief, self.belief_at = belief, self.t
        if self.steps:
            self.steps[-1] = replace(self.steps[-1], belief=belief)
        else:
            self.opening = replace(self.opening, belief=belief)

    def record(self, action: str, observation: str, admissible: tuple[str, ...], done: bool, won: bool) -> None:
        self.t += 1
        # an action that brings what it brought a few steps ago did nothing either: "look" after "look", or
        # two closed drawers visited in turn, as the 1.5B team did for whole games (ALFWorld, stop 16)
        repeated = (action, observation) in {(step.action, step.observation) for step in self.steps[-REPEAT_WINDOW:]}
        refused = any(marker in observation.lower() for marker in INVALID_MARKERS)
        self.invalid_streak = self.invalid_streak + 1 if refused or repeated else 0
        # struck only where the game did not change at all: the action was refused, or brought back the very text the
        # team was looking at ("examine cookbook" again). Going back and forth is a repeat but moves the team: struck,
        # both exits of a dead end's neighbour were taken from the focus agent (TextWorld coin collector, stop 51)
        unchanged = observation == (self.steps[-1] if self.steps else self.opening).observation
        if refused or unchanged:
            self.did_nothing[action] = self.t
        else:
            self.did_nothing.pop(action, None)
        if not refused:  # a repeat still took the team somewhere: what it sees now is real
            self.last_valid_observation = observation
        self.steps.append(EpisodeStep(self.t, action, observation))
        self._see(observation, admissible)
        self.observation, self.admissible, self.done, self.won = observation, admissible or self.admissible, done, won

    def futile(self) -> tuple[str, ...]:
        """The admissible actions that did nothing within the last `FUTILE_WINDOW` steps and nothing since, in the
        order the game lists them."""
        recent = {action for action, t in self.did_nothing.items() if t > self.t - FUTILE_WINDOW}
        return tuple(action for action in self.admissible if action in recent)

    def struck(self) -> tuple[str, ...]:
        """The actions kept from the focus agent now: `futile` with `strike_futile` or `mask_futile`, else none (and
        none when every admissible action is futile: the agent may then choose any of them again)."""
        if not (self.strike_futile or self.mask_futile):
            return ()
        futile = self.futile()
        return () if len(futile) == len(self.admissible) else futile

    def _without_futile(self) -> tuple[str, ...]:
        futile = set(self.futile())
        return tuple(action for action in self.admissible if action not in futile) or self.admissible

    def choices(self) -> tuple[str, ...]:
        """What an action may be: every admissible action, or with `mask_futile` those that did not just do nothing
        (all of them again if nothing else is left)."""
        return self._without_futile() if self.mask_futile else self.admissible

    def focus_choices(self) -> tuple[str, ...]:
        """What the focus agent may choose: `choices`, and with `strike_futile` also without what just did nothing."""
        return self._without_futile() if self.strike_futile or self.mask_futile else self.admissible
