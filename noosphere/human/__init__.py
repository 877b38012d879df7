"""People in a run: a member whose turns are answered by a person, on the terminal or in the viewer page.

A person is a backend (`HumanBackend`), so a person can take any seat a model takes; `noosphere.society`'s
`human_member` makes the member. Answers and forfeits are kept in the run folder (`AnswerBook`), so a run
stopped while it waited for somebody is resumed with nothing asked twice.
"""

from noosphere.human.backend import HUMAN_MODEL, HumanBackend
from noosphere.human.book import AnswerBook
from noosphere.human.channel import Channel, HumanStopped, ListChannel, NoAnswer, Question, ViewerChannel
from noosphere.human.events import HumanAnswered, HumanAsked, HumanForfeited
from noosphere.human.forms import Field, FormError, fields_of, read_answer
from noosphere.human.terminal import TerminalChannel

__all__ = ["HUMAN_MODEL", "AnswerBook", "Channel", "Field", "FormError", "HumanAnswered", "HumanAsked",
           "HumanBackend", "HumanForfeited", "HumanStopped", "ListChannel", "NoAnswer", "Question",
           "TerminalChannel", "ViewerChannel", "fields_of", "read_answer"]
