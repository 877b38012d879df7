"""Every configuration an issue asks to measure, on the same items, resumable, with one summary table.

A suite is a list of named runs of one `noosphere bench` command. Each run writes its folder under
`--out/<suite>/<name>/`; started again, the suite resumes every run where it stopped (the
benchmarks append per item; a finished run is left alone), so one command can be
restarted after every kill until the whole table is there. The default `--out` is
`benchmarks/results/`, kept in git without the traces (see `.gitignore`): a run's config, its per-item
results and its report are what a table and a resume need, and machines here do not outlive a session.
Runs whose items must go in order (the meta-agent with memory, whose memory carries from game to game)
are never given `--parallel`. With `--together` (the
game suites) every chosen run is played side by side instead, in one `noosphere
bench together` process whose calls are decoded together: eleven ALFWorld runs keep the batch engine's
slots busy where one in-order run at a time would leave most of them idle. There the in-order runs play game
after game and the others `--parallel` games at once (the suite's own count unless `--parallel` is given).

    python benchmarks/suite.py SUITE [--only NAME ...] [--limit N] [--offset N] [--parallel P] [--model ID]
                               [--together] [--out benchmarks/results] [--summary-only]

Suites: mustard (issue 3: base and ctm on 200 items, the four ablations on the first 100), bfcl
(issue 3: base and ctm, 10 items per category), gsm8k (issue 4: tables 3 and 4 of the societies
paper on 50 problems), alfworld (issue 5: ReAct, Reflexion, the meta-agent, its memory ablations and
the k sweep of table 1), alfworld-12 (issue 27: ReAct and the meta-agent with both memories on 12 games,
2 per task type, 30 actions each), textworld (issue 27: the table sized to the 1.5B model, six
configurations on the same 12 tier-1 games of 40 actions at most), textworld-tiers (issue 5: the three
systems on each tier) and miniwob (issue 28: base, react and ctm on 20 web tasks x 3 seeds).
`--limit` replaces every run's own item count (a quick pass); a run made with a smaller one is resumed with it and
grows, scoring the items it had not reached (its first items stay as scored). `--new` starts a new run of each
chosen configuration beside its earlier ones, finished or not (after a change to the code or a prompt: the summary
then shows both).

Suite embodied (issue 30): random, frontier, single and the embodied society on 2 worlds x 10 seeds, 36 actions
each, the society 16 at R = 1 (`EMBODIED` says why); beside them `single-scored` and `single-scored-raw`, the single
agent's prompt with the action taken by option probabilities.
`benchmarks/embodied_curves.py` draws their coverage curves in one figure and compares them at the same number of
actions.

The game suites' summary also draws `outcomes.png` in the suite's folder (success rate with its 95 % interval
and actions per success, a row per run) and, where the suite has the meta-agent with memory and without,
`transitions_memory.png` (their transition probabilities side by side).

The summary has a row for every run of every configuration, oldest first, each named by its folder: a
configuration measured twice (before and after a prompt changed, say) shows both results, never only the
newest. "vs <first configuration>" compares a run item by item with the first configuration's run (or its
`-heldout` or `-confirm` configuration's) that shares the most items with it, the first such run on a tie.

Measuring again on items a change was not tuned on: a prompt, role or setting changed after looking at results
on dev items has seen those items, so its figure there is optimistic. `--offset N` (MUStARD, GSM8K, BFCL;
`noosphere bench mustard|gsm8k|bfcl --offset N`) starts each configuration's item selection after the first N
(BFCL: each category's), in a run folder of its own beside the earlier ones: `python benchmarks/suite.py gsm8k
--offset 50` measures every configuration on problems 51-100 when the prompts were tuned on 1-50, and `python
benchmarks/suite.py bfcl --offset 10` on items 11-20 of each category. The summary marks those rows "from item
51" (BFCL: "from item 11" of each category) and compares them with the first configuration's run on the same
items; report both, the tuned-on figure as such.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noosphere.bench.answer_spread import answer_spread
from noosphere.bench.runner import averages, load_done
from noosphere.bench.script_args import at_least_one

SOCIETIES = Path(__file__).resolve().parent.parent / "examples" / "societies"
MONARCHY, DEMOCRACY, DEBATE, DEBATE_PROGRAMMER, MIXED, MIXED_REPAIR, JURY = (
    str(SOCIETIES / name) for name in ("monarchy.yaml", "democracy.yaml", "debate-solvers.toml",
                                       "debate-programmer.toml", "mixed-solvers.toml", "mixed-solvers-repair.toml",
                                       "programmer-jury.toml"))


@dataclass(frozen=True)
class Config:
    name: str
    args: tuple[str, ...]
    limit: int
    in_order: bool = False
    """Items depend on the ones before them: scored one at a time whatever `--parallel` says."""
    match: str | None = None
    """A configuration of the same suite whose measured calls per item this one matches (best-of-N)."""


@dataclass(frozen=True)
class Suite:
    benchmark: str
    configs: tuple[Config, ...]
    metrics: tuple[str, ...]
    """The report's metrics shown in the summary, besides the costs."""
    parallel: int
    diagnose: Callable[[list[dict]], dict] | None = None
    """Figures computed from a run's items for a second table (how the decisions compare with the answers
    they chose among); runs whose items do not record what it needs are left out of it."""
    folder: str | None = None
    """Where under `--out` its runs go, when not in a folder named after the suite."""
    memory_pair: tuple[str, str] | None = None
    """Game suites: the configurations of the meta-agent without memory and with it, whose transition heatmaps
    the summary draws side by side."""


def _ctm(*extra: str) -> tuple[str, ...]:
    return ("--system", "ctm", "--stm-samples", "3", *extra)


def _jury_block(first: int) -> tuple[Config, Config]:
    """Weighted best-of-5 of programs and the programmer jury on the 100 GSM8K problems after the first `first`
    (the first block's jury is named `programmer-jury`, as it ran)."""
    block = f"{first + 1}"
    return (Config(f"best-of-n5-program-{block}", ("--system", "best-of-n", "--n", "5", "--form", "program",
                                                   "--weights", "sequence", "--offset", str(first)), 100),
            Config("programmer-jury" if first == 350 else f"programmer-jury-{block}",
                   ("--system", "society", "--society", JURY, "--offset", str(first)), 100))


