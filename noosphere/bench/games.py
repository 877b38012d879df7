"""ALFWorld and TextWorld benchmarks: ReAct, Reflexion and the meta-agent on the same games.

Games are played in a fixed order and the meta-agent's memory (a folder inside the run) carries
over from one game to the next, as the paper's agent learned across tasks; a resumed run reopens
the same memory. Per game: won, actions, agent transitions (each one, in order) and focus loops; the
report gives the success rate per task type and the mean actions per successful game, and the run
folder gets the transition matrices as JSON and heatmaps (`noosphere.bench.transitions`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from noosphere.bench.runner import Scored
from noosphere.envs import Environment
from noosphere.errors import UnknownNameError
from noosphere.llm import Model
from noosphere.memory import METHODS, MemoryStore, default_embedder
from noosphere.metaagent import (
    CODE_AGENTS,
    DEFAULT_GRAPH,
    LANGUAGE_AGENTS,
    EpisodeResult,
    MemorySettings,
    MetaAgent,
    TransitionGraph,
    react,
    reflexion,
)

SYSTEMS = ("react", "reflexion", "metaagent")
MEMORY_MODES = {"none": (False, False), "episodic": (True, False), "conceptual": (False, True), "both": (True, True)}


def check_options(system: str, memory: str, retrieve: str) -> None:
    for what, value, known in (("system", system, SYSTEMS), ("memory mode", memory, MEMORY_MODES),
                               ("retrieval method", retrieve, METHODS)):
        if value not in known:
            raise UnknownNameError(what, value, known)


def player(model: Model, config: dict[str, Any], memory_folder: Path):  # type: ignore[no-untyped-def]
    """The function that plays one game for the configured system."""
    max_actions = config["max_actions"]
    if config["system"] == "react":
        return lambda env: react(model, env, max_actions=max_actions)
    if config["system"] == "reflexion":
        return lambda env: reflexion(model, env, trials=config.get("trials", 3), max_actions=max_actions)
    episodic, conceptual = MEMORY_MODES[config["memory"]]
    memory = None
    if episodic or conceptual:
        memory = MemorySettings(MemoryStore(memory_folder), episodic=episodic, conceptual=conceptual,
                                method=config["retrieve"], k=config["k"], embedder=default_embedder())
    graph = TransitionGraph.from_data(config["graph"]) if config.get("graph") else DEFAULT_GRAPH
    agent = MetaAgent(model, graph=graph, memory=memory, max_actions=max_actions, seed=config["seed"])
    return agent.play


def load_graph(path: Path) -> TransitionGraph:
    """A replacement transition graph, checked as the engine will check it, before any run starts."""
    graph = TransitionGraph.from_file(path)
    graph.check_agents(set(LANGUAGE_AGENTS) | CODE_AGENTS)
    return graph


async def solve(play: Any, env: Environment) -> Scored:
    try:
        result: EpisodeResult = await play(env)
    finally:
        env.close()
    return Scored("won" if result.won else "lost", result.won, {
        "task_type": result.kind, "actions": result.actions, "transitions": result.transitions,
        "focus_loops": result.focus_loops, "focus_recoveries": result.focus_recoveries,
        "moves": [list(move) for move in result.moves]})


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row.get("task_type", "?")].append(row)
    won = [r for r in rows if r["correct"]]
    metrics: dict[str, Any] = {
        "success_rate": round(100 * len(won) / max(len(rows), 1), 2), "games": len(rows),
        "actions_per_success": round(sum(r["actions"] for r in won) / len(won), 2) if won else None,
        "transitions_per_game": round(sum(r.get("transitions", 0) for r in rows) / max(len(rows), 1), 2),
        "focus_loops": sum(r.get("focus_loops", 0) for r in rows),
        "focus_recoveries": sum(r.get("focus_recoveries", 0) for r in rows)}
    for kind, group in sorted(by_type.items()):
        metrics[f"{kind}_success_rate"] = round(100 * sum(r["correct"] for r in group) / len(group), 2)
        metrics[f"{kind}_games"] = len(group)
    return metrics
