"""Society files: the examples load, malformed files name the field and line, the CLI runs one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from noosphere.errors import ConfigError
from noosphere.human import ListChannel
from noosphere.llm import Capabilities, Model, ScriptedBackend
from noosphere.society import People
from noosphere.society.config import build_society, load_society_spec
from noosphere.society.decisions import MembersVote
from noosphere.tools.bwrap import bwrap_path
from tests.helpers import by_agent
from tests.test_cli import invoke

EXAMPLES = Path(__file__).parent.parent / "examples" / "societies"


@pytest.mark.parametrize("path", sorted(EXAMPLES.iterdir()), ids=lambda p: p.name)
def test_every_example_society_file_builds(path: Path) -> None:
    spec = load_society_spec(path)
    if any(m.answers == "program" for m in spec.members) and bwrap_path() is None:
        pytest.skip("a member answers with a program, which needs bubblewrap (.ci/run installs it)")
    able = Capabilities(vision=True, audio=True, tools=True, json_schema=True, logprobs=True)  # a weighted vote
    society = build_society(spec, lambda model_id: Model(ScriptedBackend([], capabilities=able)), "scripted",
                            people=People(ListChannel([])))  # a file may seat a person (human: true)
    assert society.organisation == spec.organisation
    assert len(society.members) == len(spec.members or spec.styles)


def refused(path: Path, match: str | None = None) -> ConfigError:
    """The error loading the society file at `path` is refused with (it names the field and the line)."""
    with pytest.raises(ConfigError, match=match) as error:
        load_society_spec(path)
    return error.value


def test_a_yaml_error_names_the_field_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("organisation: monarchy\nrounds: 2\nmembers:\n  - name: a\n    role: r\n    colour: blue\n"
                    "organizer: {name: o, role: r}\nleader: {name: l, role: r}\n")
    error = refused(path)
    assert (error.field, error.line) == ("members.0.colour", 6)
    assert "bad.yaml:6" in str(error)


def test_a_toml_error_names_the_field_and_a_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('organisation = "democracy"\nrounds = "many"\n[[members]]\nname = "a"\nrole = "r"\n'
                    '[organizer]\nname = "o"\nrole = "r"\n')
    error = refused(path)
    assert (error.field, error.line) == ("rounds", 2)


def test_a_missing_member_society_file_is_located_in_the_file_that_names_it(tmp_path: Path) -> None:
    path = tmp_path / "outer.yaml"
    path.write_text("organisation: monarchy\nmembers:\n  - name: panel\n    role: r\n    society: gone.yaml\n"
                    "organizer: {name: o, role: r}\nleader: {name: l, role: r}\n")
    error = refused(path, r"gone\.yaml")
    assert (error.field, error.line) == ("members.0.society", 5)
    assert "outer.yaml:5" in str(error)


def test_a_painter_saves_into_the_folder_it_is_given(tmp_path: Path) -> None:
    spec = load_society_spec(EXAMPLES / "artist-critic.yaml").model_copy(update={"painter": "openai/dall-e-3"})
    society = build_society(spec, lambda model_id: Model(ScriptedBackend([])), "scripted",
                            paintings=tmp_path / "paintings")
    [painter] = [p.painter for p in society.phases if getattr(p, "painter", None) is not None]
    assert painter.folder == tmp_path / "paintings"


def test_an_organisation_without_its_staff_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "monarchy.yaml"
    path.write_text("organisation: monarchy\nmembers: [{name: a, role: r}]\norganizer: {name: o, role: r}\n")
    error = refused(path, "leader")
    assert (error.field, error.line) == ("leader", 1)


def test_a_society_in_a_seat_it_could_only_forfeit_is_located(tmp_path: Path) -> None:
    """A society answers and votes: as an organizer (questions, summaries) or in a role-play it is refused."""
    (tmp_path / "panel.yaml").write_text("organisation: debate\nmembers: [{name: x, role: r}]\n")
    path = tmp_path / "monarchy.yaml"
    path.write_text("organisation: monarchy\nmembers: [{name: a, role: r}]\nleader: {name: l, role: r}\n"
                    "organizer:\n  name: o\n  society: {organisation: debate, members: [{name: x, role: r}]}\n")
    error = refused(path, "cannot be the organizer")
    assert (error.field, error.line) == ("organizer.society", 6)
    path = tmp_path / "roleplay.yaml"
    path.write_text("organisation: roleplay\nmembers:\n  - {name: user, role: r}\n  - name: team\n"
                    "    society: panel.yaml\n")
    error = refused(path, "members converse")
    assert (error.field, error.line) == ("members.1.society", 5)
    path.write_text("organisation: debate\nmembers: [{name: a, role: r}, {name: team, society: panel.yaml}]\n"
                    "editor:\n  name: e\n  society: {organisation: debate, members: [{name: y, role: r}]}\n")
    assert load_society_spec(path).editor is not None  # a society may answer and decide


def test_an_unknown_voting_rule_and_a_toml_table_array_entry_are_located(tmp_path: Path) -> None:
    path = tmp_path / "vote.yaml"
    path.write_text("organisation: debate\nmembers: [{name: a, role: r}]\nvoting: borad\n")
    error = refused(path, "borda")
    assert (error.field, error.line) == ("voting", 3)
    path = tmp_path / "second.toml"
    path.write_text('organisation = "debate"\n[[members]]\nname = "a"\nrole = "r"\nsees = ["x"]\n[[members]]\n'
                    'name = "b"\nrole = "r"\nsees = 3\n')
    error = refused(path)
    assert (error.field, error.line) == ("members.1.sees", 9)


@pytest.mark.parametrize(("quorum", "says"), [(4, "a quorum of 4 needs at least 4 members, not 3"),
                                              (1, "greater than or equal to 2")])
def test_a_quorum_the_members_cannot_make_is_refused_where_the_file_says_it(tmp_path: Path, quorum: int,
                                                                             says: str) -> None:
    path = tmp_path / "jury.yaml"
    path.write_text("organisation: debate\nmembers: [{name: a, role: r}, {name: b, role: r}, {name: c, role: r}]\n"
                    f"quorum: {quorum}\n")
    error = refused(path, says)
    assert (error.field, error.line) == ("quorum", 3)
    path.write_text("organisation: democracy\nmembers: [{name: a, role: r}, {name: b, role: r}]\n"
                    "organizer: {name: o, role: r}\nquorum: 2\n")
    assert refused(path, "quorum means nothing to a democracy").field == "quorum"


def test_a_mistyped_model_id_is_located_when_the_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "debate.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: a\n    role: r\n    model: lcoal:qwen2.5-coder-0.5b\n")
    error = refused(path, r"Did you mean local:qwen2\.5-coder-0\.5b")
    assert (error.field, error.line) == ("members.0.model", 5)
    path.write_text("organisation: debate\nmodel: litellm:openai/gpt-4o\nmembers: [{name: a, role: r}]\n")
    assert load_society_spec(path).model == "litellm:openai/gpt-4o"  # a provider's model is found out on use


@pytest.mark.parametrize(("setting", "line"), [("rights: [know]", 5), ("editor: {name: e, role: r}", 5),
                                               ("max_messages: 9", 5)])
def test_a_setting_that_means_nothing_to_the_organisation_is_refused(tmp_path: Path, setting: str, line: int) -> None:
    path = tmp_path / "monarchy.yaml"
    path.write_text("organisation: monarchy\nmembers: [{name: a, role: r}]\norganizer: {name: o, role: r}\n"
                    f"leader: {{name: l, role: r}}\n{setting}\n")
    error = refused(path, "means nothing to a monarchy")
    assert (error.field, error.line) == (setting.split(":")[0], line)
    code, _, err = invoke(["bench", "gsm8k", "--system", "society", "--society", str(EXAMPLES / "monarchy.yaml"),
                           "--rights", "know", "--out", str(tmp_path / "x")])
    assert code == 2 and "rights means nothing to a monarchy" in err and not (tmp_path / "x").exists()


def test_a_vote_by_standing_answers_needs_members_who_vote(tmp_path: Path) -> None:
    path = tmp_path / "monarchy.yaml"
    path.write_text("organisation: monarchy\nmembers: [{name: a, role: r}]\norganizer: {name: o, role: r}\n"
                    "leader: {name: l, role: r}\nvote: standing\n")
    error = refused(path, "where they vote")
    assert (error.field, error.line) == ("vote", 5)
    path.write_text("organisation: democracy\nrights: [know, execute]\nvote: standing\n"
                    "members: [{name: a, role: r}]\norganizer: {name: o, role: r}\n")
    assert load_society_spec(path).vote == "standing"


def test_the_summary_goes_on_ballots_only_where_members_fill_them_in(tmp_path: Path) -> None:
    path = tmp_path / "democracy.yaml"
    path.write_text("organisation: democracy\nrights: [know, execute]\nvote: standing\n"
                    "members: [{name: a, role: r}]\norganizer: {name: o, role: r}\nballot_summary: true\n")
    error = refused(path, "vote: ballot")
    assert (error.field, error.line) == ("ballot_summary", 6)
    path.write_text(path.read_text().replace("vote: standing", "vote: ballot"))
    society = build_society(load_society_spec(path), lambda model_id: Model(ScriptedBackend([])), "scripted")
    assert [p.shows_summary for p in society.phases if isinstance(p, MembersVote)] == [True]


@pytest.mark.parametrize("staff", ["", "arbiter: {name: z, role: r}\n"], ids=["debate", "economy"])
def test_a_debate_without_an_editor_and_an_economy_count_standing_answers_when_told(tmp_path: Path,
                                                                                   staff: str) -> None:
    path = tmp_path / "society.yaml"
    organisation = "economy" if staff else "debate"
    path.write_text(f"organisation: {organisation}\nvote: standing\nmembers: [{{name: a, role: r}}]\n{staff}")
    society = build_society(load_society_spec(path), lambda model_id: Model(ScriptedBackend([])), "scripted")
    [voting] = [phase for phase in society.phases if isinstance(phase, MembersVote)]
    assert voting.by_standing


def test_an_inline_sub_society_is_checked_at_load_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "outer.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: panel\n    society:\n      organisation: monarchy\n"
                    "      members: [{name: a, role: r}]\n      organizer: {name: o, role: r}\n"
                    "  - name: b\n    role: r\n")
    error = refused(path, "a monarchy needs: leader")
    assert (error.field, error.line) == ("members.0.society.leader", 4)  # its `society:` key
    assert "outer.yaml:4" in str(error)


def test_a_member_that_is_a_society_keeps_what_it_sees(tmp_path: Path) -> None:
    path = tmp_path / "outer.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: panel\n    sees: [first]\n    society:\n"
                    "      organisation: debate\n      members: [{name: a, role: r}]\n  - name: b\n    role: r\n")
    society = build_society(load_society_spec(path), lambda model_id: Model(ScriptedBackend([])), "scripted")
    assert [m.sees for m in society.members] == [("first",), None]  # the panel's society gets the first view only


@pytest.mark.parametrize(("text", "field", "line"), [
    ("organisation: roleplay\nmembers:\n  - {name: a, role: r}\n  - {name: a, role: s}\n", "members.1.name", 4),
    ("organisation: monarchy\nmembers: [{name: a, role: r}]\norganizer: {name: o, role: r}\n"
     "leader: {name: a, role: r}\n", "leader.name", 4),
], ids=["two members", "a member and the leader"])
def test_a_repeated_member_name_is_located_at_its_second_use(tmp_path: Path, text: str, field: str, line: int) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    error = refused(path, "'a' is used twice")
    assert (error.field, error.line) == (field, line)


@pytest.mark.parametrize(("name", "says"), [
    ("'  '", "cannot be blank"), ('"b\\nc"', "control character"), ('"b\\u0000"', "control character"),
    ("' b'", "begin or end with spaces")])
def test_a_member_name_that_is_blank_or_breaks_a_line_is_refused(tmp_path: Path, name: str, says: str) -> None:
    """A name heads its member's lines in prompts and ballots; a newline in it started a line that read as another
    member's (accepted before)."""
    path = tmp_path / "names.yaml"
    path.write_text(f"organisation: debate\nmembers:\n  - {{name: a, role: r}}\n  - {{name: {name}, role: r}}\n")
    error = refused(path, says)
    assert (error.field, error.line) == ("members.1.name", 4)