def _alfworld() -> tuple[Config, ...]:
    """24 games, 4 of each task type: the three systems, the memory ablations, and the k sweep (the
    default k is 4, so `metaagent-both` stands for it; the sweep uses episodic memory alone)."""
    metaagent = ("--system", "metaagent")
    return (
        Config("react", ("--system", "react"), 24),
        Config("reflexion", ("--system", "reflexion"), 24),
        Config("metaagent-none", (*metaagent, "--memory", "none"), 24),
        Config("metaagent-both", (*metaagent, "--memory", "both"), 24, in_order=True),
        Config("metaagent-episodic", (*metaagent, "--memory", "episodic"), 24, in_order=True),
        Config("metaagent-conceptual", (*metaagent, "--memory", "conceptual"), 24, in_order=True),
        Config("metaagent-relevant", (*metaagent, "--memory", "both", "--retrieve", "relevant"), 24, in_order=True),
        *(Config(f"metaagent-k{k}", (*metaagent, "--memory", "episodic", "--k", str(k)), 24, in_order=True)
          for k in (0, 1, 5, 20)),
    )


def _alfworld_12() -> tuple[Config, ...]:
    """Issue 27's ALFWorld rows, as far as this machine reaches: 12 games (2 of each task type, each type's
    solved demonstration kept back as in `alfworld`) of at most 30 actions, ReAct against the meta-agent with both
    memories (in order: its memory carries from game to game), in the paper's view and with the planner asked
    ReAct's step (`--planner-view percept`, stop 44)."""
    games = ("--per-type", "2", "--max-actions", "30")
    both = ("--system", "metaagent", "--memory", "both")
    return (Config("react", ("--system", "react", *games), 12),
            Config("metaagent-both", (*both, *games), 12, in_order=True),
            Config("metaagent-both-percept", (*both, "--planner-view", "percept", *games), 12, in_order=True),
            # the focus agent kept from the actions that just did nothing (stop 51): every game of stop 50 was lost to
            # one action repeated, and the focus agent itself advised it
            Config("metaagent-both-percept-strike", (*both, "--planner-view", "percept", "--focus", "strike", *games),
                   12, in_order=True),
            Config("metaagent-both-percept-mask", (*both, "--planner-view", "percept", "--focus", "mask", *games),
                   12, in_order=True))


TEXTWORLD_TIER = 1
TEXTWORLD_CHALLENGES = ("coin_collector", "treasure_hunter", "cooking", "custom")
TEXTWORLD_PER_CHALLENGE = 3
TEXTWORLD_ACTIONS = 40
"""Issue 27's sizing. Played by hand at tier 1 with the 1.5B model, ReAct won treasure hunter in 1 action, a custom
quest in 19 and cooking in 48, and lost coin collector at 50: with 40 actions a game, tier 1's four challenges
should put ReAct between 10 and 90 % (tier 2's longer quests, more rooms and recipes lower it). Run `react` first:
its success rate says whether the tier holds; a change of tier starts a new suite folder (`--out`), since a resumed
run keeps the games it was made with."""


HELDOUT_SEED = 3
"""The held-out check of `react-scored` (stop 41): the same challenges and budget on games 3, 4 and 5 of each
challenge, which no run had played when the judge and its margin were chosen on games 0-2."""

CONFIRM_SEED = 6
"""A second held-out check of `react-scored` (stop 68), named before it ran: games 6, 7 and 8 of each challenge, which
no run had played; ReAct first, then `react-scored`, whose calls up to the judge's first override the call cache
answers."""


def _textworld() -> tuple[Config, ...]:
    """Issue 27's TextWorld table: ReAct, Reflexion and the meta-agent with memory none / episodic / conceptual /
    both, and beside them issue 26's `react-scored` (ReAct choosing by P(True)), every one on the same 12 games
    (3 seeds of each challenge, interleaved); the memory runs play their games
    in order, so what a game taught carries to the next (`--together` keeps the batch engine full meanwhile)."""
    games = ("--tier", str(TEXTWORLD_TIER), "--challenges", ",".join(TEXTWORLD_CHALLENGES), "--per-challenge",
             str(TEXTWORLD_PER_CHALLENGE), "--max-actions", str(TEXTWORLD_ACTIONS))
    n = TEXTWORLD_PER_CHALLENGE * len(TEXTWORLD_CHALLENGES)
    return (Config("react", ("--system", "react", *games), n),
            Config("reflexion", ("--system", "reflexion", *games), n),
            Config("react-scored", ("--system", "react-scored", "--margin", "0.05", *games), n),
            Config("react-scored-nomargin", ("--system", "react-scored", "--margin", "0", *games), n),
            *(Config(f"{name}-{held}", (*system, "--seed", str(seed), *games), n)
              for held, seed in (("heldout", HELDOUT_SEED), ("confirm", CONFIRM_SEED))
              for name, system in (("react", ("--system", "react")),
                                   ("react-scored", ("--system", "react-scored", "--margin", "0.05")))),
            *(Config(f"metaagent-{memory}", ("--system", "metaagent", "--memory", memory, *games), n,
                     in_order=memory != "none")
              for memory in ("none", "episodic", "conceptual", "both")),
            *(Config(f"metaagent-{memory}-judged", ("--system", "metaagent", "--memory", memory, "--judge", *games), n,
                     in_order=memory != "none")
              for memory in ("none", "both")),
            # the planner asked ReAct's step word for word, the team's memory, idea and focus note before it (stop 44)
            *(Config(f"metaagent-{memory}-percept", ("--system", "metaagent", "--memory", memory, "--planner-view",
                                                     "percept", *games), n, in_order=memory != "none")
              for memory in ("none", "episodic", "conceptual", "both")),
            # what is recalled read by the planner alone, episodes without their belief states (stop 48): with the
            # paper's view, recalled episodes' endings and objects came into new games' beliefs and moves (stop 47)
            Config("metaagent-both-percept-planner", ("--system", "metaagent", "--memory", "both", "--planner-view",
                                                      "percept", "--recall-view", "planner", *games), n,
                   in_order=True),
            # the focus agent told which actions just did nothing, and kept from them (`--focus strike`, stop 51): the
            # paper's loop replays an unchanged observation, and its agent advised the loop's own action (stop 46)
            *(Config(f"metaagent-{memory}-percept-strike", ("--system", "metaagent", "--memory", memory,
                                                            "--planner-view", "percept", "--focus", "strike", *games),
                     n, in_order=memory != "none")
              for memory in ("none", "both")),
            # and struck from the planner's choices too (`--focus mask`): after the strike, the planner went straight
            # back to the action the focus agent had been kept from (stop 51)
            *(Config(f"metaagent-{memory}-percept-mask", ("--system", "metaagent", "--memory", memory,
                                                          "--planner-view", "percept", "--focus", "mask", *games),
                     n, in_order=memory != "none")
              for memory in ("none", "both")),
            # memory recalled only once the team is stuck (`--recall-at stuck`, stop 52): recalled text before the
            # first step moved the 1.5B's greedy step away from the winning action more often than toward it (stops
            # 48 and 50); the planner alone reads it, as actions and answers (`--recall-view planner`)
            # (stop 53: and its agents not offered until then; the first version, `metaagent-both-percept-stuck-v1/`,
            # offered them, which alone made coin_collector-0 another game). Played beside it with `--together
            # --parallel 1`, the run without memory again: the two send the same calls, generated once, until memory is
            # first recalled, so the pair differs only by what memory does to a stuck team, not by batch or build
            Config("metaagent-both-percept-stuck", ("--system", "metaagent", "--memory", "both", "--planner-view",
                                                    "percept", "--recall-view", "planner", "--recall-at", "stuck",
                                                    *games), n, in_order=True),
            Config("metaagent-none-percept-paired", ("--system", "metaagent", "--memory", "none", "--planner-view",
                                                     "percept", *games), n, in_order=True),
            # each memory alone, recalled the same way (stop 57): the none / episodic / conceptual / both rows
            # as pairs with the twin above, whose calls they share until their first recall
            *(Config(f"metaagent-{memory}-percept-stuck", ("--system", "metaagent", "--memory", memory,
                                                            "--planner-view", "percept", "--recall-view", "planner",
                                                            "--recall-at", "stuck", *games), n, in_order=True)
              for memory in ("episodic", "conceptual")),
            # the same pair on the 12 held-out games (stop 56): the learning agent's question was chosen on the wins
            # of the games above, so memory is measured again where nothing was chosen
            Config("metaagent-both-percept-stuck-heldout", ("--system", "metaagent", "--memory", "both",
                                                            "--planner-view", "percept", "--recall-view", "planner",
                                                            "--recall-at", "stuck", "--seed", str(HELDOUT_SEED),
                                                            *games), n, in_order=True),
            Config("metaagent-none-percept-paired-heldout", ("--system", "metaagent", "--memory", "none",
                                                             "--planner-view", "percept", "--seed",
                                                             str(HELDOUT_SEED), *games), n, in_order=True),
            # the strike was designed from these 12 games' traces: it is measured against the paper's loop on 12
            # others (the held-out seed ReAct played)
            *(Config(f"metaagent-none-percept{suffix}-heldout",
                     ("--system", "metaagent", "--memory", "none", "--planner-view", "percept", *focus, "--seed",
                      str(HELDOUT_SEED), *games), n)
              for suffix, focus in (("", ()), ("-strike", ("--focus", "strike")), ("-mask", ("--focus", "mask")))))


