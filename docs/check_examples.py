"""Run the code of the docs, so that an example in them cannot quietly stop working.

Every ```python block of `README.md` and of each page under `docs/` runs, the blocks of one page in order as one
script (a later block may use what an earlier one defined), in a namespace of its own and a scratch folder. The
model ids of real backends (`open_model()`, `local:...`, `litellm:...`) open the scripted model that fills any
form (the serve tests' `tests/serve_driver.py`) instead, so this takes seconds and needs no weights; an id no
backend takes still fails. A block whose first line is `# not run` is skipped (a skeleton that needs a server,
Ray or data from ../shared, say), and the reason after the colon printed. `make docs` runs this before building.

    python docs/check_examples.py [PAGE.md ...]
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
SKIP = "# not run"


@dataclasses.dataclass(frozen=True)
class Skipped:
    line: int
    reason: str


def example_pages() -> list[Path]:
    """The README and every docs page with a Python block, in a fixed order."""
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [page for page in pages if BLOCK.search(page.read_text())]


def page_script(page: Path) -> tuple[str, list[Skipped]]:
    """The page's blocks as one script, each at its line of the page (a traceback names the page's line), and
    the blocks left out."""
    text = page.read_text()
    script, skipped, at = "", [], 1
    for block in BLOCK.finditer(text):
        line = text.count("\n", 0, block.start(1)) + 1
        code = block.group(1)
        first = code.lstrip().partition("\n")[0]
        if first.startswith(SKIP):
            skipped.append(Skipped(line, first.partition(":")[2].strip() or "no reason given"))
            continue
        script += "\n" * (line - at) + code
        at = line + code.count("\n")
    return script, skipped


@contextlib.contextmanager
def scripted_models() -> Iterator[None]:
    """Every backend but the scripted one opens the scripted model that fills any form, keeping its check of the
    ids it takes; the backends are put back after."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # `tests` is no installed package
    from noosphere.llm import ScriptedBackend, register_backend
    from noosphere.llm.registry import _FACTORIES, BackendRequest
    from tests.serve_driver import answer_anything

    def scripted(request: BackendRequest) -> ScriptedBackend:
        return ScriptedBackend(answer_anything, model_id=request.model_id)

    with mock.patch.dict(_FACTORIES):
        for prefix, factory in list(_FACTORIES.items()):
            if prefix != "scripted":
                register_backend(prefix, dataclasses.replace(factory, open=scripted))
        yield


def run_page(page: Path) -> tuple[bool, str, list[Skipped]]:
    """Run a page's script in a fresh namespace, in a scratch folder, on the scripted model; return whether it
    passed, its output and the blocks it skipped."""
    script, skipped = page_script(page)
    if not script.strip():
        return True, "no code", skipped
    output = io.StringIO()
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="noosphere-docs-") as scratch, scripted_models():
        os.chdir(scratch)
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                exec(compile(script, str(page), "exec"), {"__name__": "__main__"})
        except BaseException:
            return False, output.getvalue() + traceback.format_exc(), skipped
        finally:
            os.chdir(here)
    return True, output.getvalue(), skipped


def main(argv: list[str]) -> int:
    pages = [Path(a) for a in argv] or example_pages()
    failed = 0
    for page in pages:
        ok, output, skipped = run_page(page)
        name = page.relative_to(ROOT) if page.is_absolute() and page.is_relative_to(ROOT) else page
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        for skip in skipped:
            print(f"     skipped the block at line {skip.line}: {skip.reason}")
        if not ok:
            failed += 1
            print("\n".join(f"     {line}" for line in output.splitlines()[-30:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