def test_members_that_are_not_a_list_get_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "five.yaml"
    path.write_text("organisation: debate\nmembers: 5\n")
    error = refused(path, "valid list")
    assert (error.field, error.line) == ("members", 2)


def test_a_society_file_sets_what_one_run_may_spend_and_a_wrong_budget_field_is_located(tmp_path: Path) -> None:
    from noosphere.bench.gsm8k import planned_calls
    from noosphere.llm import Budget

    path = tmp_path / "budgeted.yaml"
    path.write_text((EXAMPLES / "monarchy.yaml").read_text() + "budget:\n  max_calls: 6\n  max_tokens: 9000\n")
    spec = load_society_spec(path)
    society = build_society(spec, lambda model_id: Model(ScriptedBackend([])), "scripted")
    assert society.budget == Budget(max_calls=6, max_tokens=9000)
    assert planned_calls(spec) == 6  # the budget caps the 13 calls the monarchy would plan
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:-2], "  max_call: 6"]) + "\n")
    error = refused(path, "Extra inputs")
    assert (error.field, error.line) == ("budget.max_call", len(lines) - 1)


def test_ask_with_a_society_file_runs_the_society_and_traces_it(tmp_path: Path) -> None:
    vote = {"reasoning": "r", "choice": "A"}
    backend = ScriptedBackend(by_agent({
        "planner": [{"reasoning": "r", "answer": "12"}, {"reasoning": "r", "answer": "12"}, vote],
        "calculator": [{"reasoning": "r", "answer": "12"}, {"reasoning": "r", "answer": "12"}, vote],
        "checker": [{"reasoning": "r", "answer": "13"}, {"reasoning": "r", "answer": "12"}, vote],
        "organizer": [{"question": "Sure?"}, {"question": "Really?"}, {"summary": "12", "answer": "12"}]}))

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, out, err = invoke(["ask", "What is 5 + 7?", "--system", "society", "--society",
                             str(EXAMPLES / "democracy.yaml"), "--out", str(tmp_path), "--no-cache"], opener)
    assert code == 0, err
    assert "12" in out and "1.00" in out
    [run_dir] = list(tmp_path.iterdir())
    kinds = [json.loads(line)["kind"] for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert kinds.count("soc_phase") == 5 and "soc_tally" in kinds and "soc_finished" in kinds


def test_ask_society_without_a_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = invoke(["ask", "q", "--system", "society", "--out", str(tmp_path)])
    assert code == 2 and "--society FILE" in err


def test_a_member_may_be_a_society_of_its_own_file_and_needs_a_role_otherwise(tmp_path: Path) -> None:
    spec = load_society_spec(EXAMPLES / "hierarchy.yaml")
    panel = spec.members[0].society
    assert panel is not None and panel.organisation == "monarchy" and len(panel.members) == 3
    society = build_society(spec, lambda model_id: Model(ScriptedBackend([])), "scripted")
    assert type(society.members[0]).__name__ == "SubSociety" and society.members[0].society.organisation == "monarchy"
    path = tmp_path / "roleless.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: a\n  - name: b\n    role: r\n")
    error = refused(path, "role, or a society")
    assert (error.field, error.line) == ("members.0", 3)
    loop = tmp_path / "loop.yaml"
    loop.write_text("organisation: debate\nmembers:\n  - name: me\n    society: loop.yaml\n")
    with pytest.raises(ConfigError, match="nest at most"):
        load_society_spec(loop)
    pair = tmp_path / "trio.yaml"
    pair.write_text("organisation: roleplay\nmembers: [{name: a, role: r}, {name: b, role: r}, {name: c, role: r}]\n")
    error = refused(pair, "two members")
    assert (error.field, error.line) == ("members", 2)


