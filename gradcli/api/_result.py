"""The API's result: a :class:`gradcli.library.run.Run` with the records, read as the CLI's documents (``-f
json``, ``-f jsonl``, ``-f csv`` as arrays), as values one level deep, and shown as the CLI's table with its
warnings (a terminal, rich, a notebook).

The table is drawn by gradcli's own views (gradcli.render) on a rich console that writes into a string
(gradcli.render.common.drawing_on, per thread): nothing is printed, and no stream of the process is swapped.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Iterator


class _Table:
    """A result's table and warnings as a rich renderable, laid out for the console that renders it."""

    def __init__(self, result: Result):
        self.result = result

    def __rich_console__(self, console, options):
        from rich.text import Text

        yield Text.from_ansi(self.result.table(color=console.is_terminal, width=options.max_width).rstrip("\n"))
        for line in self.result.warning_lines():
            yield Text(line, style="bold yellow")


class Result:
    """What a command gives: the same numbers and documents as the CLI.

    - :meth:`to_dict`: the ``-f json`` document, parsed (:meth:`to_json`: its text, byte for byte);
    - :meth:`records`: the ``-f jsonl`` records; :meth:`columns`: the ``-f csv`` columns as NumPy arrays;
    - one level deep: ``gradient[method][variable]`` (several expressions: ``gradients[i]``),
      ``hessian[method]`` (a 2-D array), ``derivatives[method]`` (an array by order 1..n), ``value``;
    - ``warnings``, ``notes``: the lines the CLI prints on stderr (``gradcli: warning: ...``), without the prefix;
      ``summary_text``: many points' summary line (None at one point);
    - ``failed``: True where the CLI would exit 1 (part of the result could not be computed);
    - ``run``: the library's :class:`gradcli.library.run.Run`;
    - ``str(result)`` / ``repr(result)``: the CLI's table, then its warnings; ``__rich__``, ``_repr_html_`` and
      ``_repr_markdown_`` show the same in a rich console or a notebook.
    """

    def __init__(self, run):
        self.run = run
        self.command = run.command
        self.warnings = list(run.warnings)
        self.notes = list(run.notes)
        self.failed = bool(run.failed)
        self.summary_text = None if run.one_point else run.summary_text
        self._text: str | None = None

    @property
    def many(self) -> bool:
        """Whether this is the result of many points (--points/--grid)."""
        return not self.run.one_point

    # ---- the CLI's documents ------------------------------------------------------------------------
    def to_json(self) -> str:
        """What ``gradcli COMMAND ... -f json`` prints on stdout."""
        if self._text is None:
            self._text = self.run.document_text()
        return self._text

    def to_dict(self) -> dict:
        """The ``-f json`` document, parsed (a new copy on each call)."""
        return json.loads(self.to_json())

    def records(self) -> Iterator[dict]:
        """The ``-f jsonl`` records: one per point (at one point: the record --points would write for it)."""
        for line in self.run.record_lines():
            yield json.loads(line)

    def columns(self) -> dict:
        """The ``-f csv`` columns as NumPy arrays, by the CSV's column names (a row per point; grad with several
        expressions: a row per point and expression): int64, float64 (an empty cell as NaN), str, or object."""
        from gradcli.render.batch import sink_for

        rows_of = sink_for(self.command, "csv").rows  # the CLI's CSV row layout
        names: list[str] = []
        cells: dict[str, list] = {}
        for record in self.records():
            for row in rows_of(self.run.header, record):
                if not names:
                    names = [k for k, _ in row]
                    clash = next((k for k in names if names.count(k) > 1), None)
                    if clash is not None:  # a pass-through column named like a computed one
                        from gradcli.errors import UsageError

                        raise UsageError(f"points: the column {clash!r} has the name of an output column: "
                                         "rename it")
                    cells = {k: [] for k in names}
                values = dict(row)
                for k in names:
                    cells[k].append(values.get(k))
        return {k: column_array(v) for k, v in cells.items()}

    # ---- values one level deep ------------------------------------------------------------------------
    def _record(self, what: str) -> dict:
        if self.many:
            raise ValueError(f"{what} is a value at one point; at many points see columns() (or records())")
        return json.loads(next(iter(self.run.record_lines())))

    def _need(self, *commands: str) -> None:
        if self.command not in commands:
            raise AttributeError(f"a {self.command} result has no such value")

    @property
    def gradients(self) -> list[dict]:
        """grad at one point: per expression, {method: {variable: value}} (None where a method gives none)."""
        self._need("grad")
        return [r["gradient"] for r in self._record("gradients")["results"]]

    @property
    def gradient(self) -> dict:
        """grad of one expression at one point: {method: {variable: value}}."""
        gradients = self.gradients
        if len(gradients) != 1:
            raise ValueError(f"{len(gradients)} expressions have a gradient each: see gradients[i]")
        return gradients[0]

    @property
    def hessian(self) -> dict:
        """hessian at one point: {method: 2-D float64 array} (rows and columns in ``wrt`` order; NaN: none)."""
        import numpy as np

        self._need("hessian")
        return {m: np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=np.float64)
                for m, rows in self._record("hessian")["hessian"].items() if rows is not None}

    @property
    def derivatives(self) -> dict:
        """derivative at one point: {method: float64 array of the derivatives of order 1..n} (NaN: none)."""
        import numpy as np

        self._need("derivative")
        return {m: np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                for m, values in self._record("derivatives")["derivatives"].items() if values is not None}

    @property
    def jvps(self) -> list[dict]:
        """jvp at one point: per expression, {method: J·v} (None where a method gives none)."""
        self._need("jvp")
        return [r["jvp"] for r in self._record("jvps")["results"]]

    @property
    def jvp(self) -> dict:
        """jvp of one expression at one point: {method: J·v}."""
        jvps = self.jvps
        if len(jvps) != 1:
            raise ValueError(f"{len(jvps)} expressions have a J·v each: see jvps[i]")
        return jvps[0]

    @property
    def hvp(self) -> dict:
        """hvp at one point: {method: 1-D float64 array H·v} (entries in ``wrt`` order; NaN: none)."""
        import numpy as np

        self._need("hvp")
        return {m: np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                for m, values in self._record("hvp")["hvp"].items() if values is not None}

    @property
    def value(self) -> float | None:
        """The expression's value at the one point (None where undefined; grad: of its one expression)."""
        record = self._record("value")
        if self.command in ("grad", "jvp"):
            results = record["results"]
            if len(results) != 1:
                raise ValueError(f"{len(results)} expressions have a value each: see to_dict()['results']")
            return results[0]["value"]
        return record["value"]

    # ---- display ----------------------------------------------------------------------------------
    def table(self, *, color: bool = False, width: int | None = None) -> str:
        """The CLI's table (``-f table``; eval at one point: its number) as text, laid out for ``width``
        columns (default: as the CLI's when piped, COLUMNS or 160); ``color``: with the ANSI styles a
        terminal gets."""
        from rich.console import Console

        from gradcli.render.common import drawing_on
        from gradcli.render.layout import terminal_width

        buffer = io.StringIO()
        console = Console(file=buffer, highlight=False, force_terminal=color, force_jupyter=False,
                          no_color=not color, width=width or terminal_width(buffer, default=160))
        with drawing_on(console):
            self._draw(console)
        return buffer.getvalue()

    def _draw(self, console) -> None:
        if self.command == "eval" and not self.many:  # the CLI's -f plain: the number alone
            value = self.run.record["value"]
            if value is not None:
                console.print(repr(value), markup=False, highlight=False, soft_wrap=True)
            return
        if not self.many:
            from gradcli.render.batch import detail_view

            detail_view(self.command)(self.to_dict())
            return
        from gradcli.render.batch import sink_for
        from gradcli.render.layout import print_table

        table = sink_for(self.command, "table")
        table.start(self.run.header)
        table.write(list(self.records()))
        print_table(console, table.table())

    def warning_lines(self) -> list[str]:
        """The warnings as the CLI's stderr says them."""
        from gradcli.errors import printable

        return [f"gradcli: warning: {printable(w)}" for w in self.warnings]

    def _shown(self) -> str:
        return self.table() + "".join(line + "\n" for line in self.warning_lines())

    def __str__(self) -> str:
        return self._shown()

    def __repr__(self) -> str:
        return self._shown().rstrip("\n") or f"<gradcli {self.command} result>"

    def __rich__(self):
        return _Table(self)

    def _repr_html_(self) -> str:
        shown = html.escape(self.table())
        warned = "".join(f'<span style="color: #b58900">{html.escape(line)}</span>\n' for line in self.warning_lines())
        return f"<pre>{shown}{warned}</pre>"

    def _repr_markdown_(self) -> str:
        fence = "```"
        return f"{fence}text\n{self._shown()}{fence}\n"


