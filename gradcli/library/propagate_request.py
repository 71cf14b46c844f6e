"""``gradcli propagate EXPR...``'s Request: every option with its default (written here once), checked once, as
gradcli.library.requests does for the other commands; :meth:`PropagateRequest.run` computes it
(gradcli.uncertainty.propagation) and returns the report, whose ``to_dict()`` is the ``-f json`` document.

Imported by ``gradcli --help`` (the command's defaults): the standard library only, at the top.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradcli.errors import UsageError
from gradcli.library.requests import (SEED, SYMBOLIC_TIMEOUT, SYMBOLIC_TIMEOUTS, PointColumns, check_at, check_number,
                                      check_points, check_text, check_texts)

PROPAGATE_SAMPLES = 100_000
PROPAGATE_SAMPLES_RANGE = (2, 10_000_000)
K = 3.0
K_RANGE = (0.0, 100.0)
DISTRIBUTION = "normal"
# each row of --points is a propagation of its own (a Monte Carlo run, a gradient and a Hessian)
MAX_ROWS = 10_000
# Monte Carlo keeps 8 bytes a sample and expression (the quantiles need them all): 400 MB at most
MAX_VALUES = 50_000_000
# samples x expressions x rows: about 20 minutes of evaluation on the bench machine (2 cores)
MAX_EVALUATIONS = 2_000_000_000


@dataclass(kw_only=True)
class PropagateRequest:
    """``gradcli propagate EXPR... --at "x=2±0.1,y=3±0.2"``: the mean and standard deviation of each expression
    four ways (linear from the exact gradient, the tape's and fd's; second order from the exact Hessian; Monte
    Carlo; an interval enclosure over ±k sd), with a verdict on the linear answer. ``at``: the point, values
    with their standard deviations ("x=2±0.1", "x=2+-0.1", {"x": (2, 0.1)}); ``points``: a CSV/JSON Lines
    path or columns, a row per propagation (columns ``x_sd`` or ``x_unc``: x's sd on that row);
    ``correlation``: ["x,y=0.5", ...]; ``covariance``: a CSV file, a matrix under a header of names."""

    command = "propagate"

    expressions: list[str]
    at: list[str] | None = None
    points: str | PointColumns | None = None
    correlation: list[str] | None = None
    covariance: str | None = None
    distribution: str = DISTRIBUTION
    samples: int = PROPAGATE_SAMPLES
    seed: int = SEED
    k: float = K
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    rule: list[str] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        from gradcli.library.requests import check_flag

        if isinstance(self.expressions, str):
            self.expressions = [self.expressions]
        self.expressions = check_texts("EXPR...", self.expressions) or []
        if not self.expressions:
            raise UsageError("give at least one expression, e.g. gradcli propagate \"x**2\" --at \"x=2±0.1\"")
        self.at = check_at(self.at)
        self.points = check_points(self.points)
        self.correlation = check_texts("--correlation", self.correlation)
        self.covariance = check_text("--covariance", self.covariance)
        self.distribution = check_text("--distribution", self.distribution, optional=False).lower()
        self.samples = check_number("--samples", self.samples, int, PROPAGATE_SAMPLES_RANGE)
        self.seed = check_number("--seed", self.seed, int)
        self.k = check_number("--k", self.k, float, K_RANGE)
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)
        from gradcli.uncertainty.inputs import check_distribution, parse_correlations

        self.distribution = check_distribution(self.distribution)
        parse_correlations(self.correlation)  # refused now, as typed, before anything is computed
        if self.samples * len(self.expressions) > MAX_VALUES:
            raise UsageError(f"--samples {self.samples:,} of {len(self.expressions)} expressions keeps "
                             f"{self.samples * len(self.expressions):,} values; the limit is {MAX_VALUES:,} "
                             f"(take fewer samples)")

    @property
    def one_point(self) -> bool:
        return self.points is None

    def run(self):
        """The propagation's report (gradcli.uncertainty.propagation.PropagateReport), the request's rules in
        force for the call (checked first; grad's and hessian's requests inside run under them)."""
        from gradcli.expression.rules import rules_in_force

        with rules_in_force(self.rule, time_limit=self.symbolic_timeout) as checked:
            report = self._run()
            report.notes[:0] = [n for n in checked.notes if n not in report.notes]
        return report

    def _run(self):
        from gradcli.expression import parse
        from gradcli.uncertainty.inputs import Correlations, parse_correlations, read_covariance_file
        from gradcli.uncertainty.points import many_points, one_point
        from gradcli.uncertainty.propagation import Settings, run_propagation

        expressions = [parse(e) for e in self.expressions]
        variables = list(dict.fromkeys(v for e in expressions for v in e.variables))
        if not variables:
            raise UsageError("propagate: the expressions have no variables, so no uncertainty to propagate (give "
                             "an expression of the inputs, e.g. \"x**2\" --at \"x=2±0.1\")")
        file_names = file_matrix = None
        if self.covariance is not None:
            file_names, file_matrix = read_covariance_file(self.covariance)
        correlations = Correlations(parse_correlations(self.correlation), file_names, file_matrix)
        if self.one_point:
            inputs = [one_point(self.at, variables, correlations)]
        else:
            inputs = many_points(self.points, self.at, variables, correlations, MAX_ROWS)
            work = len(inputs) * self.samples * len(expressions)
            if work > MAX_EVALUATIONS:
                raise UsageError(f"{len(inputs):,} rows x --samples {self.samples:,} x {len(expressions)} "
                                 f"expression(s) is {work:,} evaluations; the limit is {MAX_EVALUATIONS:,} (take "
                                 f"fewer samples, e.g. --samples 10000)")
        unused = [n for n in (inputs[0].names if inputs else []) if n not in variables]
        settings = Settings(self.distribution, self.samples, self.seed, self.k, self.symbolic_timeout)
        report = run_propagation(expressions, inputs, settings, one_point=self.one_point)
        if unused:
            report.notes.append(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} in no expression: "
                                f"{'its' if len(unused) == 1 else 'their'} spread changes nothing (share 0)")
        report.failed = report.failed or (self.strict and bool(report.warnings))
        return report


__all__ = ["PropagateRequest"]
