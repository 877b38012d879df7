"""Text from outside (a model's reply, a run folder, a memory file, a data file, another member's question) made
safe to print on a terminal.

A terminal acts on the control characters it is sent: ESC[2J clears the screen, OSC 52 (ESC]52;c;...BEL) writes
the clipboard, OSC 8 draws a link to anywhere, ESC]0; retitles the window, a bare CR lets the rest of a line
overwrite what came before. Rich strips only BEL, BS, VT, FF and CR, and its markup escaping only brackets, so a
reply holding ESC reached the terminal as a command. The bidirectional embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069) reorder how the rest of the line is drawn, so that the text shown is not the text
held (the "Trojan Source" trick). Each such character is shown instead as its escape (`\\x1b`, `\\u202e`):
the reader sees that the text held one, and nothing is silently lost. Only what is printed is changed; the run
folder keeps the exact text.
"""

from __future__ import annotations

import re

from rich.markup import escape

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Every C0 control character but tab and newline, DEL, the C1 range (U+0080-U+009F: U+009B is a one-character
CSI, U+009D an OSC, on terminals that read them), and the bidirectional embeddings, overrides and isolates. The
marks (U+200E, U+200F) and joiners stay: they shape right-to-left text and emoji without reordering a line."""


def terminal_safe(text: str) -> str:
    """`text` with every control character but newline and tab, and every bidirectional override, written as its
    escape (ESC as `\\x1b`, RIGHT-TO-LEFT OVERRIDE as `\\u202e`). A CR before
    a newline (a Windows line end) is dropped, as it moves nothing on a terminal; any other CR is shown."""
    return _CONTROL.sub(_visible, text.replace("\r\n", "\n"))


def markup_safe(value: object) -> str:
    """`value` as text to put into rich markup: its control characters shown (`terminal_safe`) and its brackets
    escaped, so it prints as written and never as markup or a terminal command."""
    return escape(terminal_safe(str(value)))


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