def _textworld_tiers() -> tuple[Config, ...]:
    """The three systems on each tier's 12 games (three of each challenge)."""
    return tuple(Config(f"tier{tier}-{name}", ("--tier", str(tier), "--per-challenge", "3", *system), 12,
                        in_order=name == "metaagent")
                 for tier in (1, 2, 3)
                 for name, system in (("react", ("--system", "react")), ("reflexion", ("--system", "reflexion")),
                                      ("metaagent", ("--system", "metaagent", "--memory", "both"))))


EMBODIED_WORLDS = ("--env", "MiniGrid-MultiRoom-N4-S5-v1", "--env", "BabyAI-GoToSeqS5R2-v0", "--episodes", "10")
EMBODIED = (*EMBODIED_WORLDS, "--max-steps", "36")
SOCIETY_STEPS = ("--rounds", "1", "--max-steps", "16")
"""Issue 30: 2 worlds x 10 seeds each. Measured on the 1.5B model at `--parallel 4`, a call of the single agent takes
7.6 s of wall time (a prompt of ~900 tokens, half of it new each step, and ~57 tokens out): the first sizing, 1.5 s
a call, was five times too low. random, frontier and single play 36 actions (single: 20 x 36 calls, about 1.5
hours). The society makes 1 + 2R + 2 calls an action (the observer's report, R questions and answers, the first
mate's summary, the captain's decision): at R = 2 and 36 actions 20 x 268 calls, about 4 hours. So it plays R = 1
and 16 actions, 20 x (16 x 5 + 16 questions) = 1920 calls; measured at 2.8 s a call (its prompts are short and
mostly reused), about 1.5 hours (fewer rounds and actions, not fewer seeds, as the issue asks). Every run records
the coverage after each action, so all systems are compared at 16 actions from their curves; within 16 actions the
frontier explorer sees about 87 % of these houses and a random one about 29 %."""
EMBODIED_METRICS = ("coverage", "coverage_ci95", "eqa_captain", "eqa_single", "eqa_seen-text",
                    "eqa_seen-text_not_seen", "invented_actions", "calls_per_action", "tokens_per_action")
GAME_SUITES = ("alfworld", "textworld")
OFFSET_SUITES = ("mustard", "gsm8k", "bfcl")
DATA_SUITES = ("mustard", "gsm8k", "bfcl", "alfworld")
"""The benchmarks that read data (`--data`, in each one's own sense: a file for MUStARD and GSM8K, a folder for BFCL
and ALFWorld); without it, each looks in ../shared/data beside the working directory or the clone."""
"""The benchmarks whose commands take `--offset` (an item selection that starts later)."""
GAME_METRICS = ("success_rate", "success_ci95", "actions_per_success", "calls_per_action", "tokens_per_action",
                "transitions_per_game", "focus_loops", "focus_recoveries")

