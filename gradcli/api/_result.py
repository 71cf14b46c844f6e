"""The API's result: the CLI's ``-f json`` document (as text and parsed), its JSON Lines records, what the CLI
would say on stderr, whether it would exit 1, and the CLI's table for a terminal or a notebook.

The table is drawn by gradcli's own renderers (gradcli.render), which print to a rich console on
``sys.stdout``; the text is captured while they run.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator

# sys.stdout, sys.stderr and sys.stdin are swapped while the core runs: one call at a time.
_LOCK = threading.RLock()


class _Capture(io.StringIO):
    """A text buffer that may pass for a terminal (so that rich writes its colours into it)."""

    def __init__(self, *, terminal: bool = False):
        super().__init__()
        self._terminal = terminal

    def isatty(self) -> bool:
        return self._terminal


@contextlib.contextmanager
def quiet(stdin_text: str | None = None):
    """Run the core with stdout and stderr captured (yields them: what it printed, normally nothing) and, for
    ``--points -``, ``stdin_text`` as standard input."""
    out, err = _Capture(), _Capture()
    with _LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        saved = sys.stdin
        if stdin_text is not None:
            sys.stdin = io.StringIO(stdin_text)
        try:
            yield out, err
        finally:
            sys.stdin = saved


@contextlib.contextmanager
def _plain_console():
    """rich, in a notebook, displays what a console prints instead of writing it to the console's file; the
    table is wanted as text here, so every console made while rendering is told it is not in a notebook."""
    import rich.console

    detect = getattr(rich.console, "_is_jupyter", None)
    if detect is None:
        yield
        return
    rich.console._is_jupyter = lambda: False
    try:
        yield
    finally:
        rich.console._is_jupyter = detect


@contextlib.contextmanager
def _columns(width: int | None):
    """The width gradcli's renderers lay the table out for: they read it from COLUMNS (as the CLI does)."""
    if width is None:
        yield
        return
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


class _Table:
    """A result's table as a rich renderable, laid out for the console that renders it."""

    def __init__(self, result: Result):
        self.result = result

    def __rich_console__(self, console, options):
        from rich.text import Text

        yield Text.from_ansi(self.result.table(color=console.is_terminal, width=options.max_width).rstrip("\n"))


class Result:
    """What a command gives: the same numbers and documents as the CLI.

    - :meth:`to_dict`: the ``-f json`` document, parsed (:meth:`to_json`: its text, byte for byte);
    - :meth:`records`: the ``-f jsonl`` records;
    - ``warnings``, ``notes``: the lines the CLI prints on stderr (``gradcli: warning: ...``), without the prefix;
      ``summary_text``: many points' summary line (None at one point);
    - ``failed``: True where the CLI would exit 1 (part of the result could not be computed);
    - ``captured``: anything the core printed on stdout or stderr besides (normally empty);
    - ``str(result)`` / ``repr(result)``: the CLI's table as text; ``__rich__`` and ``_repr_html_`` show it in
      a rich console or a notebook.
    """

    def __init__(self, command: str, document: str, *, warnings: list[str], notes: list[str], failed: bool,
                 render: Callable[[], None], list_key: str | None = None, summary_text: str | None = None,
                 captured: str = "", records: Callable[[], list[dict]] | None = None):
        self.command = command
        self._document = document
        self.warnings = list(warnings)
        self.notes = list(notes)
        self.failed = bool(failed)
        self.summary_text = summary_text
        self.captured = captured
        self._render = render
        self._list_key = list_key
        self._records_of = records
        self._records: list[dict] | None = None

    @property
    def many(self) -> bool:
        """Whether this is the result of many points (--points/--grid)."""
        return self._list_key is not None

    def to_json(self) -> str:
        """What ``gradcli COMMAND ... -f json`` prints on stdout."""
        return self._document

    def to_dict(self) -> dict:
        """The ``-f json`` document, parsed (a new copy on each call)."""
        return json.loads(self._document)

    def records(self) -> Iterator[dict]:
        """The ``-f jsonl`` records: one per point (descend: per start and optimizer). At one point: what
        ``-f jsonl`` writes there (grad, hessian, derivative: the record --points would write for that point,
        computed on first use; descend, check, eval: the document)."""
        if self._records_of is not None:
            if self._records is None:
                self._records = self._records_of()
            yield from json.loads(json.dumps(self._records))
        elif self._list_key is None:
            yield self.to_dict()
        else:
            yield from self.to_dict()[self._list_key]

    # ---- display ----------------------------------------------------------------------------------
    def table(self, *, color: bool = False, width: int | None = None) -> str:
        """The CLI's table (``-f table``; ``check`` and ``eval``: their text output) as text, laid out for
        ``width`` columns (default: as the CLI's when piped, COLUMNS or 160); ``color``: with the ANSI styles
        a terminal gets."""
        buffer = _Capture(terminal=color)
        with _LOCK, _plain_console(), _columns(width), contextlib.redirect_stdout(buffer), \
                contextlib.redirect_stderr(io.StringIO()):
            self._render()
        return buffer.getvalue()

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return self.table().rstrip("\n") or f"<gradcli {self.command} result>"

    def __rich__(self):
        return _Table(self)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.table())}</pre>"
