"""The physical lines of one input (a binary file, or a text stream such as stdin), and its format by sniffing."""

from __future__ import annotations

from collections import deque
from typing import Callable

from gradcli.expression.sources.messages import Where

#: the longest physical input line read (bytes for files, characters for text streams)
MAX_LINE_LENGTH = 1 << 20


class Lines:
    """The physical lines of one input as text, numbered from 1, each at most ``max_length`` long.

    ``number`` is the number of the last line handed out. Lines looked at by :meth:`first_nonblank`
    are handed out again, so numbering always counts every physical line.
    """

    def __init__(self, read: Callable[[], str | None], where: Where):
        self._read_raw = read
        self._where = where
        self._pending: deque[str] = deque()
        self._read_count = 0  # lines read from the input, handed out or pending
        self.number = 0
        #: bytes (a text stream: characters) of the lines read so far, for chunks bounded by size
        self.consumed = 0

    @classmethod
    def from_binary(cls, f, where: Where, *, max_length: int) -> "Lines":
        state = {"first": True}

        def read() -> str | None:
            try:
                raw = f.readline(max_length + 1)
            except OSError as exc:  # an I/O error, a closed stdin
                raise where.at(None, f"cannot be read: {exc.strerror or exc}") from None
            if not raw:
                return None
            line = lines._read_count + 1
            if len(raw) > max_length:
                raise where.at(line, f"line longer than {max_length:,} bytes")
            lines.consumed += len(raw)
            if state["first"]:
                state["first"] = False
                if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark (Excel writes one)
                    raw = raw[3:]
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise where.at(line, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None

        lines = cls(read, where)
        return lines

    @classmethod
    def from_text(cls, stream, where: Where, *, max_length: int) -> "Lines":
        state = {"first": True}
        readline = getattr(stream, "readline", None)
        iterator = None if readline is not None else iter(stream)

        def read() -> str | None:
            line = lines._read_count + 1
            try:
                text = readline(max_length + 1) if readline is not None else next(iterator, "")
            except UnicodeDecodeError as exc:
                raise where.at(line, f"not valid UTF-8 ({exc.reason})") from None
            except OSError as exc:  # an I/O error, a closed stdin
                raise where.at(None, f"cannot be read: {exc.strerror or exc}") from None
            if not text:
                return None
            if len(text) > max_length:
                raise where.at(line, f"line longer than {max_length:,} characters")
            lines.consumed += len(text)
            if state["first"]:
                state["first"] = False
                text = text.removeprefix("\ufeff")
            return text

        lines = cls(read, where)
        return lines

    def _read(self) -> str | None:
        text = self._read_raw()
        if text is not None:
            self._read_count += 1
        return text

    def __iter__(self) -> "Lines":
        return self

    def __next__(self) -> str:
        text = self._pending.popleft() if self._pending else self._read()
        if text is None:
            raise StopIteration
        self.number += 1
        return text

    def first_nonblank(self) -> str | None:
        """Look ahead to the first line that is not blank (None at the end); hand it out again later."""
        for text in self._pending:
            if text.strip():
                return text
        while True:
            text = self._read()
            if text is None:
                return None
            self._pending.append(text)
            if text.strip():
                return text


def sniff(lines: Lines) -> str | None:
    """"jsonl" when the first non-blank character is '{', "csv" otherwise, None for an empty input."""
    first = lines.first_nonblank()
    if first is None:
        return None
    return "jsonl" if first.lstrip().startswith("{") else "csv"