SUITES: dict[str, Suite] = {
    "mustard": Suite("mustard", (
        Config("base", ("--system", "base"), 200),
        Config("ctm", _ctm(), 200),
        *(Config(f"ctm-{ablation.replace('_', '-')}", _ctm("--ablation", ablation), 100)
          for ablation in ("no_uptree", "no_broadcast", "no_fusion", "no_ltm")),
        # issue 26: scores from token probabilities instead of the model's words
        Config("base-logprob", ("--system", "base", "--scores", "logprob"), 200),
        Config("ctm-logprob", ("--system", "ctm", "--scores", "logprob"), 40),
        Config("ctm-logprob-cc", ("--system", "ctm", "--scores", "logprob", "--calibrate"), 40),
        *(Config(f"ctm-logprob-{ablation.replace('_', '-')}", ("--system", "ctm", "--scores", "logprob",
                                                               "--ablation", ablation), 40)
          for ablation in ("no_uptree", "no_broadcast", "no_fusion", "no_ltm")),
        # stop 65: alpha as the STM's P(True) that its label is right (CTM-AI's quality score) instead of the label's
        # probability, which the gist's first words put at 0.999 (stop 61's traces); the first 20 of the 40 items,
        # then its four ablations on the first 4 of them (every item runs to the iteration cap: 2-3 minutes an item);
        # stop 66 ran the ablations again on all 20 (`--new`: new folders beside the 4-item ones, whose items the call
        # cache answers)
        Config("ctm-logprob-judged", ("--system", "ctm", "--scores", "logprob", "--stm-alpha", "judged"), 20),
        *(Config(f"ctm-logprob-judged-{ablation.replace('_', '-')}", ("--system", "ctm", "--scores", "logprob",
                                                                      "--stm-alpha", "judged", "--ablation", ablation),
                 20)
          for ablation in ("no_uptree", "no_broadcast", "no_fusion", "no_ltm")),
        # stop 69: the judged workspace on the next 20 of the 40 items (21-40), named before it ran, so that its alpha
        # has a second fold for a calibration map fitted on the other: `suite.py mustard --offset 20 --only
        # ctm-logprob-judged`
        # stop 70: its four ablations on the same items 21-40, named before they ran, so that each has a second fold
        # for a cross-fitted calibration map: `suite.py mustard --offset 20 --only ctm-logprob-judged-no-ltm
        # ctm-logprob-judged-no-fusion ctm-logprob-judged-no-uptree ctm-logprob-judged-no-broadcast`. At 4 minutes an
        # item (the first 6 of no_uptree) the four would not fit a session: no_uptree was stopped after its 12th
        # item, no_ltm (its calls are the full run's) ran all 20, and no_broadcast, then no_fusion, 12 (`--limit 12`);
        # no_uptree was then resumed to 20
        # stop 71: no_broadcast and no_fusion grown from 12 to 20 items (a resume with a larger limit scores items
        # 33-40 in the same folders), named before they ran: `suite.py mustard --offset 20 --limit 20 --only
        # ctm-logprob-judged-no-broadcast ctm-logprob-judged-no-fusion`
        # stop 71, after them: the judged workspace and its no_ltm (whose calls are the full system's, answered by
        # the call cache) on a third block, items 41-52, named before they ran: `suite.py mustard --offset 40 --limit
        # 12 --only ctm-logprob-judged ctm-logprob-judged-no-ltm`; a third fold for the cross-fitted maps, and 12
        # more items for the full system's labels and iterations
        # stop 72: the third block grown to 20 items (41-60) for the full system and no_ltm, and no_broadcast and
        # no_fusion run on it, named before they ran: `suite.py mustard --offset 40 --limit 20 --only
        # ctm-logprob-judged ctm-logprob-judged-no-broadcast ctm-logprob-judged-no-fusion ctm-logprob-judged-no-ltm`;
        # three folds of 20 for the cross-fitted maps of four of the five judged engines (no_uptree, at 4 minutes an
        # item, does not fit beside them). no_broadcast took 4 minutes an item, not the 2 expected: it was stopped
        # after 5 items so that no_fusion and no_ltm ran first, then resumed for what time was left
        # stop 73: no_broadcast resumed to 20 items on 41-60 (items 52-60), then no_uptree on the third block 41-60,
        # named before they ran: `suite.py mustard --offset 40 --limit 20 --only ctm-logprob-judged-no-broadcast`,
        # then the same with `ctm-logprob-judged-no-uptree`; three folds of 20 for all five judged engines. These 29
        # items are the first that no figure had shown when platt-cv was written (stop 72): the three maps (platt,
        # isotonic, platt-cv), each fitted on the engine's other blocks, are tested on them, and the pooled
        # cross-fitted ECE of both engines is reported for every map, whatever it is. Both ran: no_broadcast's 9 items
        # in 24 minutes, no_uptree's 20 in 73 (calibration README, "Stop 73")
    ), ("accuracy", "precision", "recall", "f1", "past_first_iteration", "ece", "auroc"), parallel=4),
    "bfcl": Suite("bfcl", (
        Config("base", ("--system", "base"), 10),
        Config("ctm", ("--system", "ctm"), 10),
        Config("ctm-logprob", ("--system", "ctm", "--scores", "logprob"), 10),
        # the call motor, its calls gated by P(True) "do these calls do exactly what the request asks?". The gate
        # 0.8 was chosen on the dev items' base calls (benchmarks/results/signal/bfcl.jsonl: 38/50 at 0.8), so it is
        # measured on held-out items (`--offset 10`)
        Config("ctm-logprob-call", ("--system", "ctm", "--scores", "logprob", "--motor", "call", "--gate", "0.8"), 10),
        # the ablation of ctm-logprob-call: the same gate on the base's calls, no workspace
        Config("base-gate", ("--system", "base", "--scores", "logprob", "--gate", "0.8"), 10),
        # beside the function processors, a generalist processor that bids the base's calls with P(True) "do these
        # calls do exactly what the request asks?" as its relevance and confidence; the motor acts on the winner
        # (the generalist's calls through the gate, else the call motor, or no call below the relevance bar). The
        # design was made after looking at the dev results: measure it on held-out items only (`--offset 10`)
        Config("ctm-logprob-generalist", ("--system", "ctm", "--scores", "logprob", "--processors",
                                          "functions+generalist", "--motor", "call", "--gate", "0.8"), 10),
        # stop 67: a second held-out block, items 17-22 of each category, named before it ran:
        # `suite.py bfcl --offset 16 --limit 6 --only base base-gate ctm-logprob-generalist`
        # stop 68: a third, items 23-28 of each category, named before it ran:
        # `suite.py bfcl --offset 22 --limit 6 --only base base-gate ctm-logprob-generalist`; then a fourth, items
        # 29-34, named before it ran (the third had come out at +3.3): `--offset 28 --limit 6`
        # stop 69: the function-processor workspace with the call motor on the same three held-out blocks, named
        # before it ran, so that its confidence has folds for a calibration fitted on its other runs:
        # `suite.py bfcl --offset 16 --limit 6 --only ctm-logprob-call`, then `--offset 22`, then `--offset 28`;
        # and the select motor's workspace, run on dev items only, on the first held-out block:
        # `suite.py bfcl --offset 10 --limit 6 --only ctm-logprob`
    ), ("simple_python_accuracy", "multiple_accuracy", "parallel_accuracy", "parallel_multiple_accuracy",
        "irrelevance_accuracy", "overall_accuracy"), parallel=4),
    "gsm8k": Suite("gsm8k", (
        Config("base", ("--system", "base"), 50),
        Config("monarchy", ("--system", "society", "--society", MONARCHY), 50),
        Config("best-of-n", ("--system", "best-of-n"), 50, match="monarchy"),
        Config("democracy-know", ("--system", "society", "--society", DEMOCRACY, "--rights", "know"), 50),
        Config("democracy-know-change",
               ("--system", "society", "--society", DEMOCRACY, "--rights", "know,change"), 50),
        Config("democracy-all",
               ("--system", "society", "--society", DEMOCRACY, "--rights", "know,change,execute"), 50),
        # the same society counting the members' standing answers instead of asking for ballots
        Config("democracy-count", ("--system", "society", "--society", DEMOCRACY, "--rights", "know,change,execute",
                                   "--vote", "standing"), 50),
        Config("debate", ("--system", "society", "--society", DEBATE), 50),
        # the same debate without its editor, the members' standing answers counted
        Config("debate-count", ("--system", "society", "--society", DEBATE, "--set", "editor=null",
                                "--vote", "standing"), 50),
        *(Config(f"monarchy-r{rounds}", ("--system", "society", "--society", MONARCHY, "--rounds", str(rounds)), 50)
          for rounds in (1, 3, 5)),
        # issue 26: six samples, each also scored by P(True); `benchmarks/cisc_table.py` recounts the plain and
        # weighted votes at every number of samples, and so at equal calls
        Config("best-of-n-weighted", ("--system", "best-of-n", "--n", "6", "--weighted"), 30),
        # the same six samples weighted by their own probability, read while they are generated: plain and weighted
        # votes of one run are at equal calls (6 a problem)
        Config("best-of-n-sequence", ("--system", "best-of-n", "--n", "6", "--weights", "sequence"), 30),
        # and on 100 problems no prompt was tuned on (51-150)
        Config("best-of-n-sequence-heldout", ("--system", "best-of-n", "--n", "6", "--weights", "sequence", "--offset",
                                              "50"), 100),
        # the monarchy whose leader sees each member's P(True) in its answer (three scoring calls more a problem)
        Config("monarchy-confidence", ("--system", "society", "--society", MONARCHY, "--set", "leader_confidence=true"),
               50),
        # the best society of the table, its standing answers weighted by each member's P(True)
        Config("democracy-weighted", ("--system", "society", "--society", DEMOCRACY, "--rights",
                                      "know,change,execute", "--vote", "weighted"), 50),
        # the same democracy, each standing answer weighted by the probability of the reply that gave it (read in
        # that call: the plain count and the weighted vote of one run are at equal calls, recounted by
        # `cisc_table.py`), on problems no prompt was tuned on; then best-of-N weighted the same way at the calls
        # that run measured, on the same problems
        Config("democracy-sequence", ("--system", "society", "--society", DEMOCRACY, "--rights",
                                      "know,change,execute", "--vote", "sequence", "--offset", "50"), 30),
        Config("best-of-n-sequence-match", ("--system", "best-of-n", "--weights", "sequence", "--offset", "50"), 30,
               match="democracy-sequence"),
        # the same democracy without the right to change (stop 43's traces: the change lost right answers before any
        # vote), its members' own answers weighted; then best-of-N at the calls it measured
        Config("democracy-sequence-nochange", ("--system", "society", "--society", DEMOCRACY, "--rights",
                                               "know,execute", "--vote", "sequence", "--offset", "50"), 30),
        Config("best-of-n-sequence-match-nochange", ("--system", "best-of-n", "--weights", "sequence", "--offset",
                                                     "50"), 30, match="democracy-sequence-nochange"),
        # a society whose calls all give answers, spent where the members disagree: the debate's three solvers answer
        # alone; only if they split is a round held (each reads the others and answers again); every answer of the
        # run counted with its reply's probability. On the 100 held-out problems best-of-n-sequence-heldout played:
        # `cisc_table.py RUN --against` that run, at the calls this one measured, and `--adaptive 3` for the same
        # calls spent on three more samples instead of the round
        Config("debate-every-consensus", ("--system", "society", "--society", DEBATE, "--set", "editor=null",
                                          "--vote", "every", "--set", "until_consensus=true", "--rounds", "1",
                                          "--offset", "50"), 100),
        # the same debate with its calculator replaced by a member who answers with a program run in the sandbox
        # (its settings, until consensus and every answer weighted, are in the file), on the same 100 problems
        Config("debate-programmer", ("--system", "society", "--society", DEBATE_PROGRAMMER, "--offset", "50"), 100),
        # best-of-6 whose every sample is such a program, weighted by its reply's probability, on the same problems:
        # what the programs alone give, and with best-of-n-sequence-heldout, samples of both forms recounted together
        Config("best-of-n-program-heldout", ("--system", "best-of-n", "--n", "6", "--form", "program", "--weights",
                                             "sequence", "--offset", "50"), 100),
        # stop 64, a confirmation on problems no run had seen (151-250): the programmer debate's mission alone
        # (`--rounds 0`: its three members answer once and every answer is counted, weighted by its reply's
        # probability), a recount on 51-150 that tied weighted best-of-3 there; then weighted best-of-3 of
        # statements on the same problems, at equal calls
        Config("programmer-mission", ("--system", "society", "--society", DEBATE_PROGRAMMER, "--rounds", "0",
                                      "--offset", "150"), 100),
        Config("best-of-n-sequence-confirm", ("--system", "best-of-n", "--n", "3", "--weights", "sequence",
                                              "--offset", "150"), 100),
        # and best-of-3 of programs (`--form program`): whether the society gives more than its programmer's
        # form sampled three times
        Config("best-of-n-program-confirm", ("--system", "best-of-n", "--n", "3", "--form", "program", "--weights",
                                             "sequence", "--offset", "150"), 100),
        # and the base (one greedy call) on the same problems: issue 26's "the best society at its base + 5"
        Config("base-confirm", ("--system", "base", "--offset", "150"), 100),
        # stop 65, on problems 251-350 that no run had seen: a vote of two forms (one programmer, two plain solvers,
        # every answer weighted by its reply's probability), written before any run, against weighted best-of-3 of
        # programs, the strongest best-of-N of stop 64, at equal calls
        Config("mixed-mission", ("--system", "society", "--society", MIXED, "--offset", "250"), 100),
        Config("best-of-n-program-fresh", ("--system", "best-of-n", "--n", "3", "--form", "program", "--weights",
                                           "sequence", "--offset", "250"), 100),
        # the same two with one repair for a program that fails (its failure shown, asked again): the first calls are
        # those two runs' (the call cache answers them), so only the repairs are new
        Config("mixed-mission-repair", ("--system", "society", "--society", MIXED_REPAIR, "--offset", "250"), 100),
        Config("best-of-n-program-fresh-repair", ("--system", "best-of-n", "--n", "3", "--form", "program", "--weights",
                                                  "sequence", "--repairs", "1", "--offset", "250"), 100),
        # stop 66, on problems 351-450 that no run had seen: weighted best-of-5 of programs, recounted at every k from 1
        # to 5 (`cisc_table.py`), the yardstick for a society whose calls per problem are not a whole number, and a
        # jury of five programmers asked in turn until two print the same number (`quorum = 2`), every answer weighted
        # by its reply's probability, written before any run: its calls follow how much its members split. Stop 67,
        # the same two on three more blocks, each named before it ran (451-550 and 551-650 together, 651-750 after
        # 551-650 was read): more problems for the jury's claim, and the test items for calibration maps fitted on
        # the other blocks (`calibration_table.py --heldout`)
        *(config for first in (350, 450, 550, 650) for config in _jury_block(first)),
        # stop 68: weighted best-of-3 of statements on two more blocks (251-350, 351-450), named before they ran, so
        # that its confidence can be mapped by a calibration fitted on its other blocks (`calibration_table.py
        # --heldout`): on 151-250 it was the one 100-problem run over 0.10 after leave-one-out Platt scaling
        *(Config(f"best-of-n-sequence-{first + 1}", ("--system", "best-of-n", "--n", "3", "--weights", "sequence",
                                                     "--offset", str(first)), 100) for first in (250, 350, 450)),
        # stop 71: a fourth block of it (451-550), named before it ran: pooled, its Platt maps gave 0.117 (isotonic
        # 0.082), each fitted on the other two blocks' 200 problems; with it each is fitted on 300 (0.101 and 0.061).
        # It ran after MUStARD's runs of stop 71: `suite.py gsm8k --only best-of-n-sequence-451`, 29 minutes
        # stop 69: weighted best-of-6 of statements on a third block (151-250), named before it ran: its two runs
        # (1-30, 51-150) were the one pooled engine the calibration maps made worse, with folds of 30 and 100
        Config("best-of-n6-sequence-151", ("--system", "best-of-n", "--n", "6", "--weights", "sequence", "--offset",
                                           "150"), 100),
    # a society problem keeps 5 conversations; 3 problems fill the 16 caches
    ), ("accuracy",), parallel=3, diagnose=answer_spread),
    "alfworld": Suite("alfworld", _alfworld(), GAME_METRICS, parallel=4,
                      memory_pair=("metaagent-none", "metaagent-both")),
    "alfworld-12": Suite("alfworld", _alfworld_12(), GAME_METRICS, parallel=4, folder="alfworld/12-games"),
    # the heatmaps of the percept view, the meta-agent that wins games here (the team view lost all ten it played)
    "textworld": Suite("textworld", _textworld(), GAME_METRICS, parallel=4,
                       memory_pair=("metaagent-none-percept", "metaagent-both-percept")),
    "textworld-tiers": Suite("textworld", _textworld_tiers(), GAME_METRICS, parallel=4),
    # issue 28: the three web agents on the same 20 MiniWoB++ tasks x 3 seeds (`bench miniwob`'s default list)
    "miniwob": Suite("miniwob", tuple(Config(name, ("--system", name), 60) for name in ("base", "react", "ctm")),
                     ("success_rate", "mean_reward", "steps_per_episode", "calls_per_episode"), parallel=4),
    # issue 30: NLSOM's embodied society against random, a single model and a frontier explorer, 20 episodes each
    "embodied": Suite("embodied", (
        Config("random", ("--system", "random", *EMBODIED), 20),
        Config("frontier", ("--system", "frontier", *EMBODIED), 20),
        Config("single", ("--system", "single", *EMBODIED), 20),
        Config("society", ("--system", "society", *EMBODIED_WORLDS, *SOCIETY_STEPS), 20),
        # beside the paper's systems: the single agent's prompt, the action by option probabilities (issue 26)
        Config("single-scored", ("--system", "single-scored", *EMBODIED), 20),
        Config("single-scored-raw", ("--system", "single-scored-raw", *EMBODIED), 20),
        # the society's captain deciding by its calibrated option probabilities, at the society's R and steps
        Config("society-scored", ("--system", "society-scored", *EMBODIED_WORLDS, *SOCIETY_STEPS), 20),
    ), EMBODIED_METRICS, parallel=4),
}


