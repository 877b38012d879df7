"""Interactive environments: a small protocol, ALFWorld's games, generated TextWorld games and MiniGrid/BabyAI
houses (`GridWorld`)."""

from noosphere.envs.alfworld import TASK_TYPES, alfworld_game, load_alfworld, walkthrough
from noosphere.envs.base import Environment, Reset, Step
from noosphere.envs.gridworld import GridWorld, Thing, check_world, world_names
from noosphere.envs.textgame import TextGame
from noosphere.envs.textworld_games import CHALLENGES, TIERS, generate, textworld_games

__all__ = ["CHALLENGES", "TASK_TYPES", "TIERS", "Environment", "GridWorld", "Reset", "Step", "TextGame", "Thing",
           "alfworld_game", "check_world", "generate", "load_alfworld", "textworld_games", "walkthrough", "world_names"]
