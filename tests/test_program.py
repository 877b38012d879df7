"""The program an assistant's code blocks amount to: last versions in first places, nothing that runs."""

from __future__ import annotations

from noosphere.bench.program import program_from
from noosphere.tools.sandbox import run_python_program


def block(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\nAnything else?"


def passes(texts: list[str], tests: str) -> bool:
    outcome = run_python_program(f"{program_from(texts)}\n\n{tests}\n")
    return outcome.passed


def test_a_later_fix_replaces_the_first_version_where_it_stood() -> None:
    buggy = block("def fizz(n):\n    return []\n\nresult = fizz(15)\nprint(result)")
    fixed = block("def fizz(n):\n    return ['Fizz' if i % 3 == 0 else str(i) for i in range(1, n + 1)]")
    assert passes([buggy, fixed], "assert fizz(3) == ['1', '2', 'Fizz']")
    assert not passes([fixed, buggy], "assert fizz(3) == ['1', '2', 'Fizz']")  # the last version counts
    program = program_from([buggy, fixed])
    assert "print" not in program and "result" not in program


def test_definitions_keep_their_order_when_one_is_redefined() -> None:
    first = block("class Base:\n    size = 1\n\nclass Child(Base):\n    pass")
    again = block("class Base:\n    size = 2")
    assert passes([first, again], "assert Child.size == 2")


def test_imports_come_first_each_once_future_imports_before_all() -> None:
    first = block("from dataclasses import dataclass\n\n@dataclass\nclass Point:\n    x: int")
    second = block("from __future__ import annotations\nfrom dataclasses import dataclass\n\n@dataclass\n"
                   "class Line:\n    start: Point")
    program = program_from([first, second])
    assert program.startswith("from __future__ import annotations") and program.count("import dataclass") == 1
    assert passes([first, second], "assert Line(Point(1)).start.x == 1")


def test_constants_stay_and_code_that_runs_or_reads_input_goes() -> None:
    code = block("import re\nWORD = re.compile('[a-z]+')\nLIMIT: int = 3\nn = int(input())\nCACHE = {}\n"
                 "CACHE['a'] = 1\n\ndef words(text):\n    return WORD.findall(text)[:LIMIT]\n\nfirst = words('a b')\n"
                 "assert words('x') == ['wrong']\nfor w in words('a b c'):\n    print(w)")
    program = program_from([code])
    assert "WORD = re.compile" in program and "LIMIT: int = 3" in program and "CACHE = {}" in program
    assert "input" not in program and "CACHE['a']" not in program and "first =" not in program
    assert passes([code], "assert words('one two three four') == ['one', 'two', 'three']")


def test_an_optional_import_with_a_fallback_is_kept_and_prose_blocks_are_skipped() -> None:
    optional = block("try:\n    import numpy as np\nexcept ImportError:\n    np = None\n\ndef has_numpy():\n"
                     "    return np is not None or np is None")
    shell = "Run it:\n```\n$ python solve.py --n 3\n```"
    program = program_from([shell, optional])
    assert "$ python" not in program and "except ImportError" in program
    assert passes([shell, optional], "assert has_numpy()")
