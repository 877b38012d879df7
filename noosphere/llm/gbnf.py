"""JSON schema to a llama.cpp grammar: llama-cpp-python's converter, with string literals escaped correctly.

llama-cpp-python 0.3.16's `json_schema_to_gbnf` escapes quotes but not backslashes in the literals it writes,
so a constant or enum value that holds a double quote (JSON-encoded as `\\"`), such as the web agents' action
`click("12")`, becomes a literal whose backslash escapes the grammar's own closing quote, and llama.cpp
refuses the whole grammar ("failed to parse grammar"). This converter is theirs with that one rule fixed.
"""

from __future__ import annotations

import json
import re
from typing import Any

_LITERAL_ESCAPES = {"\r": "\\r", "\n": "\\n", '"': '\\"', "\\": "\\\\"}
_LITERAL_ESCAPE = re.compile(r'[\r\n"\\]')


def schema_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of `schema`, following its property order (fields meant to be written first stay first)."""
    from llama_cpp.llama_grammar import SchemaConverter

    class _Converter(SchemaConverter):  # type: ignore[misc]
        def _format_literal(self, literal: str) -> str:
            return '"' + _LITERAL_ESCAPE.sub(lambda match: _LITERAL_ESCAPES[match.group(0)], literal) + '"'

    converter = _Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    converter.visit(converter.resolve_refs(json.loads(json.dumps(schema)), "stdin"), "")
    return str(converter.format_grammar())
