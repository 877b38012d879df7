"""What the meta-agent's language agents are told: the team's prompt, each role, and each turn's question."""

from __future__ import annotations

from dataclasses import replace

from noosphere.llm import Message
from noosphere.metaagent.state import ADMISSIBLE_SHOWN, EpisodeState

TEAM = ("You are one agent of a team of specialised agents that plays a text game to complete a task. The team "
        "shares what it knows; your own duty and question come last.")
"""The system prompt every agent of the team shares. Each agent's role follows the shared context
instead of opening the prompt, so consecutive agents' prompts share everything up to the role and the
local backend evaluates the percept twice per step (for the conscious agent, and once more after its
new belief, which precedes the percept), not once per agent."""

ROLES = {
    "conscious": "You are the conscious agent. You keep the team's belief state: "
                 "what the task needs, what has been done, what is known about where things are, what is next.",
    "planning": "You are the planning agent, and the motor agent answers in the same reply. In `plan` the planner "
                "says what the last observation showed and which step makes progress on the task: do not repeat "
                "actions that did nothing; search likely places first. In `action` the motor carries the plan out "
                "with exactly one of the admissible actions.",
    "motor": "You are the motor agent. Choose exactly one of the admissible actions: the one that carries out the "
             "plan.",
    "focus": "You are the focus agent. The team lost track. From the task, the last real observation and the "
             "admissible actions, say where things stand and choose the admissible action that comes next.",
    "idea": "You are the idea agent. Suggest one concrete idea the team has not tried that could solve the task.",
    "learning": "You are the learning agent. State one short general rule for this kind of task that would help "
                "in other games (not specific object numbers).",
    "reflection": "You review a failed attempt at a text game and state in two sentences what went wrong and what "
                  "to do differently next time.",
    "orchestrator": "You are the orchestrator: you direct the team by picking which agent acts next.",
}


DUTIES = {
    "conscious": "updates the belief state: what is done, what is known, what comes next",
    "planning": "proposes the next action; then the motor agent acts",
    "motor": "chooses one admissible action and carries it out",
    "external_perception": "reports the new observation and the admissible actions",
    "focus": "when the team has lost track: says where things stand and which action comes next",
    "internal_perception": "replays the last real observation and the task",
    "retrieve_memory": "looks up past episodes and learned rules that match the situation",
    "idea": "suggests something new to try, then planning turns it into an action",
    "learning": "states a general rule learned so far, to keep for later games",
    "record_memory": "keeps the rules learned so far, to be stored in long-term memory if this game is won",
}
"""What the orchestrator is told each successor does: its picks, and so the transition heatmaps,
rest on these lines, not on bare agent names."""


def team(state: EpisodeState) -> Message:
    """The system message every agent shares: the team's prompt and how the world works."""
    return Message.system(f"{TEAM}\n\n{state.guide}" if state.guide else TEAM)


PLANNERS = ("planning", "motor")
"""The agents that choose the action: they read memory recalled for the planner alone (`RecallView` `planner`); the
motor is asked alone when the planning agent's call fails."""


def briefed(state: EpisodeState, node: str, question: str) -> list[Message]:
    """The messages for one agent's turn: the team's prompt, the shared context, then its role and question."""
    context = state.context(planner=node in PLANNERS)
    return [team(state), Message.user(f"{context}\n\n{ROLES[node]}\n{question}")]


def belief_question(state: EpisodeState) -> str:
    if state.t == 0:
        return "Write the belief state for timestep 0, before any action."
    if state.observation != state.steps[-1].observation:  # after the focus loop: the last real one, replayed
        return (f"Write the belief state for timestep {state.t} from the task and the last real observation, "
                "replayed above. Say where you are now, what is done and what comes next.")
    return (f"Write the belief state for timestep {state.t}: the current observation is the result of the last "
            "action. Say where you are now, what is done and what comes next.")


PLAN_QUESTION = "Plan the next step, and act."
REACT_ROLE = ("You play a text game to complete a task. At each step think briefly about what you know and what "
              "to do, then choose exactly one admissible action.")
REACT_RECENT = 10
"""Steps of history a ReAct step reads."""


def react_messages(state: EpisodeState, advice: str = "", last: str = "") -> list[Message]:
    """A ReAct step's messages: its role and the world's guide, then `advice` (lessons, or what the meta-agent's
    team adds), the task, the recent steps, the admissible actions and the observation, then `last` (a note for
    this step only) just before the question."""
    role = f"{REACT_ROLE}\n\n{state.guide}" if state.guide else REACT_ROLE
    return [Message.system(role),
            Message.user(f"{advice}{state.percept(recent=REACT_RECENT)}\n\n{last}Next step:")]


def planner_on_percept(state: EpisodeState) -> list[Message]:
    """The planner's messages in the `percept` view: ReAct's step, word for word, with what the team adds for it
    (the recalled memory and an idea first, the focus note last, before the question), but neither the belief
    state nor the planner's own earlier plan. With nothing added, the planner is asked exactly what ReAct is
    asked, so the team's difference from ReAct is what its memory, focus loop and orchestrator add. Asked in the
    team's words instead, the 1.5B planner left a carrot the task named on the floor where ReAct took it
    (TextWorld, stop 44); reading the belief state, it followed a belief that called a passkey still on the floor
    "done" (stop 41). The focus note goes last: placed first, the planner took the focus agent's action in none
    of four steps of a game it was losing going back and forth; placed last, in all four (stop 44)."""
    notes = (("Memory", state.recall), ("Idea", state.idea))
    advice = "".join(f"{title}: {text}\n\n" for title, text in notes if text)
    return react_messages(state, advice, f"Focus: {state.focus_note}\n\n" if state.focus_note else "")


def focus_messages(state: EpisodeState) -> list[Message]:
    """The focus agent sees only the task, the last real observation and what can be done now: the rest
    may be what misled the team. With `strike_futile`, what can be done now leaves out the actions that just did
    nothing, which it is told: the paper's loop, faithful, replays an observation that has not changed, and the
    1.5B focus agent advised the very action the team was repeating (`examine cookbook` 29 times on TextWorld,
    stop 46; `examine sidetable 1` on ALFWorld, stop 50)."""
    actions = ", ".join(state.focus_choices()[:ADMISSIBLE_SHOWN])
    futile = state.struck()
    struck = f"Actions that just did nothing (not to be taken again now): {', '.join(futile)}\n" if futile else ""
    return [team(state), Message.user(
        f"Task: {state.task}\nLast real observation: {state.last_valid_observation}\n"
        f"{struck}Admissible actions: {actions}\nActions taken: {state.t}.\n"
        f"Why the team lost track: {state.needs_focus or 'unclear'}.\n\n{ROLES['focus']}\n"
        "Where do things stand, what next?")]


def asking_also(messages: list[Message], question: str) -> list[Message]:
    """`messages` with `question` added at the end of the last one: a second role's question in a shared call."""
    *before, last = messages
    return [*before, replace(last, content=f"{last.content}\n{question}")]
