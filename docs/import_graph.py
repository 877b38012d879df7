"""The package-level import graph of noosphere, read from the source with `ast` (nothing is imported).

Nodes are the top-level sub-packages and modules of `noosphere/` (`llm`, `workspace`, `society`, `trace`,
`errors`, ...; the package's own `__init__.py` is the node `noosphere`). There is an edge A -> B when some module of
A imports from B: `import noosphere.b`, `from noosphere.b import x`, `from noosphere import b` and relative imports
(`from ..b import x`), at module level or inside a function (a lazy import is still a dependency). Imports under
`if TYPE_CHECKING:` count too (import-linter counts them), but an edge made of nothing else is marked `type-only`
and drawn dotted. Imports by name at run time (`importlib.import_module`) are not seen.

The edges are checked against the `layers` contracts of pyproject's `[tool.importlinter]` at the same revision
(or at `--contracts-from REV`): an edge from a layer to one above it points up, an edge between two modules of one
row separated by "|" goes sideways; both are listed, red in the drawing. Groups of nodes that import each other
round a cycle (strongly connected components) are listed whether or not there are contracts.

    python docs/import_graph.py                           # the working tree: what is wrong, if anything
    python docs/import_graph.py --rev 6a88dad^ --mermaid  # a revision, with its Mermaid drawing
    python docs/import_graph.py --rev 6a88dad^ --contracts-from HEAD --mermaid
    python docs/import_graph.py --check                   # exit 1 when anything is listed
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "noosphere"
WORKTREE = "worktree"


# Reading a tree ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """The package's Python files (path relative to the repository -> text) and pyproject.toml's text, if any."""

    files: Mapping[str, str]
    pyproject: str | None
    origin: str


def read_worktree(root: Path = ROOT, package: str = PACKAGE) -> Tree:
    files = {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
             for path in sorted((root / package).rglob("*.py"))}
    pyproject = root / "pyproject.toml"
    return Tree(files, pyproject.read_text(encoding="utf-8") if pyproject.exists() else None, WORKTREE)


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def read_rev(rev: str, root: Path = ROOT, package: str = PACKAGE) -> Tree:
    """The tree of a git revision, read with `git ls-tree -r` and `git show REV:path` (the work tree is untouched)."""
    paths = [p for p in _git(root, "ls-tree", "-r", "--name-only", rev, "--", f"{package}/").splitlines()
             if p.endswith(".py")]
    if not paths:
        raise SystemExit(f"{rev} has no Python files under {package}/")
    files = {path: _git(root, "show", f"{rev}:{path}") for path in paths}
    has_pyproject = bool(_git(root, "ls-tree", "--name-only", rev, "--", "pyproject.toml").strip())
    return Tree(files, _git(root, "show", f"{rev}:pyproject.toml") if has_pyproject else None, rev)


def read_tree(rev: str, root: Path = ROOT, package: str = PACKAGE) -> Tree:
    return read_worktree(root, package) if rev == WORKTREE else read_rev(rev, root, package)


# Imports -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Import:
    """One import statement's dependency of one module on a node."""

    path: str  # the importing file
    line: int
    source: str  # the importing node
    target: str  # the imported node
    statement: str  # as written, for the report
    lazy: bool  # inside a function
    type_checking: bool  # under `if TYPE_CHECKING:`


