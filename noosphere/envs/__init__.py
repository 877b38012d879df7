"""Interactive environments: a small protocol, ALFWorld's games and generated TextWorld games."""

from noosphere.envs.alfworld import TASK_TYPES, alfworld_game, load_alfworld, walkthrough
from noosphere.envs.base import Environment, Reset, Step
from noosphere.envs.textgame import TextGame
from noosphere.envs.textworld_games import CHALLENGES, TIERS, generate, textworld_games

__all__ = ["CHALLENGES", "TASK_TYPES", "TIERS", "Environment", "Reset", "Step", "TextGame", "alfworld_game",
           "generate", "load_alfworld", "textworld_games", "walkthrough"]
