"""The web agents' prompts, in our own words; the action strings are BrowserGym's."""

from __future__ import annotations

from noosphere.systems.web_episode import Turn, action_bids

AGENT_ROLE = """You operate a web browser to complete a task on one web page. Each step you take exactly one
action on one element of the page, named by its bid: the number in square brackets in the accessibility tree, or
the bid attribute in the HTML. Take the action from the list of actions that fit this page, copied exactly as
listed. Only when none of them is right, write the action in parts: its name, the bid of its element, and for
fill, select_option and press the text to type, the option to choose or the key to press. The task ends by itself
once it is done; submit forms when the goal says so."""

REACT_ROLE = AGENT_ROLE + """
First think in one or two sentences about what the page shows and what remains to do, then give the action."""

ACTION_SPACE = """What each action does, shown on made-up elements (these bids are only an example: 12 a button,
14 a text field, 7 a list, 9 a check box; the page's own bids are in its view):
click("12") presses the button; dblclick("12") double-clicks it; hover("12") moves the mouse over it;
fill("14", "Kasie") types Kasie into the field; clear("14") empties it; focus("14") puts the cursor in it;
press("14", "Enter") presses a key in it; select_option("7", "Lesotho") chooses Lesotho in the list;
check("9") and uncheck("9") tick and untick the box."""

PROCESSOR_ROLE = ("You perceive the page through its {view}. Say which one action, of those that fit this page, "
                  "moves the task forward now, and name its element by bid; give the evidence from your view.")

VIEW_NAMES = {"html": "HTML", "axtree": "accessibility tree", "screenshot": "screenshot with marked elements"}


def brief(turn: Turn) -> str:
    """What every system is told each step, whatever it sees of the page: the goal, the action space, the
    actions that fit the page, and the steps taken so far."""
    fitting = "\n".join(f"- {line}" for line in fitting_lines(turn)) or "- (none found)"
    done = "\n".join(f"{i}. {step.line()}" for i, step in enumerate(turn.history, 1)) or "(none yet)"
    return (f"Goal: {turn.goal}\n\n{ACTION_SPACE}\n\nActions that fit this page:\n{fitting}\n\n"
            f"Steps so far (step {turn.step} of at most {turn.max_steps} now):\n{done}")


def fitting_lines(turn: Turn) -> list[str]:
    """The page's admissible actions as listed to a system, each with what its element is (`click("14")  on span
    'cursus'`: a list of bare bids left the 1.5B model guessing which bid was the link the goal named): those not
    taken yet first, in the page's order, then those already taken, each marked with the last step that took it
    (small models take the first listed action; on enter-text the 1.5B model filled the field it had filled on all
    ten steps)."""
    taken = {step.action: number for number, step in enumerate(turn.history, 1) if step.action}
    fresh = [_labelled(action, turn) for action in turn.admissible if action not in taken]
    again = [f"{_labelled(action, turn)}  (already taken at step {taken[action]})"
             for action in turn.admissible if action in taken]
    return fresh + again


def _labelled(action: str, turn: Turn) -> str:
    bids = action_bids(action)
    element = turn.state.element(bids[0]) if bids else None
    return f"{action}  on {element.label()}" if element is not None else action


def page_view(name: str, text: str) -> str:
    return f"The page's {VIEW_NAMES.get(name, name)}:\n{text}"


NEXT_ACTION = "What is the next action? Copy one of the actions that fit this page, or write one in parts."
WORKSPACE_QUERY = "Which single action should be taken next? Answer with the action call and the reason for it."
