"""What the people of a run answered, kept in its folder: `human/answers.jsonl`, one turn a line.

A line is `{"question": ID, "member": NAME, "answer": {...}, "by": "terminal"|"viewer"}`, or a forfeit,
`{"question": ID, "member": NAME, "forfeit": REASON}`. The run writes the answers typed on its terminal and
the turns a person forfeited; `noosphere view` writes the answers typed in its page, even while the run is
stopped. A resumed run reads them back, so no person is asked the same turn twice. The first line of a
question stands: a question is answered once.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

ANSWERS = "answers.jsonl"
POLL_S = 0.2


class AnswerBook:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / ANSWERS
        self._entries: dict[str, dict[str, Any]] = {}
        self._offset = 0

    def _refresh(self) -> None:
        """Read the lines written since the last look (by this process or another); a line still being
        written is left for the next look."""
        try:
            with self.path.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a damaged line: that question is asked again
            if isinstance(entry, dict) and isinstance(entry.get("question"), str):
                self._entries.setdefault(entry["question"], entry)
        self._offset += end

    def entry(self, question: str) -> dict[str, Any] | None:
        self._refresh()
        return self._entries.get(question)

    def forfeited(self, question: str) -> bool:
        entry = self.entry(question)
        return entry is not None and "forfeit" in entry

    def _append(self, entry: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:  # one write of one line: another process appending at the same time cannot tear it
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def answer(self, question: str, member: str, values: dict[str, Any], by: str) -> bool:
        """Keep an answer; False (and nothing written) when the question has one already."""
        if self.entry(question) is not None:
            return False
        self._append({"question": question, "member": member, "answer": values, "by": by})
        return True

    def forfeit(self, question: str, member: str, reason: str) -> None:
        if self.entry(question) is None:
            self._append({"question": question, "member": member, "forfeit": reason})

    async def wait(self, question: str, poll_s: float = POLL_S) -> dict[str, Any]:
        """The question's entry, once somebody has written it."""
        while True:
            entry = self.entry(question)
            if entry is not None:
                return entry
            await asyncio.sleep(poll_s)
