"""Run the code of the how-to pages, so that an example in the docs cannot quietly stop working.

Every ```python block of each page under `docs/howto/` runs, the blocks of one page in order as one script
(a later block may use what an earlier one defined), in a namespace of its own and a scratch folder. The
examples use the scripted model, so this takes seconds and needs no weights. A block whose first line is
`# not run` is skipped (a skeleton that needs a server, say). `make docs` runs this before building.

    python docs/check_examples.py [PAGE.md ...]
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def page_script(page: Path) -> str:
    blocks = [b for b in BLOCK.findall(page.read_text()) if not b.lstrip().startswith("# not run")]
    return "\n\n".join(blocks)


def run_page(page: Path) -> tuple[bool, str]:
    """Run a page's script in a fresh namespace, in a scratch folder; return whether it passed and its output."""
    script = page_script(page)
    if not script.strip():
        return True, "no code"
    output = io.StringIO()
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="noosphere-docs-") as scratch:
        os.chdir(scratch)
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                exec(compile(script, str(page), "exec"), {"__name__": "__main__"})
        except BaseException:
            return False, output.getvalue() + traceback.format_exc()
        finally:
            os.chdir(here)
    return True, output.getvalue()


def main(argv: list[str]) -> int:
    pages = [Path(a) for a in argv] or sorted((DOCS / "howto").glob("*.md"))
    failed = 0
    for page in pages:
        ok, output = run_page(page)
        name = page.relative_to(ROOT) if page.is_absolute() and page.is_relative_to(ROOT) else page
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
        if not ok:
            failed += 1
            print("\n".join(f"     {line}" for line in output.splitlines()[-30:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
