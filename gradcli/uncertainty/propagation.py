"""A propagation, point by point: the gradient (exact, tape, fd) and the exact Hessian from gradcli's own engines
(the library's GradRequest and HessianRequest: nothing re-derived here), Monte Carlo through the vectorised
evaluator, the interval enclosure, and the verdict; the report whose ``to_dict()`` is ``-f json``."""

from __future__ import annotations

from dataclasses import dataclass, field

from gradcli.uncertainty import moments
from gradcli.uncertainty.interval_tree import box, enclose
from gradcli.uncertainty.monte_carlo import sample_covariance, sample_values, stats
from gradcli.uncertainty.verdict import judge

LINEAR_METHODS = {"symbolic": "linear", "tape": "linear_tape", "fd": "linear_fd"}
METHOD_KEYS = ("linear", "linear_tape", "linear_fd", "second_order", "monte_carlo")


@dataclass
class Settings:
    distribution: str
    samples: int
    seed: int
    k: float
    symbolic_timeout: float


@dataclass
class PropagateReport:
    """The whole run: ``header`` (run-level keys), ``records`` (a point each), ``warnings``, ``notes``;
    ``values``: the one point's Monte Carlo values (for --plot), ``failed``: the CLI's exit 1."""

    one_point: bool
    header: dict
    records: list[dict]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    values: object = None

    def to_dict(self) -> dict:
        """The ``-f json`` document."""
        if self.one_point:
            return {**self.header, **self.records[0], "notes": list(self.notes)}
        return {**self.header, "points": self.records, "warnings": list(self.warnings), "notes": list(self.notes)}


HEADER_KEYS = ("command", "expressions", "inputs", "distribution", "samples", "seed", "k", "notes")


def jsonl_record(record: dict) -> dict:
    """A point's ``-f jsonl`` record: its keys without the run's (at one point the document holds both)."""
    return {k: v for k, v in record.items() if k not in HEADER_KEYS}


def run_propagation(expressions, inputs: list, settings: Settings, *, one_point: bool) -> PropagateReport:
    """``expressions`` (gradcli Expressions) at each of ``inputs`` (gradcli.uncertainty.points.InputPoint)."""
    names = inputs[0].names if inputs else []
    header = {"command": "propagate", "expressions": [e.text for e in expressions], "inputs": names,
              "distribution": settings.distribution, "samples": settings.samples, "seed": settings.seed,
              "k": settings.k}
    report = PropagateReport(one_point, header, [])
    if not inputs:
        report.notes.append("no points were read: --points has no rows")
        return report
    gradients, hessians = _derivatives(expressions, inputs, settings, report, one_point)
    for i, point in enumerate(inputs):
        record, values = _point_record(expressions, point, gradients[i], [h[i] for h in hessians], settings)
        report.records.append(record)
        for warning in record["warnings"]:
            report.warnings.append(warning if one_point else f"{warning} (line {point.line})")
        report.failed = report.failed or record["status"] == "undefined"
        if one_point:
            report.values = values
    return report


def _derivatives(expressions, inputs, settings: Settings, report: PropagateReport, one_point: bool):
    """The gradient records (a point each: its results, an expression each) and, per expression, the Hessian
    records, from grad's and hessian's own requests."""
    from gradcli.library.requests import GradRequest, HessianRequest, PointColumns

    names = inputs[0].names
    where: dict = {"at": [inputs[0].at_text]} if one_point and inputs[0].at_text else {}
    if not one_point:
        where = {"points": PointColumns({n: [p.means[j] for p in inputs] for j, n in enumerate(names)})}
    wrt = ",".join(names) if names else None
    texts = [e.text for e in expressions]
    grad = GradRequest(expressions=texts, wrt=wrt, symbolic_timeout=settings.symbolic_timeout, **where).run()
    gradients = [grad.record] if one_point else grad.records
    hessians = []
    for text in texts:
        h = HessianRequest(expression=text, wrt=wrt, method="symbolic,tape",
                           symbolic_timeout=settings.symbolic_timeout, **where).run()
        hessians.append([h.record] if one_point else h.records)
        report.notes += [n for n in h.notes if n not in report.notes and not _about_unused(n)]
    report.notes += [n for n in grad.notes if n not in report.notes and not _about_unused(n)]
    return gradients, hessians


def _about_unused(note: str) -> bool:
    """grad's and hessian's note on an input an expression does not use: each expression's own, not the
    propagation's (an input of one expression is unconnected in another; its share is then 0)."""
    return "not in the expression" in note or "--batch-size" in note


