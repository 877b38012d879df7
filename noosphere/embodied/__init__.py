"""NLSOM's embodied society (appendix J) in MiniGrid and BabyAI houses: exploring, then answering questions.

Four systems drive the robot (`noosphere.envs.gridworld`): `random` and `frontier` in code, `single` (one model
reads the view and acts) and `society` (an interview society: observer, first mate, captain). After an episode,
questions made from the world's ground truth about what the robot saw are answered by the system's own memory
(the captain's log, the single agent's log) and by a baseline that reads the text of everything seen.
"""

from noosphere.embodied.actions import parse_action
from noosphere.embodied.crew import CAMERA, LOGBOOK, Crew
from noosphere.embodied.episode import Move, Trajectory, explore
from noosphere.embodied.eqa import NOT_SEEN, Graded, Question, ask_all, canonical, make_questions, seen_text
from noosphere.embodied.explorers import FrontierExplorer, RandomExplorer, next_action
from noosphere.embodied.policy import Decision, LogEntry, Policy
from noosphere.embodied.single import SingleAgent

__all__ = ["CAMERA", "LOGBOOK", "NOT_SEEN", "Crew", "Decision", "FrontierExplorer", "Graded", "LogEntry", "Move",
           "Policy", "Question", "RandomExplorer", "SingleAgent", "Trajectory", "ask_all", "canonical", "explore",
           "make_questions", "next_action", "parse_action", "seen_text"]