def test_a_role_play_file_runs_as_a_society_and_answers_with_the_last_solution(tmp_path: Path) -> None:
    from noosphere.society.roleplay import DONE

    script = by_agent({"specifier": ["Write add(a, b) returning the sum of two ints."],
                       "user": ["Write the function.", DONE], "assistant": ["def add(a, b):\n    return a + b"]})
    code, out, err = invoke(["ask", "--system", "society", "--society", str(EXAMPLES / "roleplay.yaml"),
                             "--out", str(tmp_path), "--no-cache", "Add two numbers."],
                            lambda model_id, **kw: Model(ScriptedBackend(script), **kw))
    assert code == 0, err
    assert "return a + b" in out and "confidence: 1.00" in out  # the user agent declared the task done


def test_members_sample_at_their_own_temperature_each_with_its_own_seed() -> None:
    spec = load_society_spec(EXAMPLES / "monarchy.yaml")
    society = build_society(spec, lambda model_id: Model(ScriptedBackend([])), "scripted")
    settings = [member.model.settings for member in society.members]
    assert [s.temperature for s in settings] == [0.7, 0.7, 0.7]
    assert len({s.seed for s in settings}) == 3
    assert [member.model.settings.temperature for member in society.staff] == [0.0, 0.0]


def test_a_members_temperature_is_checked_where_the_file_says_it(tmp_path: Path) -> None:
    path = tmp_path / "hot.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: a\n    role: r\n    temperature: 3\n")
    error = refused(path, "less than or equal to 2")
    assert (error.field, error.line) == ("members.0.temperature", 5)


