"""``gradcli.propagate``'s result: the report's document (``to_dict()`` is ``-f json``) with its values one
level deep: ``mean[method]`` and ``sd[method]`` (several expressions: a list, an expression each),
``covariance[method]`` (several expressions: "linear" J Σ Jᵀ, "monte_carlo"), ``verdict``; many points:
``points``, a result of one point each."""

from __future__ import annotations

from gradcli.api._result import ReportResult


class PropagateResult(ReportResult):
    def __init__(self, report):
        def draw() -> None:
            from gradcli.render.propagate import write

            write(report.to_dict(), "table", one_point=report.one_point)

        super().__init__("propagate", report, draw=draw)
        if not report.one_point:
            self.warnings = list(report.warnings)
        self.notes = list(report.notes)
        self.failed = bool(report.failed)

    @property
    def many(self) -> bool:
        return not self.report.one_point

    def _point(self) -> dict:
        if self.many:
            raise AttributeError("a propagation at many points has a result per point: see points")
        return self._document

    def _per_expression(self, key: str):
        results = self._point()["results"]
        values = [r[key] for r in results]
        if len(values) == 1:
            return values[0]
        methods = values[0].keys()
        return {m: [v[m] for v in values] for m in methods}

    @property
    def mean(self) -> dict:
        """{method: mean} (several expressions: {method: [mean of each]}); methods: linear, linear_tape,
        linear_fd, second_order, monte_carlo."""
        return self._per_expression("mean")

    @property
    def sd(self) -> dict:
        """{method: standard deviation}, as :attr:`mean`."""
        return self._per_expression("sd")

    @property
    def verdict(self):
        """The verdict (several expressions: a list): linear_holds, blame, text, ..."""
        return self._per_expression("verdict")

    @property
    def interval(self):
        return self._per_expression("interval")

    @property
    def monte_carlo(self):
        return self._per_expression("monte_carlo")

    @property
    def covariance(self) -> dict:
        """Several expressions: {"linear": J Σ Jᵀ, "monte_carlo": the sample covariance}."""
        point = self._point()
        if "covariance" not in point:
            raise AttributeError("one expression has no covariance matrix: see sd")
        return point["covariance"]

    def records(self):
        """The ``-f jsonl`` records: a point each."""
        from gradcli.uncertainty.propagation import jsonl_record

        for record in self.points:
            yield jsonl_record(record)

    @property
    def points(self) -> list[dict]:
        """Many points: each point's record (as -f jsonl writes it)."""
        return list(self._document["points"]) if self.many else [self._document]
