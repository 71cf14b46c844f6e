"""``eval``'s writers beside the batch ones (gradcli.render.batch): ``plain``, the values alone, and the
``--at`` point's own document (``-f json``, ``-f latex``, ``plain``: the number alone).

``plain`` at many points writes one value per line, in the order of the points; an undefined value is an
empty line (its warning on stderr), so that line n is always point n (``paste``-able beside the input).
At the --at point alone an undefined value prints nothing, as eval always did.
"""

from __future__ import annotations

import sys

from gradcli.render.batch import refuse_latex_for_many, sink_for
from gradcli.render.sinks import JsonlSink, records_of
from gradcli.render.common import print_diagnostics, to_json


class PlainSink(JsonlSink):
    """Many points: a value a line (empty where undefined), flushed per chunk."""

    takes_lines = False  # made from the records

    def lines(self, batch) -> list[str]:
        return ["" if r["value"] is None else repr(r["value"]) for r in records_of(batch)]


class OnePointSink:
    """The --at point alone as eval has always written it: the document (``json``), its tabular (``latex``)
    or the number (``plain``); then its warnings and notes on stderr, with no summary line."""

    def __init__(self, output: str):
        self.output = output
        self.records: list[dict] = []

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        self.records += records_of(batch)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        from gradcli.compute.batch.value import one_point_document

        (record,) = self.records
        self.notes = list(notes)
        self.document = document = one_point_document(self.header, record)
        if self.output == "json":
            print(to_json(document))
        elif self.output == "latex":
            from gradcli.render.latex import eval_latex

            print(eval_latex(document), end="")
        elif document["value"] is not None:
            print(repr(document["value"]))
        sys.stdout.flush()  # a write failure shows now, before the diagnostics and the exit code
        print_diagnostics(record["warnings"], notes)


def value_sink(output: str, *, one_point: bool, file=None):
    """eval's writer for ``output`` (plain, json, jsonl, csv, parquet into ``file``, table, latex);
    ``one_point``: the --at point alone, whose plain, json and latex are its own document (jsonl, csv,
    parquet and table: the batch's, of one)."""
    if one_point and output in ("plain", "json", "latex"):
        return OnePointSink(output)
    if output == "latex":
        refuse_latex_for_many(many=True)
    if output == "plain":
        return PlainSink()
    return sink_for("eval", output, file=file)