def run_folders(folder: Path, offset: int | None = None) -> list[Path]:
    """A configuration's run folders, oldest first (their names start with the time); only those whose items
    start after `offset` items when it is given."""
    found = sorted(p for p in folder.glob("*") if (p / "config.json").exists()) if folder.exists() else []
    return found if offset is None else [p for p in found if offset_of(p) == offset]


def offset_of(folder: Path) -> int:
    """How many items the run left out before its own (`--offset`; 0 for runs from before there was one)."""
    try:
        return int(json.loads((folder / "config.json").read_text()).get("offset") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def _grows(folder: Path, limit: int | None) -> bool:
    """Whether the suite's `--limit` is larger than the run's own: the run is resumed with it, and scores the items
    it had not reached (a run cut to fit one session's compute, grown in the next)."""
    try:
        own = json.loads((folder / "config.json").read_text()).get("limit")
    except (OSError, ValueError):
        return False
    return isinstance(own, int) and limit is not None and limit > own


def finished(folder: Path) -> bool:
    """Every item was scored (an item that failed is scored as an error): resuming would only load the model
    to rewrite the report."""
    try:
        return json.loads((folder / "result.json").read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


def bench(command: list[str], **options: Any) -> subprocess.CompletedProcess:
    """Run a bench command to its end. Ctrl-C reaches the command as well (the terminal signals the whole process
    group) and it stops on its own, writing what it scored and its result; the suite waits for that and then stops
    as interrupted. (Interrupted inside `subprocess.run`, the suite killed the command 0.25 s later, mid-stop: its
    result said "running" and its report was stale.) A handler, not SIG_IGN, so that the command keeps its Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        return subprocess.run(command, check=False, **options)
    interrupted: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
    try:
        done = subprocess.run(command, check=False, **options)
    finally:
        signal.signal(signal.SIGINT, before)
    if interrupted:
        raise KeyboardInterrupt
    return done


def run(suite: Suite, config: Config, out: Path, args: argparse.Namespace) -> subprocess.CompletedProcess | None:
    """Start or resume the configuration's run: the bench process, or None when none was started (the run is
    finished, or waits for the run it matches)."""
    folder = out / config.name
    parallel = 1 if config.in_order else args.parallel or suite.parallel
    command = [sys.executable, "-m", "noosphere", "bench", suite.benchmark, "--quiet", "--parallel", str(parallel)]
    existing = [] if getattr(args, "new", False) else run_folders(folder, _offset(args, config))
    grows = bool(existing) and _grows(existing[-1], args.limit)
    if existing and finished(existing[-1]) and not grows:
        print(f"== {config.name}: finished ({existing[-1]})", flush=True)
        return None
    if existing:
        command += ["--resume", str(existing[-1]), *(["--limit", str(args.limit)] if grows else [])]
    else:
        command += _new_run(config, folder, args)
        if config.match:
            matched = run_folders(out / config.match, _offset(args, config))
            if not matched:
                print(f"== {config.name}: skipped until {config.match} has run (its calls set N)", flush=True)
                return None
            command += ["--match-run", str(matched[-1])]
    print(f"== {config.name}: {' '.join(command[3:])}", flush=True)
    return bench(command)


def _offset(args: argparse.Namespace, config: Config | None = None) -> int:
    """The items a configuration's runs leave out first: its own `--offset` (a held-out configuration), else the
    suite's (`--offset`), else none."""
    if config is not None and "--offset" in config.args:
        return int(config.args[config.args.index("--offset") + 1])
    return getattr(args, "offset", None) or 0


def _new_run(config: Config, folder: Path, args: argparse.Namespace) -> list[str]:
    own = "--offset" in config.args  # a held-out configuration's items are its own, whatever the suite's offset
    offset = ["--offset", str(_offset(args))] if _offset(args) and not own else []
    data = ["--data", str(args.data.resolve())] if getattr(args, "data", None) else []
    return [*config.args, "--limit", str(args.limit or config.limit), *offset, *data, "--model", args.model,
            "--out", str(folder)]


def run_together(suite: Suite, configs: list[Config], out: Path, args: argparse.Namespace) -> list[str]:
    """Create the runs that do not exist yet, then resume them all in one process, side by side: what failed (a
    configuration whose run could not be created, `together` when the process playing them failed)."""
    folders, failed = [], []
    for config in configs:
        folder = out / config.name
        before = run_folders(folder)
        fresh = getattr(args, "new", False) or not before
        if fresh:
            create = [sys.executable, "-m", "noosphere", "bench", suite.benchmark, *_new_run(config, folder, args)]
            subprocess.run([*create, "--create-only"], check=False, stdout=subprocess.DEVNULL)
        existing = run_folders(folder)
        if not existing or (fresh and existing[-1] in before):
            print(f"== {config.name}: skipped (its run folder could not be created)", flush=True)
            failed.append(config.name)
        elif finished(existing[-1]):
            grows = _grows(existing[-1], args.limit)
            grow = " (to grow it to --limit, run the suite without --together)" if grows else ""
            print(f"== {config.name}: finished ({existing[-1]}){grow}", flush=True)
        else:
            folders.append(str(existing[-1]))
    if not folders:
        return failed
    print(f"== together: {', '.join(Path(folder).parent.name for folder in folders)}", flush=True)
    parallel = str(args.parallel or suite.parallel)  # for the runs whose games need not go in order
    done = bench([sys.executable, "-m", "noosphere", "bench", "together", *folders, "--parallel", parallel])
    return [*failed, "together"] if done is not None and done.returncode != 0 else failed


def against(items: dict[str, dict], reference: dict[str, dict]) -> str:
    """Item by item against the reference run, on the items both scored: how many this run got right
    that the reference missed (+), and the reverse (-); a partial run is compared on its items so far."""
    shared = items.keys() & reference.keys()
    gained = sum(1 for i in shared if items[i].get("correct") and not reference[i].get("correct"))
    lost = sum(1 for i in shared if reference[i].get("correct") and not items[i].get("correct"))
    return f"+{gained} / -{lost} of {len(shared)}"


@dataclass(frozen=True)
class Measured:
    """What a run folder says so far: its rows, and its report's figures where the report covers every row."""

    items: dict[str, dict]
    metrics: dict
    spent: dict
    reported: bool
    in_report: int | None


def measured(folder: Path) -> Measured | None:
    """None for a run that has scored nothing yet (created, or stopped before its first item)."""
    items = load_done(folder / "items.jsonl")
    if not items:
        return None
    report_path = folder / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    metrics, spent = report.get("metrics", {}), report.get("costs", {})
    in_report = report.get("rows", metrics.get("n", metrics.get("games", metrics.get("episodes"))))
    reported = bool(report) and (in_report is None or in_report == len(items))
    if not reported:  # a run in progress rewrites its report when it stops; its rows say more now
        metrics = {**metrics, "accuracy": round(100 * sum(bool(r["correct"]) for r in items.values()) / len(items),
                                                2)}  # what rows cannot give stays as last reported
        spent = averages(list(items.values()))
    return Measured(items, metrics, spent, reported, in_report)


COSTS = ("calls_per_item", "tokens_per_item", "prompt_tokens_per_item", "reused_prompt_tokens_per_item",
         "seconds_per_item", "wall_seconds_per_item")


def summary(suite: Suite, out: Path) -> None:
    """A row for every run of every configuration (oldest first), never only the newest."""
    reference_name = suite.configs[0].name
    print(f"| run | folder | n | {' | '.join(suite.metrics)} | vs {reference_name} | {' | '.join(COSTS)} |")
    print("|---" * (4 + len(suite.metrics) + len(COSTS)) + "|")
    runs = [(config.name, folder, found) for config in suite.configs for folder in run_folders(out / config.name)
            if (found := measured(folder)) is not None]
    # the reference's runs, on its own items and on the held-out ones (`react-heldout` and `react-confirm` for
    # TextWorld's seeds 3 and 6, GSM8K's `base-confirm`)
    references = [(at, found.items) for at, (name, _, found) in enumerate(runs)
                  if name in (reference_name, f"{reference_name}-heldout", f"{reference_name}-confirm")]
    diagnosed: dict[tuple[str, str], dict] = {}
    for here, (name, folder, found) in enumerate(runs):
        offset = offset_of(folder)
        versus = "-"
        # the first reference run that shares the most items with this one (a reference run: among those before it)
        own = any(at == here for at, _ in references)
        shared, reference = max(((len(found.items.keys() & items), items) for at, items in references
                                 if not own or at < here), key=lambda pair: pair[0], default=(0, {}))
        if shared:
            versus = against(found.items, reference)
        cells = [str(found.metrics.get(key, "-")) for key in suite.metrics] + [versus] + [
            str(found.spent.get(key, "-")) for key in COSTS]
        scored = f"{len(found.items)}" + (f" from item {offset + 1}" if offset else "") + (
            "" if found.reported else f" (in progress; report: {found.in_report or 0})")
        print(f"| {name} | {folder.name} | {scored} | {' | '.join(cells)} |")
        if suite.diagnose is not None and (figures := suite.diagnose(list(found.items.values()))):
            diagnosed[(name, folder.name)] = figures
    if diagnosed:
        keys = list(dict.fromkeys(key for found in diagnosed.values() for key in found))  # some runs have more
        print(f"\n| run | folder | {' | '.join(keys)} |\n" + "|---" * (2 + len(keys)) + "|")
        for (name, folder_name), found in diagnosed.items():
            print(f"| {name} | {folder_name} | {' | '.join(str(found.get(key, '-')) for key in keys)} |")


def game_figures(suite: Suite, out: Path, name: str) -> list[Path]:
    """`outcomes.png`: a row per run of every configuration (named by its folder when a configuration has several);
    `transitions_memory.png`: the newest runs of the suite's meta-agent without memory and with it, side by side."""
    from noosphere.bench.game_figures import outcome, write_outcome_figure, write_transition_pair

    found = {config.name: [(folder, measured(folder)) for folder in run_folders(out / config.name)]
             for config in suite.configs}
    rows = {name: [(folder, m) for folder, m in runs if m is not None] for name, runs in found.items()}
    outcomes = [outcome(config if len(runs) == 1 else f"{config} ({folder.name})", list(m.items.values()))
                for config, runs in rows.items() for folder, m in runs]
    written = []
    if outcomes:
        written.append(write_outcome_figure(out / "outcomes.png", outcomes,
                                            f"{name}: success and actions per success, per configuration"))
    if suite.memory_pair and all(rows.get(config) for config in suite.memory_pair):
        (off, off_runs), (on, on_runs) = ((config, rows[config]) for config in suite.memory_pair)
        pair = write_transition_pair(
            out / "transitions_memory.png", (f"{off} ({off_runs[-1][0].name})", list(off_runs[-1][1].items.values())),
            (f"{on} ({on_runs[-1][0].name})", list(on_runs[-1][1].items.values())),
            f"{name}: the meta-agent's transitions without memory and with it")
        written += [pair] if pair is not None else []
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=list(SUITES))
    parser.add_argument("--only", nargs="+", help="run these configurations only (names as in the summary)")
    parser.add_argument("--limit", type=at_least_one, help="items per run instead of each run's own count")
    parser.add_argument("--offset", type=int, default=0,
                        help=f"skip each run's first N items, in new run folders ({', '.join(OFFSET_SUITES)})")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--data", type=Path, help=f"the data of new runs, as the bench command takes it "
                        f"({', '.join(DATA_SUITES)}; default: ../shared/data)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--parallel", type=at_least_one, help="items scored at once (default: the suite's own)")
    parser.add_argument("--together", action="store_true",
                        help="game suites: play every chosen run side by side in one process")
    parser.add_argument("--new", action="store_true",
                        help="start a new run of each chosen configuration (after a change), beside its earlier "
                             "runs; with --together, all of them are created first, then played side by side")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--list", action="store_true",
                        help="print the suite's configurations (the names --only takes) and their options, and stop")
    args = parser.parse_args()
    suite = SUITES[args.suite]
    names = [config.name for config in suite.configs]
    if args.list:
        for config in suite.configs:
            print(f"{config.name}: {suite.benchmark} {' '.join(config.args)} --limit {config.limit}")
        return
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; this suite has {names}")
    if args.offset and suite.benchmark not in OFFSET_SUITES:
        parser.error(f"--offset applies to {', '.join(OFFSET_SUITES)}, not {suite.benchmark}")
    if args.offset < 0:
        parser.error("--offset must be 0 or more")
    if args.data is not None and suite.benchmark not in DATA_SUITES:
        parser.error(f"--data applies to {', '.join(DATA_SUITES)}, not {suite.benchmark}")
    if args.together and suite.benchmark not in GAME_SUITES:
        parser.error(f"--together plays game runs ({', '.join(GAME_SUITES)}), not {suite.benchmark}")
    out = args.out / (suite.folder or args.suite)
    failed: list[str] = []
    if not args.summary_only:
        chosen = [config for config in suite.configs if not args.only or config.name in args.only]
        try:
            if args.together:
                failed = run_together(suite, chosen, out, args)
            else:
                for config in chosen:
                    done = run(suite, config, out, args)
                    if done is not None and done.returncode != 0:
                        failed.append(config.name)
        except KeyboardInterrupt:  # the bench command got the Ctrl-C too, and keeps what it scored: no traceback here
            print("suite: stopped (Ctrl-C); run it again to go on where each run stopped", file=sys.stderr)
            sys.exit(130)
    summary(suite, out)
    if suite.benchmark in GAME_SUITES:
        for path in game_figures(suite, out, args.suite):
            print(f"wrote: {path}")
    if failed:  # a suite whose every run failed (an unknown --model, say) must not look done
        sys.exit(f"suite: the bench command failed for {', '.join(failed)} (its error is above); run the suite again "
                 "once it is fixed")


if __name__ == "__main__":
    main()