def column_array(values: list):
    """A column of the CSV layout as a NumPy array: int64, float64 (None as NaN), str, or object."""
    import numpy as np

    kinds = {type(v) for v in values}
    if kinds <= {int} and values:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    if kinds <= {int, float, type(None)}:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if kinds <= {str}:
        return np.array(values, dtype=str)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class DescendResult(Result):
    """descend's result: one start's document (the race, the trajectories kept with ``every``) or many
    starts' (``starts`` and the basins)."""

    def __init__(self, run, *, every: int | None):
        super().__init__(run)
        self.every = every

    def to_json(self) -> str:
        if self._text is None:
            from gradcli.library.run import batch_document_text, json_text

            if self.many:
                from gradcli.render.descend_batch import summary_and_basins

                self._text = batch_document_text(self.run.header, self.run.record_lines(),
                                                 summary_and_basins(self.run.summary), self.warnings, self.notes,
                                                 list_key="starts")
            else:
                from gradcli.render.descend import start_document

                self._text = json_text(start_document(self.run.header, self.run.record, self.run.summary,
                                                      self.notes, self.every)) + "\n"
        return self._text

    def _draw(self, console) -> None:
        if not self.many:
            from gradcli.render.descend import descend_table

            descend_table(self.to_dict())
            return
        from gradcli.render.descend_batch import BasinsTableSink

        table = BasinsTableSink()
        table.start(self.run.header)
        table.write(list(self.records()))
        table.draw(self.run.summary)


