"""The docs' examples run on the scripted model (`docs/check_examples.py`, as `make docs` runs it), the README's and
the concept pages' `open_model()` included: an API renamed under them fails here, not in a reader's hands."""

from __future__ import annotations

from pathlib import Path

import pytest

from noosphere.errors import UnknownNameError
from noosphere.llm import ScriptedBackend, open_model
from noosphere.llm.registry import _FACTORIES
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
CHECK = load_script(ROOT / "docs" / "check_examples.py")


def test_every_page_with_python_is_checked_the_readme_and_the_concepts_included() -> None:
    pages = {page.relative_to(ROOT).as_posix() for page in CHECK.example_pages()}
    assert {"README.md", "docs/install.md", "docs/models.md", "docs/concepts/workspace.md",
            "docs/concepts/society.md", "docs/concepts/metaagent.md", "docs/howto/testing.md"} <= pages


def test_the_examples_pass_on_the_scripted_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert CHECK.main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "ok   README.md" in out and "ok   docs/concepts/workspace.md" in out
    assert "ok   docs/cluster.md\n     skipped the block at line 105: needs Ray" in out


def test_a_failing_example_names_its_page_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```python\nfrom noosphere import open_model\n```\n\nText.\n\n```python\n"
                    "# not run: needs a cluster\nimport ray\n```\n\n```python\nopen_model().no_such_method()\n```\n")
    assert CHECK.main([str(page)]) == 1
    out = capsys.readouterr().out
    assert "skipped the block at line 10: needs a cluster" in out
    assert f'File "{page}", line 15' in out and "no_such_method" in out


def test_real_model_ids_are_scripted_only_inside_the_check_and_typos_still_fail() -> None:
    backends = dict(_FACTORIES)
    with CHECK.scripted_models():
        model = open_model("local:qwen2.5-coder-1.5b")
        assert isinstance(model.backend, ScriptedBackend) and model.backend.model_id == "local:qwen2.5-coder-1.5b"
        assert isinstance(open_model("litellm:openai/gpt-4o").backend, ScriptedBackend)
        with pytest.raises(UnknownNameError):
            open_model("local:no-such-model")
    assert backends == _FACTORIES
