"""Societies declared in YAML or TOML: members, models, roles, organisation, rounds, voting, rights.

Every organisation has a file form: monarchy, democracy, debate, economy, role-play, interview and the
artist-critic society; a member may itself be a society (a hierarchy), named by its own file.

A malformed file is a `ConfigError` naming the file, the line (exact for YAML, the first line that
mentions the key for TOML, which has no positions) and the field's path, before any model loads.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from noosphere.errors import ConfigError, UnknownNameError, UsageError
from noosphere.llm import Budget, Model
from noosphere.society.artists import LiteLLMPainter, artist_critic
from noosphere.society.hierarchy import SubSociety
from noosphere.society.human import People
from noosphere.society.interview import Instructions, interview
from noosphere.society.member import Member
from noosphere.society.organisations import debate, democracy, economy_of_minds, monarchy
from noosphere.society.roleplay import role_play
from noosphere.society.society import Society
from noosphere.society.spec import STAFF, MemberSpec, SocietySpec
from noosphere.tools.sandbox import Sandbox


def _yaml_line(text: str, path: tuple[Any, ...]) -> int | None:
    """1-based line of the node at `path` (keys and list indices) in a YAML document."""
    node = yaml.compose(text)
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == step), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _toml_line(text: str, path: tuple[Any, ...]) -> int | None:
    """1-based line of the key at `path` in a TOML document, following `[[table]]` arrays by index
    (TOML parsers keep no positions, so the text is searched: the first match after the parent)."""
    lines = text.splitlines()
    start, found, steps = 0, None, list(path)
    for i, step in enumerate(steps):
        if not isinstance(step, str):
            continue
        index = steps[i + 1] if i + 1 < len(steps) and isinstance(steps[i + 1], int) else None
        headers = [n for n in range(start, len(lines)) if lines[n].strip() == f"[[{step}]]"]
        if index is not None and index < len(headers):
            start = headers[index]
        else:
            match = next((n for n in range(start, len(lines)) if lines[n].strip().startswith(
                (f"{step} ", f"{step}=", f"[{step}]", f"[[{step}]]"))), None)
            if match is None:
                break
            start = match
        found = start + 1
    return found


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML whose mappings give each key once: PyYAML keeps the last of a repeated key, silently, so a file that
    says `rounds: 1` and later `rounds: 3` would run with 3 (TOML and the JSON read at the edge refuse it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key.value!r} is given twice (the first would be lost)", key.start_mark)
                seen.add((key.tag, key.value))
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, refusing a key repeated in one mapping (a `yaml.YAMLError` locating the second)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no tags that build Python objects


MAX_NESTING = 5
"""Societies within societies, at most this deep (a file that names itself would never end)."""


def load_society_spec(path: Path, *, depth: int = 0) -> SocietySpec:
    if not path.is_file():
        raise ConfigError(f"no society file at {path}", source=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"byte {exc.object[exc.start]:#04x} is not UTF-8 text", source=str(path),
                          line=exc.object[: exc.start].count(b"\n") + 1) from None
    is_toml = path.suffix == ".toml"
    try:
        data = tomllib.loads(text) if is_toml else load_yaml(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid {'TOML' if is_toml else 'YAML'}: {' '.join(str(exc).split())}", source=str(path),
                          line=mark.line + 1 if mark is not None else None) from exc
    except RecursionError:  # lists or tables nested thousands deep: the parsers recurse once a level
        raise ConfigError("values are nested too deeply to read (a society file nests a few levels)",
                          source=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError("a society file is a mapping of settings", source=str(path))

    def line_of(*where: Any) -> int | None:
        return _toml_line(text, where) if is_toml else _yaml_line(text, where)

    members = data.get("members")
    for index, member in enumerate(members if isinstance(members, list) else []):  # pydantic reports a non-list
        if isinstance(member, dict) and isinstance(member.get("society"), str):  # a sub-society's file
            if depth >= MAX_NESTING:
                raise ConfigError(f"societies nest at most {MAX_NESTING} deep", source=str(path),
                                  field=f"members.{index}.society", line=line_of("members", index, "society"))
            inner_path = path.parent / member["society"]
            if not inner_path.is_file():
                raise ConfigError(f"no society file at {inner_path}", source=str(path),
                                  field=f"members.{index}.society", line=line_of("members", index, "society"))
            inner = load_society_spec(inner_path, depth=depth + 1)
            data["members"][index] = {**member, "society": inner.model_dump()}
    try:
        spec = SocietySpec.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(error["loc"])
        raise ConfigError(error["msg"], source=str(path), field=".".join(str(p) for p in where) or None,
                          line=line_of(*where)) from exc
    return spec.check_staff(str(path), line_of)


def saved_society_spec(settings: Any, source: str) -> SocietySpec:
    """The society a run saved in its config (`source`), checked as its file was: one edited by hand since is a
    `ConfigError` naming the field, before the run is reopened."""
    try:
        spec = SocietySpec.model_validate(settings)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ConfigError(error["msg"], source=source,
                          field=".".join(str(part) for part in ("society", *error["loc"]))) from None
    wrong = spec.problem()
    if wrong is not None:
        raise ConfigError(wrong[1], source=source, field=".".join(str(part) for part in ("society", *wrong[0])))
    return spec


def build_society(spec: SocietySpec, open_model: Callable[[str], Model], default_model: str, *,
                  paintings: Path = Path("paintings"), people: People | None = None) -> Society:
    """Members that name the same model share one loaded `Model`; a painter saves its images in `paintings`
    (the run folder's, from the CLI); `people` asks the members that are persons (`human: true`)."""
    budget = Budget(**spec.budget.model_dump()) if spec.budget is not None else None
    return replace(_organise(spec, open_model, default_model, paintings, people),
                   max_concurrency=spec.max_concurrency, budget=budget)


def has_people(spec: SocietySpec) -> list[str]:
    """The names of the persons (`human: true`) in a society, its sub-societies' included."""
    seats = [*spec.members, *(getattr(spec, name) for name in STAFF if getattr(spec, name) is not None)]
    return [name for seat in seats
            for name in ([seat.name] if seat.human else has_people(seat.society) if seat.society else [])]


def _organise(spec: SocietySpec, open_model: Callable[[str], Model], default_model: str, paintings: Path,
              people: People | None = None) -> Society:
    spec.check_staff()
    models: dict[str, Model] = {}

    def model_for(model_id: str | None) -> Model:
        model_id = model_id or spec.model or default_model
        if model_id not in models:
            models[model_id] = open_model(model_id)
        return models[model_id]

    def member(entry: MemberSpec, seat: int) -> Member:
        sees = tuple(entry.sees) if entry.sees is not None else None
        if entry.human:
            if people is None:
                raise UsageError(f"{entry.name} is a person (human: true): people take part through `noosphere ask` "
                                 "(in Python, give build_society a `People`)")
            return replace(people.member(entry.name, entry.role, entry.timeout), sees=sees)
        if entry.society is not None:
            inner = entry.society.model_copy(update={"model": entry.society.model or entry.model or spec.model})
            return SubSociety.of(entry.name, build_society(inner, open_model, default_model, paintings=paintings,
                                                           people=people), role=entry.role, sees=sees)
        model = model_for(entry.model)
        if entry.temperature is not None:  # its own seed too, or members at one temperature sample alike
            model = model.bind(settings=model.settings.with_(temperature=entry.temperature,
                                                             seed=model.settings.seed + seat))
        return Member(entry.name, model, entry.role, sees, answers=entry.answers, repairs=entry.repairs)

    crowd = [member(m, seat) for seat, m in enumerate(spec.members, start=1)]
    if any(m.answers == "program" for m in crowd):  # before any call: its programs could not run
        Sandbox().check()
    staff = {name: member(getattr(spec, name), len(crowd) + seat)
             for seat, name in enumerate(STAFF, start=1) if getattr(spec, name) is not None}
    if spec.leader_confidence and spec.organisation not in ("monarchy", "democracy", "debate"):
        raise UsageError(f"leader_confidence is for a monarchy, a democracy with a leader or a debate with an editor, "
                         f"not a {spec.organisation}")
    if spec.organisation == "monarchy":
        return monarchy(crowd, staff["organizer"], staff["leader"], rounds=spec.rounds, seed=spec.seed,
                        leader_confidence=spec.leader_confidence)
    if spec.organisation == "democracy":
        return democracy(crowd, staff["organizer"], staff.get("leader"), rights=spec.rights, rounds=spec.rounds,
                         voting_rule=spec.voting, vote=spec.vote, ballot_summary=spec.ballot_summary, seed=spec.seed,
                         leader_confidence=spec.leader_confidence)
    if spec.organisation == "economy":
        return economy_of_minds(crowd, staff["arbiter"], rounds=spec.rounds, start=spec.start_balance, rent=spec.rent,
                                spawn_above=spec.spawn_above, brigade_share=spec.brigade_share,
                                voting_rule=spec.voting, vote=spec.vote, seed=spec.seed)
    if spec.organisation == "roleplay":
        return role_play(crowd[0], crowd[1], specifier=staff.get("specifier"), max_messages=spec.max_messages,
                         token_budget=spec.token_budget, seed=spec.seed)
    if spec.organisation == "interview":
        said = spec.instructions.model_dump(exclude_none=True) if spec.instructions is not None else {}
        return interview(crowd, staff["organizer"], staff["leader"], rounds=spec.rounds,
                         instructions=Instructions(**said), seed=spec.seed)
    if spec.organisation == "artist-critic":
        painter = LiteLLMPainter(spec.painter, paintings) if spec.painter else None
        return artist_critic(model_for(None), spec.styles, spec.professions, rounds=spec.rounds, painter=painter,
                             seed=spec.seed)
    return debate(crowd, staff.get("editor"), rounds=spec.rounds, voting_rule=spec.voting, vote=spec.vote,
                  seed=spec.seed, leader_confidence=spec.leader_confidence, until_consensus=spec.until_consensus,
                  quorum=spec.quorum)


def society_settings(pairs: list[str]) -> dict[str, Any]:
    """`--set KEY=VALUE` pairs (the command line's) as society settings, each value read as YAML (`null`, `3`,
    `[know, change]`)."""
    settings: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set takes KEY=VALUE, not {pair!r}")
        if key not in SocietySpec.model_fields:
            raise UnknownNameError("society setting", key, list(SocietySpec.model_fields))
        try:
            settings[key] = load_yaml(value)
        except yaml.YAMLError as exc:
            raise UsageError(f"--set {key}: the value is not YAML ({exc})") from exc
    return settings
