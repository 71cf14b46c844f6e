"""One point (``--at``) as a person or a script reads it: the batch core computes it as a batch of one, and
this writer turns the run's header, that point's record and the run's notes into one document.

``-f json`` prints the document: the header's run-level keys (command, expressions, dtype, methods, the fd
scheme, SymPy's formulas), then the record's keys exactly as ``--points`` writes them, then the notes. The
table is a view of the same document (each command's ``detail`` renderer), so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable

from gradcli.library.run import Collect, point_document
from gradcli.render.common import print_diagnostics, to_json


class DetailSink(Collect):
    """The writer of a batch of one: ``view`` (a renderer of the document) for the table, else JSON; the
    header and the one record kept as the library's sink keeps them."""

    def __init__(self, view: Callable[[dict], None] | None = None):
        super().__init__()
        self.view = view

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        import sys

        (record,) = self.records  # one point, one record
        document = self.document = point_document(self.header, record, notes)
        if self.view is None:
            print(to_json(document))
        else:
            self.view(document)
        sys.stdout.flush()  # a write failure shows now, before the diagnostics and the exit code
        print_diagnostics(record["warnings"], notes)