def module_of(path: str) -> tuple[str, bool]:
    """'noosphere/llm/model.py' -> ('noosphere.llm.model', False); 'noosphere/llm/__init__.py' -> ('noosphere.llm',
    True)."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def nodes_of(paths: Iterable[str], package: str = PACKAGE) -> frozenset[str]:
    """The top-level names under the package ('llm', 'trace', '__main__'), and the package itself for its
    `__init__.py`."""
    nodes = set()
    for path in paths:
        module, _ = module_of(path)
        parts = module.split(".")
        if parts[0] == package:
            nodes.add(parts[1] if len(parts) > 1 else package)
    return frozenset(nodes)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, lazy: bool = False, type_checking: bool = False) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every import statement under `node`, with whether it is inside a function or a TYPE_CHECKING block."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, lazy, type_checking
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for statement in node.body:
            yield from _walk(statement, lazy, True)
        for statement in node.orelse:
            yield from _walk(statement, lazy, type_checking)
        return
    lazy = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, lazy, type_checking)


def imports_of(path: str, text: str, nodes: frozenset[str], package: str = PACKAGE) -> list[Import]:
    """The imports of one file that reach a node of the package, its own node included (dropped later)."""
    module, is_package = module_of(path)
    source = module.split(".")[1] if "." in module else package
    tree = ast.parse(text, filename=path)
    found = []

    def target_of(dotted: str, imported_name: str | None = None) -> str | None:
        """The node of `from dotted import imported_name` (or of `import dotted`), None outside the package."""
        parts = dotted.split(".")
        if parts[0] != package:
            return None
        if len(parts) > 1:
            return parts[1]
        if imported_name is not None and imported_name in nodes:
            return imported_name  # from noosphere import llm
        return package  # from noosphere import Model: the package's __init__

    for statement, lazy, type_checking in _walk(tree):
        targets: list[str | None] = []
        if isinstance(statement, ast.Import):
            targets = [target_of(alias.name) for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom):
            if statement.level:
                base = module if is_package else module.rpartition(".")[0]
                for _ in range(statement.level - 1):
                    base = base.rpartition(".")[0]
                dotted = f"{base}.{statement.module}" if statement.module else base
            else:
                dotted = statement.module or ""
            if dotted == package:
                targets = [target_of(dotted, alias.name) for alias in statement.names]
            else:
                targets = [target_of(dotted)]
        code = ast.get_source_segment(text, statement) or ""
        for target in dict.fromkeys(targets):
            if target is not None:
                found.append(Import(path, statement.lineno, source, target, " ".join(code.split()), lazy,
                                    type_checking))
    return found


# The graph -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    imports: tuple[Import, ...]

    @property
    def type_only(self) -> bool:
        return all(i.type_checking for i in self.imports)

    @property
    def lazy_only(self) -> bool:
        return all(i.lazy or i.type_checking for i in self.imports) and not self.type_only

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}"


@dataclass(frozen=True)
class Graph:
    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]  # sorted, no self-loops

    def edge(self, source: str, target: str) -> Edge | None:
        return next((e for e in self.edges if e.source == source and e.target == target), None)


def build_graph(files: Mapping[str, str], package: str = PACKAGE) -> Graph:
    nodes = nodes_of(files, package)
    by_edge: dict[tuple[str, str], list[Import]] = {}
    for path, text in sorted(files.items()):
        for found in imports_of(path, text, nodes, package):
            if found.source != found.target:
                by_edge.setdefault((found.source, found.target), []).append(found)
    edges = tuple(Edge(s, t, tuple(imports)) for (s, t), imports in sorted(by_edge.items()))
    all_nodes = nodes | {e.target for e in edges}
    return Graph(tuple(sorted(all_nodes, key=lambda n: (n != package, n))), edges)


def cycles(graph: Graph) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one node (Tarjan), each sorted, in sorted order."""
    successors: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for e in graph.edges:
        successors[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in successors[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(tuple(sorted(component)))

    for node in graph.nodes:
        if node not in index:
            visit(node)
    return sorted(components)


# Layer contracts -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layers:
    """One `layers` contract over the package's top-level modules: rows top (0) to bottom; a row's modules are
    independent when the row separates them with "|" (with ":" they may import each other)."""

    name: str
    rows: tuple[tuple[tuple[str, ...], bool], ...]

    def row_of(self, node: str) -> int | None:
        return next((i for i, (names, _) in enumerate(self.rows) if node in names), None)


def layers_from_pyproject(text: str | None, package: str = PACKAGE) -> list[Layers]:
    """The `layers` contracts of `[tool.importlinter]` that order the package's top-level modules."""
    if text is None:
        return []
    contracts = tomllib.loads(text).get("tool", {}).get("importlinter", {}).get("contracts", [])
    found = []
    for contract in contracts:
        if contract.get("type") != "layers":
            continue
        containers = contract.get("containers", [])
        if containers and package not in containers:
            continue  # a contract inside a sub-package: below this graph's grain
        prefix = "" if containers else f"{package}."
        rows = []
        for layer in contract.get("layers", []):
            independent = "|" in layer
            names = [n.strip().strip("()").strip() for n in re.split(r"[|:]", layer)]
            if prefix and not all(n.startswith(prefix) for n in names):
                break
            rows.append((tuple(n.removeprefix(prefix) for n in names if n), independent))
        else:
            found.append(Layers(contract.get("name", "layers"), tuple(rows)))
    return found


@dataclass(frozen=True)
class Report:
    upward: tuple[Edge, ...]  # from a row to one above it
    sideways: tuple[Edge, ...]  # between independent modules of one row
    cycles: tuple[tuple[str, ...], ...]
    cycle_edges: tuple[Edge, ...]  # the edges inside a cycle
    unlayered: tuple[str, ...]  # nodes no contract places (the package's __init__ aside)
    contracts: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not (self.upward or self.sideways or self.cycles)


def check(graph: Graph, layers: Iterable[Layers], package: str = PACKAGE) -> Report:
    layers = list(layers)
    upward: dict[Edge, None] = {}
    sideways: dict[Edge, None] = {}
    for contract in layers:
        for e in graph.edges:
            source, target = contract.row_of(e.source), contract.row_of(e.target)
            if source is None or target is None:
                continue
            if source > target:
                upward[e] = None
            elif source == target and contract.rows[source][1]:
                sideways[e] = None
    components = cycles(graph)
    members = {n: i for i, c in enumerate(components) for n in c}
    inside = tuple(e for e in graph.edges if e.source in members and members[e.source] == members.get(e.target))
    placed = {n for contract in layers for names, _ in contract.rows for n in names}
    unlayered = tuple(n for n in graph.nodes if layers and n != package and n not in placed)
    return Report(tuple(upward), tuple(sideways), tuple(components), inside, unlayered,
                  tuple(c.name for c in layers))


def reduced(graph: Graph, keep: Iterable[Edge] = ()) -> Graph:
    """The graph without the edges another path implies (A -> C goes when A -> B -> C is there), for a drawing of
    the layers that can be read. The edges in `keep` (those that point up or close a cycle) stay, and no path
    through them counts: the rest is reduced as it would be without them."""
    keep = set(keep)
    successors: dict[str, set[str]] = {n: set() for n in graph.nodes}
    for e in graph.edges:
        if e not in keep:
            successors[e.source].add(e.target)

    def reaches_otherwise(source: str, target: str) -> bool:
        seen, todo = {source}, [n for n in successors[source] if n != target]
        while todo:
            node = todo.pop()
            if node == target:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(successors[node])
        return False

    return Graph(graph.nodes, tuple(e for e in graph.edges
                                    if e in keep or not reaches_otherwise(e.source, e.target)))


# Output --------------------------------------------------------------------------------------------------------
def _id(node: str) -> str:
    return "m_" + re.sub(r"\W", "_", node)


def mermaid(graph: Graph, layers: Iterable[Layers], report: Report, package: str = PACKAGE,
            reduce: bool = False) -> str:
    """A `graph TD` drawing: a box a layer row, dotted edges for TYPE_CHECKING-only imports, a `lazy` label on
    edges made only of imports inside functions, red edges that point up, go sideways or lie on a cycle. With
    `reduce`, edges another path implies are left out (never a red one)."""
    bad = set(report.upward) | set(report.sideways) | set(report.cycle_edges)
    lines = ["graph TD"]
    if reduce:
        full = len(graph.edges)
        graph = reduced(graph, bad)
        lines.append(f"    %% {full - len(graph.edges)} of {full} edges left out: another path implies them")
    drawn: set[str] = set()
    present = set(graph.nodes)
    contract = next(iter(layers), None)
    if package in present:
        lines.append(f'    {_id(package)}["{package} (__init__)"]')
        drawn.add(package)
    if contract is not None:
        for i, (names, independent) in enumerate(contract.rows):
            here = [n for n in names if n in present]
            if not here:
                continue
            title = (" | " if independent else " : ").join(here)
            lines.append(f'    subgraph L{i}["{title}"]')
            lines.extend(f'        {_id(n)}["{n}"]' for n in here)
            lines.append("    end")
            drawn.update(here)
    lines.extend(f'    {_id(n)}["{n}"]' for n in graph.nodes if n not in drawn)
    red = []
    for i, e in enumerate(graph.edges):
        arrow = "-.->" if e.type_only else "-->|lazy|" if e.lazy_only else "-->"
        lines.append(f"    {_id(e.source)} {arrow} {_id(e.target)}")
        if e in bad:
            red.append(str(i))
    if red:
        lines.append(f"    linkStyle {','.join(red)} stroke:#d32f2f,stroke-width:3px")
    return "\n".join(lines)


def _edge_line(e: Edge, why: str) -> str:
    kind = " (TYPE_CHECKING only)" if e.type_only else " (inside functions only)" if e.lazy_only else ""
    sites = "; ".join(f"`{i.path}:{i.line}` `{i.statement}`" for i in e.imports[:3])
    more = f"; and {len(e.imports) - 3} more" if len(e.imports) > 3 else ""
    return f"- `{e}`{kind}, {why}: {sites}{more}"


def findings(graph: Graph, layers: Iterable[Layers], report: Report) -> str:
    """The report as a Markdown list."""
    layers = list(layers)
    out = []
    if layers:
        for e in report.upward:
            rows = next((c.row_of(e.source), c.row_of(e.target)) for c in layers
                        if None not in (c.row_of(e.source), c.row_of(e.target)))
            why = f"points up (layer {rows[0] + 1} imports layer {rows[1] + 1}, counting from the top)"
            out.append(_edge_line(e, why))
        out.extend(_edge_line(e, "goes sideways (independent modules of one layer)") for e in report.sideways)
    else:
        out.append("- no `layers` contract in pyproject's `[tool.importlinter]`: only cycles are checked")
    for component in report.cycles:
        inside = [e for e in report.cycle_edges if e.source in component]
        out.append(f"- cycle between {', '.join(f'`{n}`' for n in component)}: "
                   + ", ".join(f"`{e}`" for e in inside))
    out.extend(f"- `{n}` has no place in the layers" for n in report.unlayered)
    if report.clean and not report.unlayered:
        out.append(f"- no edge points up or sideways, no cycle ({len(graph.nodes)} nodes, {len(graph.edges)} edges)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default=WORKTREE, help="a git revision (default: the working tree)")
    parser.add_argument("--contracts-from", default=None, metavar="REV",
                        help="read the layer contracts from this revision (or 'worktree') instead of --rev's")
    parser.add_argument("--mermaid", action="store_true", help="print the Mermaid drawing (a ```mermaid block) first")
    parser.add_argument("--reduce", action="store_true",
                        help="draw only the edges no other path implies (the red ones always)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when an edge points up or sideways, a cycle or an unplaced module")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    tree = read_tree(args.rev, args.repo)
    pyproject = tree.pyproject
    if args.contracts_from is not None:
        pyproject = read_tree(args.contracts_from, args.repo).pyproject
    graph = build_graph(tree.files)
    layers = layers_from_pyproject(pyproject)
    report = check(graph, layers)
    if args.mermaid:
        print(f"```mermaid\n{mermaid(graph, layers, report, reduce=args.reduce)}\n```\n")
    print(findings(graph, layers, report))
    return 1 if args.check and not (report.clean and not report.unlayered) else 0


if __name__ == "__main__":
    sys.exit(main())