class CheckResult(Result):
    """check's result: its report's document (check's text output is drawn by the command line's module:
    the document stands in for it in the table)."""

    def __init__(self, report):
        self.report = report
        self.run = None
        self.command = "check"
        self.warnings = list(report.warnings)
        self.notes = list(report.notes)
        self.failed = bool(report.failed)
        self.summary_text = None
        self._text = None

    @property
    def many(self) -> bool:
        return False

    def to_json(self) -> str:
        if self._text is None:
            from gradcli.library.run import json_text

            self._text = json_text(self.report.to_dict()) + "\n"
        return self._text

    def records(self) -> Iterator[dict]:
        yield self.to_dict()

    def columns(self) -> dict:
        raise AttributeError("check writes no CSV: see to_dict()")

    def _record(self, what: str) -> dict:
        raise AttributeError(f"a check result has no {what}: see to_dict()")

    def _draw(self, console) -> None:
        console.print(self.to_json().rstrip("\n"), markup=False, highlight=False, soft_wrap=True)


class ReportResult(Result):
    """The result of a command whose one document is a report (steps; trace, whose table and dot are drawn from
    its report): the document, its warnings and notes, and the table where the report draws one."""

    def __init__(self, command: str, report, *, document: dict | None = None, draw=None):
        self.report = report
        self.run = None
        self.command = command
        self._document = report.to_dict() if document is None else document
        self.warnings = list(self._document.get("warnings") or [])
        self.notes = list(self._document.get("notes") or [])
        self.failed = bool(getattr(report, "failed", False))
        self.summary_text = None
        self._text = None
        self._draw_table = draw

    @property
    def many(self) -> bool:
        return False

    def to_json(self) -> str:
        if self._text is None:
            from gradcli.library.run import json_text

            self._text = json_text(self._document) + "\n"
        return self._text

    def records(self) -> Iterator[dict]:
        yield self.to_dict()

    def columns(self) -> dict:
        raise AttributeError(f"{self.command} at one point: see to_dict()")

    def _record(self, what: str) -> dict:
        raise AttributeError(f"a {self.command} result has no {what}: see to_dict()")

    def _draw(self, console) -> None:
        if self._draw_table is None:
            console.print(self.to_json(), markup=False, highlight=False, soft_wrap=True, end="")
        else:
            self._draw_table()


class ReducedResult(ReportResult):
    """``grad(..., reduce="sum"|"mean")``: one gradient over all the rows. ``gradient``: {method: {variable:
    value}}, as at one point; ``variance`` the per-example variance, ``largest_norm`` the largest row's norm;
    ``to_dict()`` the CLI's ``--reduce -f json``; the table is the CLI's."""

    def __init__(self, report):
        from gradcli.render.reduce import write_reduction

        super().__init__("grad", report, draw=lambda: write_reduction(report.to_dict(), "table"))

    @property
    def gradient(self) -> dict:
        return self._document["gradient"]

    @property
    def gradients(self) -> list[dict]:
        return [self._document["gradient"]]

    @property
    def variance(self) -> dict:
        return self._document["variance"]

    @property
    def largest_norm(self) -> dict:
        return self._document["largest_norm"]
