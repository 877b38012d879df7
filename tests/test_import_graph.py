"""The package-level import graph (docs/import_graph.py, drawn in docs/architecture.md): noosphere's own imports
point down the layers of pyproject's `[tool.importlinter]` with no cycle, and the script finds an upward import,
a sideways one and a cycle in a tiny tree made to have them, from the files and from a git revision."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs" / "import_graph.py"


@pytest.fixture(scope="module")
def ig() -> Any:
    return load_script(SCRIPT, "import_graph_script")


def test_noosphere_imports_point_down(ig: Any) -> None:
    tree = ig.read_worktree(ROOT)
    graph = ig.build_graph(tree.files)
    layers = ig.layers_from_pyproject(tree.pyproject)
    assert layers, "pyproject.toml lost its [tool.importlinter] layers contract"
    report = ig.check(graph, layers)
    assert not report.upward, ig.findings(graph, layers, report)
    assert not report.sideways, ig.findings(graph, layers, report)
    assert not report.cycles, ig.findings(graph, layers, report)
    assert not report.unlayered, ig.findings(graph, layers, report)
    # the graph is the package's: its engines, the model layer under them, errors at the bottom
    assert {"llm", "workspace", "society", "metaagent", "bench", "cli", "errors", "trace"} <= set(graph.nodes)
    assert graph.edge("workspace", "llm") and graph.edge("llm", "errors")
    # the check this test makes fails on one lazy upward import added to the model layer
    sabotaged = ig.build_graph(dict(tree.files) | {
        "noosphere/llm/upward.py": "def f():\n    from noosphere.workspace import Workspace\n    return Workspace\n"})
    broken = ig.check(sabotaged, layers)
    assert [str(e) for e in broken.upward] == ["llm -> workspace"] and broken.cycles


PYPROJECT = """
[tool.importlinter]
root_package = "noosphere"

[[tool.importlinter.contracts]]
name = "tiny layers"
type = "layers"
containers = ["noosphere"]
layers = ["top", "mid | side", "low", "(base)"]
"""

# low imports top inside a function by a relative import (up, and a cycle through top's imports); mid imports
# side through the package (sideways); mid's TYPE_CHECKING import of base is its only import of base (dotted).
TINY = {
    "noosphere/__init__.py": "from noosphere.base import B\n",
    "noosphere/top/__init__.py": "from noosphere.mid import M\nfrom noosphere.low.deep import f\n",
    "noosphere/mid.py": ("from typing import TYPE_CHECKING\n\nfrom noosphere import side\n\n"
                         "if TYPE_CHECKING:\n    from .base import B\n\nM = side\n"),
    "noosphere/side.py": "import noosphere.low\n",
    "noosphere/low/__init__.py": "from .deep import f\n",
    "noosphere/low/deep.py": "from ..base import B\n\n\ndef f():\n    from ..top import M\n    return M, B\n",
    "noosphere/base.py": "B = 1\n",
}


def tiny_report(ig: Any, files: dict[str, str], pyproject: str | None = PYPROJECT) -> tuple[Any, Any, Any]:
    graph = ig.build_graph(files)
    layers = ig.layers_from_pyproject(pyproject)
    return graph, layers, ig.check(graph, layers)


def test_a_tiny_tree_with_an_upward_import_is_reported(ig: Any) -> None:
    graph, layers, report = tiny_report(ig, TINY)
    assert set(graph.nodes) == {"noosphere", "top", "mid", "side", "low", "base"}
    assert [str(e) for e in report.upward] == ["low -> top"]
    up = report.upward[0]
    assert up.lazy_only and [(i.path, i.line) for i in up.imports] == [("noosphere/low/deep.py", 5)]
    assert [str(e) for e in report.sideways] == ["mid -> side"]
    assert report.cycles == (("low", "mid", "side", "top"),)  # top -> mid -> side -> low -> top
    assert {str(e) for e in report.cycle_edges} == {"top -> mid", "mid -> side", "side -> low", "low -> top",
                                                   "top -> low"}
    assert graph.edge("mid", "base").type_only and not graph.edge("low", "base").type_only
    assert not report.clean
    text = ig.findings(graph, layers, report)
    assert "`low -> top` (inside functions only), points up (layer 3 imports layer 1" in text
    drawing = ig.mermaid(graph, layers, report)
    assert drawing.startswith("graph TD") and "m_mid -.-> m_base" in drawing and "linkStyle" in drawing


# The same tree without the upward and sideways imports.
CLEAN = TINY | {"noosphere/low/deep.py": "from ..base import B\n",
                "noosphere/mid.py": "import noosphere.low\n\nM = 1\n"}


def test_the_same_tree_without_the_upward_import_is_clean(ig: Any) -> None:
    graph, layers, report = tiny_report(ig, CLEAN)
    assert report.clean and not report.unlayered, ig.findings(graph, layers, report)
    assert "no edge points up or sideways, no cycle" in ig.findings(graph, layers, report)
    # without contracts only cycles are checked, and the first tree's cycle is still found
    _, _, bare = tiny_report(ig, TINY, None)
    assert not bare.upward and not bare.sideways and bare.cycles == (("low", "mid", "side", "top"),)


def test_the_reduced_drawing_leaves_out_implied_edges_only(ig: Any) -> None:
    graph, layers, report = tiny_report(ig, CLEAN)
    small = ig.reduced(graph)
    assert graph.edge("top", "low") and small.edge("top", "low") is None  # top -> mid -> low implies it
    assert {str(e) for e in small.edges} == {"noosphere -> base", "top -> mid", "mid -> low", "side -> low",
                                             "low -> base"}
    # an edge that is reported stays, and no path through it makes another edge implied
    graph, layers, report = tiny_report(ig, TINY)
    small = ig.reduced(graph, report.upward + report.sideways + report.cycle_edges)
    assert small.edge("low", "top") and small.edge("mid", "side") and small.edge("top", "low")
    assert "%% " in ig.mermaid(graph, layers, report, reduce=True)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_a_git_revision_is_read_without_its_work_tree(ig: Any, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    git(tmp_path, "init", "-q")
    for path, text in TINY.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "tiny")
    (tmp_path / "noosphere/low/deep.py").write_text("from ..base import B\n")  # the work tree is clean again

    tree = ig.read_rev("HEAD", tmp_path)
    assert tree.files == TINY and tree.pyproject == PYPROJECT
    assert ig.main(["--rev", "HEAD", "--repo", str(tmp_path), "--check", "--mermaid"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("```mermaid\ngraph TD") and "`low -> top`" in out
    assert ig.main(["--repo", str(tmp_path), "--check"]) == 1  # mid -> side is still in the work tree
    assert "`low -> top`" not in capsys.readouterr().out