def test_a_society_standing_as_a_member_takes_no_temperature(tmp_path: Path) -> None:
    path = tmp_path / "nested.yaml"
    path.write_text("organisation: debate\nmembers:\n  - name: panel\n    society: monarchy.yaml\n"
                    "    temperature: 0.7\n")
    (tmp_path / "monarchy.yaml").write_text((EXAMPLES / "monarchy.yaml").read_text())
    with pytest.raises(ConfigError, match="no temperature of its own"):
        load_society_spec(path)


def test_ask_keeps_to_the_run_budget_it_is_given(tmp_path: Path) -> None:
    backend = ScriptedBackend(by_agent({name: [{"reasoning": "r", "answer": "12"}] for name in
                                        ("planner", "calculator", "checker")}))
    code, _, err = invoke(["ask", "What is 5 + 7?", "--system", "society", "--society",
                           str(EXAMPLES / "democracy.yaml"), "--out", str(tmp_path), "--no-cache",
                           "--budget", "calls=2"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 1 and "calls budget of 2 exceeded" in err and len(backend.history) == 2
    [run_dir] = list(tmp_path.iterdir())
    assert json.loads((run_dir / "config.json").read_text())["budget"] == {"max_calls": 2}


def test_leader_confidence_in_a_file_reaches_the_leader_and_is_refused_where_members_vote(tmp_path: Path) -> None:
    from noosphere.errors import UsageError
    from noosphere.llm import Capabilities
    from noosphere.society.decisions import LeaderDecides

    scoring = Model(ScriptedBackend([], capabilities=Capabilities(json_schema=True, logprobs=True),
                                    scorer=lambda request: {"Yes": 0.5, "No": 0.5}))
    path = tmp_path / "m.yaml"
    path.write_text("organisation: monarchy\nleader_confidence: true\nmembers: [{name: a, role: r}, {name: b, "
                    "role: r}]\norganizer: {name: o, role: r}\nleader: {name: l, role: r}\n")
    society = build_society(load_society_spec(path), lambda model_id: scoring, "scripted")
    execution = society.phases[-1]
    assert isinstance(execution, LeaderDecides) and execution.shows_confidence
    path.write_text("organisation: economy\nleader_confidence: true\nmembers: [{name: a, role: r}]\n"
                    "arbiter: {name: x, role: r}\n")
    with pytest.raises(UsageError, match="leader_confidence is for a monarchy"):
        build_society(load_society_spec(path), lambda model_id: scoring, "scripted")


@pytest.mark.parametrize(("name", "text"), [
    ("deep.yaml", "organisation: debate\nmembers: " + "[" * 3000 + "]" * 3000 + "\n"),
    ("deep.toml", 'organisation = "debate"\nmembers = ' + "[" * 3000 + "]" * 3000 + "\n"),
], ids=["yaml", "toml"])
def test_values_nested_thousands_deep_are_a_config_error(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    error = refused(path, "nested too deeply")
    assert error.source == str(path)


@pytest.mark.parametrize(("setting", "field", "line"), [
    ("start_balance: .inf", "start_balance", 3), ("rent: .inf", "rent", 3), ("spawn_above: .inf", "spawn_above", 3),
    ("budget: {max_cost_usd: .inf}", "budget.max_cost_usd", 3), ("brigade_share: .nan", "brigade_share", 3),
])
def test_a_number_that_is_not_finite_is_refused_where_the_file_says_it(tmp_path: Path, setting: str, field: str,
                                                                        line: int) -> None:
    """An economy begun with .inf money ran until a member endowed a child with nan: a usage error mid-run, after
    the models had loaded, with a failed run folder left behind."""
    path = tmp_path / "economy.yaml"
    path.write_text(f"organisation: economy\nrounds: 1\n{setting}\nmembers: [{{name: a, role: r}}]\n"
                    "arbiter: {name: x, role: r}\n")
    error = refused(path, "finite number")
    assert (error.field, error.line) == (field, line)
    code, _, err = invoke(["ask", "q", "--system", "society", "--society", str(path), "--out", str(tmp_path / "runs"),
                           "--no-cache"])
    assert code == 2 and "finite number" in err and not (tmp_path / "runs").exists()


def test_a_persons_time_to_answer_is_finite(tmp_path: Path) -> None:
    path = tmp_path / "person.yaml"
    path.write_text("organisation: debate\nmembers:\n  - {name: a, role: r}\n  - {name: you, human: true, "
                    "timeout: .inf}\n")
    error = refused(path, "finite number")
    assert (error.field, error.line) == ("members.1.timeout", 4)


@pytest.mark.parametrize(("member", "field"), [
    (r'{name: b, role: "\udc80 solves"}', "members.1.role"),
    (r'{name: b, role: r, sees: ["\ud800"]}', "members.1.sees.0"),
], ids=["role", "sees"])
def test_a_lone_surrogate_escape_is_refused_where_the_file_says_it(tmp_path: Path, member: str, field: str) -> None:
    """Before, the society loaded and ran until its trace could not write the role: a serialization traceback, and a
    run folder without a result."""
    path = tmp_path / "debate.yaml"
    path.write_text(f"organisation: debate\nmembers:\n  - {{name: a, role: r}}\n  - {member}\n")
    error = refused(path, "lone surrogate")
    assert (error.field, error.line) == (field, 4)
    code, _, err = invoke(["ask", "q", "--system", "society", "--society", str(path), "--out", str(tmp_path / "runs"),
                           "--no-cache"])
    assert code == 2 and "lone surrogate" in err and not (tmp_path / "runs").exists()


def test_a_key_given_twice_in_a_yaml_file_is_refused_at_its_second_line(tmp_path: Path) -> None:
    """YAML kept the last of a repeated key, silently: this debate ran 3 rounds, and its file read as 1 at the top."""
    path = tmp_path / "twice.yaml"
    path.write_text("organisation: debate\nrounds: 1\nmembers: [{name: a, role: r}]\nrounds: 3\n")
    error = refused(path, "'rounds' is given twice")
    assert error.line == 4
    path.write_text("organisation: debate\nmembers:\n  - {name: a, role: r, role: s}\n")
    assert refused(path, "'role' is given twice").line == 3
    path.write_text("organisation: debate\nx: &x {name: a, role: r}\nmembers:\n  - <<: *x\n    role: s\n")
    assert refused(path, "Extra inputs").field == "x"  # a merge key is no repeated key


def test_a_key_given_twice_in_a_set_value_is_refused(tmp_path: Path) -> None:
    code, _, err = invoke(["bench", "gsm8k", "--society", str(EXAMPLES / "debate.toml"), "--set",
                           "members=[{name: a, role: r, role: s}]", "--out", str(tmp_path)])
    assert code == 2 and "'role' is given twice" in err and not list(tmp_path.iterdir())
