"""The web agents' prompts, in our own words; the action strings are BrowserGym's."""

from __future__ import annotations

from noosphere.envs.web_actions import describe_actions
from noosphere.systems.web_episode import Turn

AGENT_ROLE = """You operate a web browser to complete a task on one web page. Each step you issue exactly one
action, written as a function call. Elements are named by their bid: the number in square brackets in the
accessibility tree, or the bid attribute in the HTML (for example click("12"), never click(12) or a class name).
Fill a text field with fill(bid, text), choose from a list with select_option(bid, option), tick a box or press a
button with click(bid). The task ends by itself once it is done; submit forms when the goal says so."""

REACT_ROLE = AGENT_ROLE + """
First think in one or two sentences about what the page shows and what remains to do, then give the action."""

PROCESSOR_ROLE = ("You perceive the page through its {view}. Say which one action, of those that fit this page, "
                  "moves the task forward now, and name its element by bid; give the evidence from your view.")

VIEW_NAMES = {"html": "HTML", "axtree": "accessibility tree", "screenshot": "screenshot with marked elements"}


def brief(turn: Turn) -> str:
    """What every system is told each step, whatever it sees of the page: the goal, the action space, the
    actions that fit the page, and the steps taken so far."""
    fitting = "\n".join(f"- {action}" for action in turn.admissible) or "- (none found; any action may be tried)"
    done = "\n".join(f"{i}. {step.line()}" for i, step in enumerate(turn.history, 1)) or "(none yet)"
    return (f"Goal: {turn.goal}\n\nAction space:\n{describe_actions()}\n\nActions that fit this page:\n{fitting}\n\n"
            f"Steps so far (step {turn.step} of at most {turn.max_steps} now):\n{done}")


def page_view(name: str, text: str) -> str:
    return f"The page's {VIEW_NAMES.get(name, name)}:\n{text}"


NEXT_ACTION = "What is the next action? Give exactly one action call."
WORKSPACE_QUERY = "Which single action should be taken next? Answer with the action call and the reason for it."
