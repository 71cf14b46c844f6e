"""``gradcli propagate`` (and ``gradcli eval`` with a ± in --at, which hands it here)."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (OutputPathOption, PointsOption, RuleOption, StrictOption, SymbolicTimeoutOption,
                                     export_path, finish, handle_errors, output_to)
from gradcli.library.propagate_request import K_RANGE, PROPAGATE_SAMPLES_RANGE, PropagateRequest


class PropagateFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


class Distribution(str, enum.Enum):
    normal = "normal"
    uniform = "uniform"


def plot_path(value: str | None) -> str | None:
    if value is None:
        return None
    export_path(value)
    from gradcli.render.propagate_plot import plot_problem

    problem = plot_problem(value)
    if problem:
        raise typer.BadParameter(problem)
    return value


@handle_errors
def propagate(
    expressions: Annotated[Optional[list[str]], typer.Argument(
        metavar="EXPR...", help="One or more expressions, e.g. \"x*y\".", show_default=False)] = None,
    *,
    at: Annotated[Optional[list[str]], typer.Option(
        "--at", metavar="X=V±SD,...", help="The inputs with their standard deviations, e.g. \"x=2±0.1,y=3+-0.2\" "
        "(repeatable).  [required unless --points]", show_default=False)] = None,
    points: PointsOption = None,
    correlation: Annotated[Optional[list[str]], typer.Option(
        "--correlation", metavar="X,Y=R", help="The correlation of two inputs, e.g. x,y=0.5 (repeatable).",
        show_default=False)] = None,
    covariance: Annotated[Optional[str], typer.Option(
        "--covariance", metavar="FILE", help="The inputs' covariance matrix: a CSV under a header of names.",
        show_default=False)] = None,
    distribution: Annotated[Distribution, typer.Option(
        "--distribution", case_sensitive=False, metavar="KIND",
        help="Monte Carlo's inputs: normal, or uniform of the same sd.")
    ] = Distribution(PropagateRequest.distribution),
    samples: Annotated[int, typer.Option(
        "--samples", metavar="N", min=PROPAGATE_SAMPLES_RANGE[0], max=PROPAGATE_SAMPLES_RANGE[1],
        help="Monte Carlo samples.")] = PropagateRequest.samples,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Monte Carlo's seed.")] = PropagateRequest.seed,
    k: Annotated[float, typer.Option(
        "--k", metavar="K", min=K_RANGE[0], max=K_RANGE[1], help="The interval's box: each input ±K sd.")
    ] = PropagateRequest.k,
    output: Annotated[PropagateFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT", help="table, json, jsonl (per point) or csv.")
    ] = PropagateFormat.table,
    output_path: OutputPathOption = None,
    plot: Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE.svg", callback=plot_path, show_default=False,
        help="Also draw the Monte Carlo histogram with the linear and second-order normals.")] = None,
    symbolic_timeout: SymbolicTimeoutOption = PropagateRequest.symbolic_timeout,
    rule: RuleOption = None,
    strict: StrictOption = PropagateRequest.strict,
) -> None:
    """Propagate input uncertainties: linear, second order, Monte Carlo and an interval, with a verdict.

    Linear from the exact gradient (and the tape's, fd's), second order from the exact Hessian, Monte Carlo
    with its standard errors, an interval over ±K sd. --points: a row each (x_sd or x_unc columns).

    Examples:

    \b
      gradcli propagate "x**2" --at "x=0±10"
      gradcli propagate "x*y" --at "x=2±0.1,y=3±0.2" --correlation x,y=0.5
      gradcli propagate "x/y" "x*y" --at "x=2+-0.1,y=3+-0.2" -f json
    """
    request = PropagateRequest(expressions=expressions or [], at=at, points=points, correlation=correlation,
                               covariance=covariance, distribution=distribution.value, samples=samples, seed=seed,
                               k=k, symbolic_timeout=symbolic_timeout, rule=rule, strict=strict)
    show_propagation(request, output.value, output_path=output_path, plot=plot)


def eval_propagation(expression: str, *, at, points, grid, dtype: str, output: str, output_path: str | None,
                     strict: bool) -> None:
    """``gradcli eval EXPR --at "x=2±0.1"``: propagate's request with its defaults, its table (eval's plain and
    table formats), JSON, JSON Lines or CSV."""
    from gradcli.errors import UsageError

    if grid is not None or dtype != "float64" or output in ("latex", "parquet"):
        what = "--grid" if grid is not None else f"--dtype {dtype}" if dtype != "float64" else f"-f {output}"
        raise UsageError(f"eval with an uncertainty in --at propagates it (as gradcli propagate): {what} is not "
                         f"available there")
    request = PropagateRequest(expressions=[expression], at=at, points=points, strict=strict)
    show_propagation(request, "table" if output == "plain" else output, output_path=output_path)


def show_propagation(request: PropagateRequest, output: str, *, output_path: str | None = None,
                     plot: str | None = None) -> None:
    """Run ``request`` and write it in ``output``; its warnings and notes on stderr, the plot; exit 1 when
    something could not be computed (``strict``: on any warning)."""
    from gradcli.render.common import print_diagnostics
    from gradcli.render.propagate import write

    if plot is not None and not request.one_point:
        from gradcli.errors import UsageError

        raise UsageError("--plot draws one point's Monte Carlo histogram: give --at, not --points")
    report = request.run()
    doc = report.to_dict()
    with output_to(output_path, output):
        write(doc, output, one_point=report.one_point)
    print_diagnostics(report.warnings, report.notes)
    if plot is not None:
        from gradcli.output_files import writing_whole
        from gradcli.render.propagate_plot import plot_svg

        with writing_whole(plot, binary=False, complete=lambda exc: exc is None) as f:
            f.write(plot_svg(doc, report.values))
    finish(report.failed)
