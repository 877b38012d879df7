"""The embodied society as a system: each step a society run (an interview: the observer perceives the camera,
the first mate questions it and reports, the captain decides the action), with the captain's log carried from
step to step.

The society is declared in a file (`examples/societies/embodied.yaml`). Each step it is given two views: the
`camera` (the robot's view as text, or the RGB frame when every member who sees the camera has a model that
can see images) and the `logbook` (the captain's log of reports and actions). Who sees which is the file's
`sees:`: in the paper's society only the observer sees the camera and only the captain the log.

With `scored`, the captain writes nothing: its last phase becomes `ChooseOnReport` over the movement actions
(`stop` is not offered, as for the single agent's scored variant), each scored as its reply to its log, the task and
the first mate's report, calibrated by the same prompt without the report. A configuration beside the paper's
(issue 26's scores on issue 30's society): the 1.5B captain, writing its action, says "move forward" on nearly
every step.
"""

from __future__ import annotations

from noosphere.embodied.policy import Decision, LogEntry, log_text
from noosphere.envs.gridworld import ACTIONS, MOVES, GridWorld
from noosphere.errors import CapabilityError, UsageError
from noosphere.llm.messages import MediaPart
from noosphere.observation import Observation, View
from noosphere.society import ChooseOnReport, DecideOnReport, Member, Society

CAMERA, LOGBOOK = "camera", "logbook"
TASK = "Explore the house: see as much of it as you can. Step {step} of {steps}. {last}Choose one action: {actions}."
FRAME_CAPTION = "(the robot's camera frame is attached)"
CHOICE = "Choose the robot's next action, to see parts of the house not seen yet. Reply with the action only."
"""The scored captain's instruction: its reply is one of the actions the task lists, nothing else."""


def camera_members(society: Society) -> list[Member]:
    return [m for m in [*society.members, *society.staff] if m.sees is None or CAMERA in m.sees]


class Crew:
    name = "society"

    def __init__(self, society: Society, *, captain: Member, max_steps: int, scored: bool = False) -> None:
        watching = camera_members(society)
        if not watching:
            raise UsageError(f"no member of the society sees the {CAMERA!r} view: nobody would see the house")
        self.society, self.captain, self.max_steps = society, captain, max_steps
        self.vision = all(m.model.capabilities.vision for m in watching)
        self.log: list[LogEntry] = []
        self.actions = ACTIONS
        if scored:
            self.name = "society-scored"
            last = society.phases[-1] if society.phases else None
            if not isinstance(last, DecideOnReport) or last.decider is not captain:
                raise UsageError("a scored crew needs an interview whose captain decides last (DecideOnReport)")
            if not captain.model.capabilities.logprobs:
                raise CapabilityError(captain.model.id, "logprobs (the scored captain takes the action its option "
                                                        "probabilities favour)")
            society.phases = [*society.phases[:-1], ChooseOnReport(captain, MOVES, CHOICE)]
            self.actions = MOVES

    def camera(self, world: GridWorld) -> View:
        """The observer's sense: the frame for a model that can see it, else the same view as text."""
        if self.vision:
            return View(CAMERA, FRAME_CAPTION, (MediaPart("image", world.frame_png(), "image/png"),))
        return View(CAMERA, world.view_text())

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        observation = Observation((self.camera(world), View(LOGBOOK, log_text(self.log))))
        task = TASK.format(step=step, steps=self.max_steps, last=f"Your last action: {last}. " if last else "",
                           actions=", ".join(self.actions))
        result = await self.society.run(task, observation)
        self.log.append(LogEntry(step, last, result.summary.strip() or "(no report)", result.answer.strip() or "none"))
        return Decision(result.answer, note=result.summary,
                        detail={"decided_by": result.decided_by, "support": round(result.support, 4)})

    def memory(self) -> str:
        """The captain's whole log: what it answers questions about the house from."""
        return log_text(self.log, window=None)
