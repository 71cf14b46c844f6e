"""Running a command's core for the API as the CLI runs it: one point as a batch of one (its document and
table from gradcli.render.detail), many points through the CLI's own -f json writer, with what the CLI
would print on stderr collected instead of printed."""

from __future__ import annotations

import contextlib
import io

from gradcli.api._inputs import at_texts, points_spec
from gradcli.api._result import Result, quiet


def one_point(command: str, report, document: str, render, captured, records=None) -> Result:
    out, err = captured
    return Result(command, document + "\n", warnings=report.warnings, notes=report.notes, failed=report.failed,
                  render=render, captured=out.getvalue() + err.getvalue(), records=records)


def batch_of_one(command: str, core, *, at, batch_size: int) -> Result:
    """One point as the CLI computes it: the batch core on the --at point, its document and its table (the
    command's view of that document) from gradcli.render.detail."""
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.batch.points import point_chunks
    from gradcli.render.batch import detail_view
    from gradcli.render.common import to_json
    from gradcli.render.detail import DetailSink

    sink = DetailSink()
    with quiet() as captured:
        computation = core()
        chunks = point_chunks(computation, points=None, grid=None, at=at_texts(at), batch_size=batch_size)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            failed = run_batch(computation, chunks, sink).failed
    document = sink.document
    record = {k: document[k] for k in sink.records[0]}
    out, err = captured
    return Result(command, to_json(document) + "\n", warnings=document["warnings"], notes=document["notes"],
                  failed=failed, render=lambda: detail_view(command)(document),
                  captured=out.getvalue() + err.getvalue(), records=lambda: [record])


def many_points(command: str, core, *, points, grid, at, batch_size: int) -> Result:
    """grad, hessian, derivative at many points (no points nor grid: a batch of the --at point): as
    gradcli.commands.common.run_many does it (a module that imports Typer), with the CLI's -f json writer."""
    spec, stdin_text = points_spec(points)

    def run(sink):
        from gradcli.compute.batch.engine import run_batch
        from gradcli.compute.batch.points import point_chunks

        computation = core()
        chunks = point_chunks(computation, points=spec, grid=grid, at=at_texts(at), batch_size=batch_size)
        sink.sinks()
        return run_batch(computation, chunks, sink).failed

    return collect(command, run, stdin_text, list_key="points")


class Document:
    """The sink run_batch/run_starts write to: the CLI's own ``-f json`` writer, into a string, and what they
    hand it at the end (the warnings, notes and summary the CLI prints on stderr)."""

    def __init__(self, command: str):
        self.command = command
        self.text = io.StringIO()
        self.table_sink = None

    def sinks(self, variables: list[str] | None = None) -> None:
        """Make the json writer (and the maker of the table's), once the variables are known (descend)."""
        from gradcli.render.batch import sink_for

        self.make = lambda output: sink_for(self.command, output)
        with contextlib.redirect_stdout(self.text):  # the writer binds sys.stdout when made
            self.json = self.make("json")

    def start(self, header: dict) -> None:
        self.header = header
        self.json.start(header)

    def write(self, batch) -> None:
        self.json.write(batch)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.finished = (summary, summary_text, list(warnings), list(notes))
        with contextlib.redirect_stderr(io.StringIO()):  # its stderr lines: these warnings, notes, summary
            self.json.finish(summary, summary_text, warnings, notes)

    def draw_table(self, records: list[dict]) -> None:
        """The CLI's ``-f table`` for these records (printed on sys.stdout)."""
        table = self.make("table")
        table.start(self.header)
        table.write(records)
        table.finish(*self.finished)


def collect(command: str, run, stdin_text: str | None, *, list_key: str) -> Result:
    document = Document(command)
    with quiet(stdin_text) as (out, err):
        failed = run(document)
    _, summary_text, warnings, notes = document.finished
    text = document.text.getvalue()

    def render() -> None:
        import json

        document.draw_table(json.loads(text)[list_key])

    return Result(command, text, warnings=warnings, notes=notes, failed=failed, render=render, list_key=list_key,
                  summary_text=summary_text, captured=out.getvalue() + err.getvalue())