def _point_record(expressions, point, grad_record: dict, hessian_records: list[dict], settings: Settings):
    names = point.names
    values = sample_values([e.tree for e in expressions], names, point.means, point.lower, samples=settings.samples,
                           seed=settings.seed, distribution=settings.distribution)
    the_box = box(dict(zip(names, point.means)), dict(zip(names, point.sds)), settings.k)
    results, warnings, jacobian = [], [], []
    for k, expr in enumerate(expressions):
        result = _expression_result(expr, point, grad_record["results"][k], hessian_records[k], values[k],
                                    the_box, settings)
        results.append(result)
        warnings += [f"{expr.text}: {w}" for w in result.pop("_warnings")]
        _, _, gradients = _linear(grad_record["results"][k], names, point.lower)
        jacobian.append(gradients.get("symbolic", gradients.get("tape")))
    record: dict = {"point": dict(zip(names, point.means)), "sd": dict(zip(names, point.sds))}
    if point.line is not None:
        record["line"] = point.line
        record["fields"] = point.fields
    record["input_covariance"] = point.covariance
    record["results"] = results
    if len(expressions) > 1:
        record["covariance"] = {
            "linear": None if any(j is None for j in jacobian) else moments.linear_covariance(jacobian, point.lower),
            "monte_carlo": sample_covariance(values)}
    undefined = any((r["sd"]["linear"] is None and r["sd"]["linear_tape"] is None) or r["sd"]["monte_carlo"] is None
                    for r in results)
    record["status"] = "undefined" if undefined else "warning" if warnings else "ok"
    record["warnings"] = warnings
    return record, values


def _linear(grad_result: dict, names: list[str], lower):
    """Each method's linear mean and sd, and its gradient (a list in the inputs' order; absent where any
    component is missing or not finite)."""
    value = grad_result.get("value")
    mean: dict = {}
    sd: dict = {}
    gradients: dict = {}
    for method, key in LINEAR_METHODS.items():
        g = grad_result["gradient"].get(method)
        ok = g is not None and value is not None and all(g.get(n) is not None for n in names)
        if ok:
            gradients[method] = [g[n] for n in names]
        mean[key] = value if ok else None
        sd[key] = moments.linear_sd(gradients[method], lower) if ok else None
    return mean, sd, gradients


def _expression_result(expr, point, grad_result: dict, hessian_record: dict, values, the_box, settings) -> dict:
    names = point.names
    value = grad_result.get("value")
    mean, sd, gradients = _linear(grad_result, names, point.lower)
    gradient, reference = gradients.get("symbolic"), "linear"
    warnings = []
    if gradient is None and gradients.get("tape") is not None:
        gradient, reference = gradients["tape"], "linear_tape"
        warnings.append("the exact gradient could not be computed: the tape's is the linear answer the verdict "
                        "judges, and the second order's gradient")
    hessian, source = _hessian(hessian_record)
    second = None
    if gradient is not None and hessian is not None and value is not None:
        second = moments.second_order(value, gradient, hessian, point.lower, settings.distribution)
        if source != "symbolic":
            warnings.append("the second order uses the tape's Hessian (the exact one could not be computed)")
    mean["second_order"] = None if second is None else second.mean
    sd["second_order"] = None if second is None else second.sd
    mc = stats(values)
    mean["monte_carlo"], sd["monte_carlo"] = mc.mean, mc.sd
    if mc.finite < mc.samples:
        warnings.append(f"{mc.samples - mc.finite:,} of {mc.samples:,} Monte Carlo samples have no finite value (the "
                        f"spread reaches a pole or leaves the domain): its figures are those of the other "
                        f"{mc.finite:,}")
    warnings += _disagreements(sd)
    lin_shares = moments.linear_shares(gradient, point.lower) if gradient is not None else [0.0] * len(names)
    verdict = judge(names, point.sds, mean[reference], sd[reference], second, lin_shares, mc)
    if not verdict.linear_holds:
        warnings.append(verdict.text)
    enclosure = enclose(expr.tree, the_box)
    return {
        "expression": expr.text, "value": value, "mean": mean, "sd": sd,
        "second_order": None if second is None else {"mean_shift": second.mean_shift,
                                                     "variance_term": second.variance_term, "hessian": source},
        "monte_carlo": mc.to_dict(),
        "interval": {"k": settings.k, **enclosure.to_dict()},
        "shares": {n: {"linear": lin_shares[i], "second_order": None if second is None else second.shares[i]}
                   for i, n in enumerate(names)},
        "verdict": verdict.to_dict(),
        "_warnings": warnings,
    }


# how far the tape's and fd's linear sd may stray from the exact one, relatively: the tape rounds, fd's
# gradient is good to ~1e-10 relatively (its own error estimate is in grad's output)
AGREE = {"linear_tape": 1e-12, "linear_fd": 1e-6}


def _disagreements(sd: dict) -> list[str]:
    """A warning for the tape's or fd's linear sd beyond AGREE of the exact one (they should agree)."""
    exact = sd.get("linear")
    out = []
    for key, tolerance in AGREE.items():
        other = sd.get(key)
        if exact is None or other is None:
            continue
        if abs(other - exact) > tolerance * max(abs(exact), 1e-300) and abs(other - exact) > 1e-300:
            out.append(f"the linear sd from {key.removeprefix('linear_')}'s gradient, {other:.6g}, differs from the "
                       f"exact one, {exact:.6g}: that gradient is suspect here")
    return out


def _hessian(record: dict):
    """The exact Hessian, or the tape's where SymPy gave none: (matrix, its method) or (None, None)."""
    for method in ("symbolic", "tape"):
        h = record.get("hessian", {}).get(method)
        if h is not None and all(v is not None for row in h for v in row):
            return h, method
    return None, None
