"""Societies declared in YAML or TOML: members, models, roles, organisation, rounds, voting, rights.

A malformed file is a `ConfigError` naming the file, the line (exact for YAML, the first line that
mentions the key for TOML, which has no positions) and the field's path, before any model loads.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from noosphere.errors import ConfigError
from noosphere.llm import Model
from noosphere.society.member import Member
from noosphere.society.organisations import RIGHTS, debate, democracy, economy_of_minds, monarchy
from noosphere.society.society import Society


class MemberSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    role: str = Field(min_length=1)
    model: str | None = None
    sees: list[str] | None = None


class SocietySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    organisation: Literal["monarchy", "democracy", "debate", "economy"]
    model: str | None = None
    """Model id of every member that names none (the command's --model otherwise)."""
    rounds: int = Field(default=3, ge=0, le=50)
    voting: Literal["plurality", "borda", "approval"] = "plurality"
    rights: list[Literal["know", "change", "execute"]] = Field(default_factory=lambda: list(RIGHTS))
    members: list[MemberSpec] = Field(min_length=1)
    organizer: MemberSpec | None = None
    leader: MemberSpec | None = None
    editor: MemberSpec | None = None
    arbiter: MemberSpec | None = None
    start_balance: float = Field(default=10.0, ge=0)
    rent: float = Field(default=1.0, ge=0)
    spawn_above: float = Field(default=30.0, gt=0)
    brigade_share: float = Field(default=0.5, ge=0, le=1)
    seed: int = 0

    def missing_staff(self) -> list[str]:
        """The staff roles this organisation needs and the file leaves out."""
        needs = {"monarchy": ("organizer", "leader"), "democracy": ("organizer",), "debate": (),
                 "economy": ("arbiter",)}[self.organisation]
        missing = [name for name in needs if getattr(self, name) is None]
        if self.organisation == "democracy" and "execute" not in self.rights and self.leader is None:
            missing.append("leader")
        return missing

    def check_staff(self, source: str | None = None, line: int | None = None) -> SocietySpec:
        missing = self.missing_staff()
        if missing:
            raise ConfigError(f"a {self.organisation} needs: {', '.join(missing)}", source=source, field=missing[0],
                              line=line)
        return self


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


def load_society_spec(path: Path) -> SocietySpec:
    if not path.is_file():
        raise ConfigError(f"no society file at {path}", source=str(path))
    text = path.read_text()
    is_toml = path.suffix == ".toml"
    try:
        data = tomllib.loads(text) if is_toml else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid {'TOML' if is_toml else 'YAML'}: {exc}", source=str(path),
                          line=mark.line + 1 if mark is not None else None) from exc
    if not isinstance(data, dict):
        raise ConfigError("a society file is a mapping of settings", source=str(path))
    def line_of(where: tuple[Any, ...]) -> int | None:
        return _toml_line(text, where) if is_toml else _yaml_line(text, where)

    try:
        spec = SocietySpec.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(error["loc"])
        raise ConfigError(error["msg"], source=str(path), field=".".join(str(p) for p in where) or None,
                          line=line_of(where)) from exc
    return spec.check_staff(str(path), line_of(("organisation",)))


def build_society(spec: SocietySpec, open_model: Callable[[str], Model], default_model: str) -> Society:
    """Members that name the same model share one loaded `Model`."""
    spec.check_staff()
    models: dict[str, Model] = {}

    def member(entry: MemberSpec) -> Member:
        model_id = entry.model or spec.model or default_model
        if model_id not in models:
            models[model_id] = open_model(model_id)
        return Member(entry.name, models[model_id], entry.role, tuple(entry.sees) if entry.sees is not None else None)

    crowd = [member(m) for m in spec.members]
    staff = {name: member(getattr(spec, name)) for name in ("organizer", "leader", "editor", "arbiter")
             if getattr(spec, name) is not None}
    if spec.organisation == "monarchy":
        return monarchy(crowd, staff["organizer"], staff["leader"], rounds=spec.rounds, seed=spec.seed)
    if spec.organisation == "democracy":
        return democracy(crowd, staff["organizer"], staff.get("leader"), rights=spec.rights, rounds=spec.rounds,
                         voting_rule=spec.voting, seed=spec.seed)
    if spec.organisation == "economy":
        return economy_of_minds(crowd, staff["arbiter"], rounds=spec.rounds, start=spec.start_balance, rent=spec.rent,
                                spawn_above=spec.spawn_above, brigade_share=spec.brigade_share,
                                voting_rule=spec.voting, seed=spec.seed)
    return debate(crowd, staff.get("editor"), rounds=spec.rounds, voting_rule=spec.voting, seed=spec.seed)
