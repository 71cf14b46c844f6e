"""``gradcli.implicit``'s result: the report's document (``to_dict()`` is ``-f json``) with its values one level
deep: ``derivatives[method]`` = {variable: [order 1, order 2, ...]} (None where a method gives none)."""

from __future__ import annotations

from gradcli.api._result import ReportResult


class ImplicitResult(ReportResult):
    def __init__(self, report):
        def draw() -> None:
            from gradcli.render.implicit import write

            write(report.to_dict(), "table")

        super().__init__("implicit", report, draw=draw)

    @property
    def derivatives(self) -> dict:
        rows = self._document["derivatives"]
        return {m: {x: [r[m] for r in rows if r["variable"] == x] for x in self._document["independent"]}
                for m in self._document["methods"]}

    @property
    def residual(self) -> float:
        return self._document["residual"]
