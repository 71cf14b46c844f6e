"""The contract of every number grad, hessian and derivative print: it is within its stated error of the true
value, or a warning says so; and a warning that says a method is off, or names a suspect, is right.

The families (cancellations, scales from 1e-300 to 1e200, poles and near-poles, compositions, several
variables; float64 and float32; a batch per expression and single points) run through the API in process,
and every printed derivative is checked against the independent mpmath oracle (tests/oracle.py):

- the stated error of a number: fd's and the complex step's own error estimates (the record's
  ``*_error_estimate``), the tape's tolerance of the error model (gradcli.compute.judge: a few hundred
  roundings at the scale of f, the derivative and the point), the exact column's and grad's value column's
  float64 rounding bound (2^-40 of the value);
- a number outside its stated error is *warned* when a warning of its point names its method and what it is
  (``d(f)/dx``, ``derivative 2``, the Hessian entry ``(x, y)``), else it is *silent*;
- a warning is a *false alarm* when nothing it says is off is off: "M and symbolic disagree" with M within its
  stated error, "A and B disagree" with both within, "cannot be resolved" on a value within 1% of the truth
  and a hundredth of the estimate, "a kink or a jump" at a smooth point ("is not checked" says only that no
  check was possible); a *wrong suspect* is a warning that names (as disagreeing with the exact value, or
  "is suspect") a method whose number is within its stated error.

The figures over these families are in docs/numerics.md ("The contract, measured").
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli
import oracle
from gradcli.compute.judge import entry_tolerance, tape_scale, tolerance
from gradcli.dtypes import MACHINE_EPSILON
from strategies import smooth_expressions

ALL = "symbolic,tape,fd,complex"
NO_EXACT = "tape,fd,complex"

# expression -> points (one variable: numbers; several: tuples in the order of the variables' names)
FAMILIES: dict[str, dict[str, list]] = {
    "cancellation": {
        "(exp(x) - 1)/x": [1e-20, 1e-8, 1e-3, 0.7],
        "(1 - cos(x))/x**2": [2.0 ** -30, 1e-5, 1e-2, 1.3],
        "(x - sin(x))/x**3": [1e-5, 1e-3, 0.5],
        "cosh(x)**2 - sinh(x)**2": [20.0, 3.0, 0.1],
        "sqrt(x**2 + 1) - x": [1e8, 1e3, 2.0],
        "log(1 + x) - x": [1e-10, 1e-4, 0.3],
        "log2(x)*log(2) - log(x)": [3.0, 10.0, 0.5],
    },
    "scales": {
        "x**2": [1e-300, 1e-160, 1e-10, 1.0, 1e10, 1e100, 1e150],
        "exp(-x)*1e200": [400.0, 10.0, -100.0],
        "log(x)": [1e-300, 1e-100, 1e-5, 1e200],
        "cos(x)": [1e22, 1e8, 3.0],
        "sin(x)*1e-200": [1.0, 2.0],
        "x/y": [(1e-200, 1e-200), (1e200, 3.0), (2.0, 3.0)],
    },
    "poles": {
        "1/(x - 1)": [1 + 1e-8, 0.999, 1.5],
        "tan(x)": [1.5707963, 1.57, 0.3],
        "1/x**2": [1e-100, 1e-5, 3.0],
        "log(abs(x - 2))": [2 + 1e-10, 2.5],
        "atan2(y, x)": [(-1.0, 1e-12), (1.0, 1.0)],  # (x, y): beside the cut
    },
    "compositions": {
        "exp(sin(sqrt(1 + x**2)))": [0.7, 3.0, -10.0],
        "log(1 + exp(tanh(x**3)))": [0.5, -2.0, 1.2],
        "sin(cos(tan(x/3)))*exp(-x**2/8)": [0.4, 2.2],
        "sqrt(1 + log(2 + sin(exp(x/4))))": [1.0, 5.0],
        "sigmoid(erf(atan(x)**2))": [0.3, -1.7],
    },
    "several variables": {
        "sqrt(x**2 + y**2)": [(1e200, 1e200), (1e-200, 1e-200), (3.0, 4.0)],
        "log(x**2 + y**2)": [(1e-150, 2e-150), (1.0, 2.0)],
        "x*y*z + exp(x - y)*z**2": [(1.0, 2.0, 3.0), (0.1, -0.2, 5.0)],
        "exp(x)*1e100 + y**2": [(1.0, 1.0), (0.0, 3.0)],
        "x1*x2 + x3*x4 + x5*x6 + x7**2 + sin(x8)": [(1, 2, 3, 4, 5, 6, 7, 8), (-1, 0.5, 2, -3, 1e3, 1e-3, 0.1, 9)],
    },
}
# a subset in float32 (its points rounded to float32 by gradcli; the oracle is asked at that rounding)
FLOAT32 = ["(exp(x) - 1)/x", "(1 - cos(x))/x**2", "cosh(x)**2 - sinh(x)**2", "x**2", "log(x)", "cos(x)",
           "1/(x - 1)", "tan(x)", "exp(sin(sqrt(1 + x**2)))", "sqrt(x**2 + y**2)", "x*y*z + exp(x - y)*z**2"]
# the Hessian over the several-variable families and two more
HESSIAN = [e for e in FAMILIES["several variables"] if not e.startswith("x1")] + ["x/y", "atan2(y, x)"]
# derivatives 1..3 of the one-variable families
DERIVATIVE = ["(exp(x) - 1)/x", "(1 - cos(x))/x**2", "cosh(x)**2 - sinh(x)**2", "x**2", "exp(-x)*1e200",
              "log(x)", "cos(x)", "1/(x - 1)", "tan(x)", "exp(sin(sqrt(1 + x**2)))", "log(1 + exp(tanh(x**3)))"]


def points_of(expression: str) -> list:
    return next(f[expression] for f in FAMILIES.values() if expression in f)


def in_float32(point) -> bool:
    return all(x == 0 or 1.2e-38 < abs(x) < 3e38 for x in (point if isinstance(point, tuple) else (point,)))


def names_of(expression: str) -> list[str]:
    return sorted(oracle.variables(expression))


def columns_of(expression: str, points: list) -> dict:
    names = names_of(expression)
    rows = [p if isinstance(p, tuple) else (p,) for p in points]
    return {v: [float(r[i]) for r in rows] for i, v in enumerate(names)}


# ---------------------------------------------------------------------------------------------
# the tally
# ---------------------------------------------------------------------------------------------
@dataclass
class Tally:
    numbers: int = 0
    warnings: int = 0
    silent: list = field(default_factory=list)  # (run, point, method, subject, got, truth, stated error)
    false_alarms: list = field(default_factory=list)  # (run, point, warning, why)
    wrong_suspects: list = field(default_factory=list)  # (run, point, warning, method)

    def rate(self) -> float:
        return len(self.false_alarms) / max(1, self.warnings)


@dataclass
class Number:
    """One printed derivative: its method, what it is, its value, the truth and its stated error."""

    method: str
    subject: str  # as the warnings name it: "d(f)/dx", "derivative 2", "(x, y)"
    got: float
    truth: float
    stated: float

    @property
    def off(self) -> bool:
        return abs(self.got - self.truth) > self.stated


def oracle_derivative(expression: str, point: dict, orders: dict, digits: int):
    """The mixed partial of ``orders`` at ``point`` by mpmath at ``digits`` digits, in coordinates scaled to
    the point (x = x0 (1 + t)): mpmath's own steps are absolute, which at 1e-150 cross zero and at 1e100
    vanish. tests/oracle.py's translation of the expression, its Undefined for what is not real."""
    f = oracle.translate(expression)
    names = list(point)
    with mpmath.mp.workdps(digits):
        x0 = [mpmath.mpf(point[v]) for v in names]
        size = [abs(x) if x != 0 else mpmath.mpf(1) for x in x0]
        n = tuple(int(orders.get(v, 0)) for v in names)

        def along(*t):
            return f({v: x0[i] + size[i] * t[i] for i, v in enumerate(names)})

        try:
            oracle.oracle_value(expression, point)  # the value must be defined too
            d = mpmath.diff(along, tuple(mpmath.mpf(0) for _ in names), n)
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            if isinstance(exc, oracle.Unsupported):
                raise
            raise oracle.Undefined(str(exc)) from None
        if isinstance(d, mpmath.mpc):
            if d.imag != 0:
                raise oracle.Undefined("not real")
            d = d.real
        for i in range(len(names)):
            d /= size[i] ** n[i]
        return d


@functools.lru_cache(maxsize=None)
def cached_truth(expression: str, at: tuple, orders: tuple):
    point, wanted = dict(at), dict(orders)
    try:
        fine = oracle_derivative(expression, point, wanted, 200)
        coarse = oracle_derivative(expression, point, wanted, 120)
    except oracle.Undefined:
        return None
    with mpmath.mp.workdps(200):
        return float(fine), float(abs(fine - coarse))


@functools.lru_cache(maxsize=None)
def cached_value(expression: str, at: tuple):
    """(f, the oracle's doubt) at ``at`` as the exact value column claims it: 200 digits against 120."""
    f = oracle.translate(expression)
    found = []
    for digits in (200, 120):
        with mpmath.mp.workdps(digits):
            try:
                y = f({v: mpmath.mpf(x) for v, x in at})
            except (ZeroDivisionError, ValueError, OverflowError):
                return None
            if isinstance(y, mpmath.mpc) or not mpmath.isfinite(y):
                return None
            found.append(y)
    with mpmath.mp.workdps(200):
        return float(found[0]), float(abs(found[0] - found[1]))


def truth_at(expression: str, point: dict, dtype: str, orders: dict, *, typed: bool = True):
    """(the true derivative, the oracle's own uncertainty) at the point the methods computed at (``typed``:
    the point's rounding to the dtype; else the float64 point, where the exact column is evaluated), or None
    where it is not a real number: 200 digits, the uncertainty its distance from 120 digits'."""
    at = tuple((v, float(np.float32(x)) if typed and dtype == "float32" else float(x)) for v, x in point.items())
    return cached_truth(expression, at, tuple(sorted(orders.items())))


def rounding_of(got: float, dtype: str) -> float:
    """The printed number's own rounding to the dtype (float32 values are printed to float32's digits)."""
    return MACHINE_EPSILON[dtype] * abs(got) if dtype == "float32" else 0.0


def stated_error(method: str, got: float, truth: float, *, dtype: str, order, estimate, value, x) -> float:
    """What the number claims: fd and complex their estimates, the tape the error model's tolerance, the exact
    column float64's rounding (2^-40 of the value: its stated rounding bound)."""
    if method in ("symbolic", "value"):
        return 2.0 ** -40 * abs(truth) + 4 * float(np.finfo("float64").tiny)
    if method in ("fd", "complex"):
        if estimate is None or not math.isfinite(estimate):
            return math.inf  # no estimate: nothing is claimed (the method's own warning says why)
        return estimate + 4 * MACHINE_EPSILON["float64"] * abs(truth) + rounding_of(got, dtype) \
            + 4 * float(np.finfo(dtype).tiny)
    if order == "entry":
        return float(entry_tolerance("tape", truth, dtype=dtype)) + rounding_of(got, dtype)
    return float(tolerance("tape", dtype=dtype, order=order, scale=tape_scale(value or 0.0, truth, x))) \
        + rounding_of(got, dtype)


def number(expression: str, point: dict, dtype: str, orders: dict, method: str, subject: str, got, estimate,
           *, order, value, x) -> Number | None:
    """One printed derivative, or None where it is not a number or the truth is not a finite real."""
    if got is None:
        return None
    if method == "value":
        found = cached_value(expression, tuple((v, float(x)) for v, x in point.items()))
    else:
        found = truth_at(expression, point, dtype, orders, typed=method != "symbolic")
    if found is None or not math.isfinite(found[0]):
        return None
    truth, doubt = found
    stated = stated_error(method, got, truth, dtype=dtype, order=order, estimate=estimate, value=value, x=x)
    return Number(method, subject, got, truth, stated + doubt)


def numbers_of(command: str, record: dict, expression: str, dtype: str, wrt: list[str]) -> list[Number]:
    """Every finite printed value and derivative of one record, with its truth and stated error."""
    point, out = record["point"], []
    if command == "grad":
        for r in record["results"]:
            out.append(number(r["expression"], point, dtype, {}, "value", "value", r["value"], None, order=0,
                              value=None, x=None))
            for v in wrt:
                for m, g in r["gradient"].items():
                    est = (r.get("fd_error_estimate") if m == "fd" else r.get("complex_error_estimate")) or {}
                    out.append(number(r["expression"], point, dtype, {v: 1}, m, f"d({r['expression']})/d{v}",
                                      g.get(v), est.get(v), order=1, value=r["value"], x=point[v]))
    else:
        out.append(number(expression, point, dtype, {}, "value", "value", record["value"], None, order=0,
                          value=None, x=None))
    if command == "derivative":
        v = wrt[0]
        for m, values in record["derivatives"].items():
            est = record.get("fd_error_estimate") if m == "fd" else record.get("complex_error_estimate")
            for k, got in enumerate(values):
                out.append(number(expression, point, dtype, {v: k + 1}, m, f"derivative {k + 1}", got,
                                  None if est is None else est[k], order=k + 1, value=record["value"], x=point[v]))
    elif command == "hessian":  # its entries (upper triangle) and its gradient
        for m, rows in record["hessian"].items():
            for i, a in enumerate(wrt):
                for j in range(i, len(wrt)):
                    b = wrt[j]
                    est = record["fd_error_estimate"][i][j] if m == "fd" else None
                    out.append(number(expression, point, dtype, {a: 2} if a == b else {a: 1, b: 1}, m,
                                      f"({a}, {b})", rows[i][j], est, order="entry", value=record["value"], x=None))
        for m, g in record["gradient"].items():
            est = record.get("fd_gradient_error_estimate", {}) if m == "fd" else {}
            for v in wrt:
                out.append(number(expression, point, dtype, {v: 1}, m, f"d({expression})/d{v}", g.get(v),
                                  est.get(v), order=1, value=record["value"], x=point[v]))
    return [n for n in out if n is not None]


def mentions(warning: str, method: str) -> bool:
    word = "complex" if method == "complex" else method
    return re.search(rf"\b{word}\b", warning) is not None


def about(warning: str, subject: str) -> bool:
    """Whether the warning is about ``subject`` (a Hessian entry (a, b) is also named (b, a))."""
    if subject.startswith("("):  # a Hessian's warning names its worst entry: it is about the whole matrix
        return "Hessian" in warning
    if subject.startswith("derivative "):
        k = subject.split()[1]
        return re.search(rf"derivative (of order )?{k}\b", warning) is not None or \
            ("d(" in warning and k == "1")
    return subject in warning


DISAGREE_EXACT = re.compile(r"^(tape|fd|complex) and symbolic disagree on (.+?): error")
DISAGREE_CROSS = re.compile(r"^(tape|complex) and (fd|tape) disagree on (.+?): \|")
OUTVOTED = re.compile(r"^complex disagrees with tape and fd on (.+?): ")
SUSPECT = re.compile(r"(tape|fd|the complex step) is suspect")
UNRESOLVED = re.compile(r"^(fd|complex step): (?:the Hessian entry )?(.+?) cannot be resolved")


def subject_of(text: str) -> str:
    """A warning's subject as :class:`Number` names it."""
    m = re.search(r"entry \((\w+), (\w+)\)", text)
    return f"({m.group(1)}, {m.group(2)})" if m else text.strip()


def judge_warning(warning: str, numbers: list[Number]) -> tuple[str | None, list[str]]:
    """(why the warning is a false alarm or None, the methods it wrongly names)."""
    def within(method: str, subject: str) -> bool | None:
        found = [n for n in numbers if n.method == method and n.subject == subject]
        return None if not found else not found[0].off

    if m := DISAGREE_EXACT.match(warning):
        method, subject = m.group(1), subject_of(m.group(2))
        if "within the tolerance of the point's scale" in warning:  # the claim is about the value's digits
            n = [n for n in numbers if n.method == method and n.subject == subject]
            ok = bool(n) and abs(n[0].got - n[0].truth) <= 1e-6 * abs(n[0].truth)
            return ("a value within 1e-6 of the truth called off" if ok else None), [method] if ok else []
        if within(method, subject):
            return f"{method} is within its stated error", [method]
        return None, []
    if m := DISAGREE_CROSS.match(warning):
        a, b, subject = m.group(1), m.group(2), subject_of(m.group(3))
        named = SUSPECT.search(warning)
        wrong = []
        if named:
            who = "complex" if named.group(1) == "the complex step" else named.group(1)
            if within(who, subject):
                wrong = [who]
        if within(a, subject) and within(b, subject):
            return f"{a} and {b} are both within their stated errors", wrong
        return (f"{wrong[0]} is named but within its stated error" if wrong else None), wrong
    if m := OUTVOTED.match(warning):
        subject = subject_of(m.group(1))
        if within("complex", subject):
            return "the complex step is named but within its stated error", ["complex"]
        return None, []
    if m := UNRESOLVED.match(warning):
        method = "fd" if m.group(1) == "fd" else "complex"
        subject = subject_of(m.group(2).split(" at ")[0])
        found = [n for n in numbers if n.method == method and n.subject == subject]
        estimate = re.search(r"estimate ([-+0-9.e]+)", warning)
        if found and estimate:  # the value is right and the estimate far above its error: too pessimistic
            error, truth = abs(found[0].got - found[0].truth), abs(found[0].truth)
            if error <= 1e-2 * truth and float(estimate.group(1)) > 100 * error:
                return "cannot be resolved, yet within 1% of the truth and far inside its estimate", []
        return None, []
    if "at a kink or a jump" in warning:
        return "a kink or a jump at a smooth point", []
    return None, []


def tally(tallied: Tally, run: str, command: str, expression: str, records: list[dict], dtype: str,
          wrt: list[str]) -> None:
    for record in records:
        numbers = numbers_of(command, record, expression, dtype, wrt)
        warnings = record.get("warnings", [])
        tallied.numbers += len(numbers)
        tallied.warnings += len(warnings)
        for n in numbers:
            if n.off and not any(mentions(w, n.method) and about(w, n.subject) for w in warnings):
                tallied.silent.append((run, record["point"], n.method, n.subject, n.got, n.truth, n.stated))
        for w in warnings:
            why, wrong = judge_warning(w, numbers)
            if why:
                tallied.false_alarms.append((run, record["point"], w, why))
            for method in wrong:
                tallied.wrong_suspects.append((run, record["point"], w, method))


def run_line(command: str, expression: str, points: dict, method: str, dtype: str, extra: str = "") -> str:
    """The command line a case is reproduced with."""
    grid = ",".join(f"{v}={x!r}:{x!r}:1" for v, x in points.items())
    return f'gradcli {command} "{expression}" --grid {grid} -m {method} --dtype {dtype}{extra}'


def measure_grad(tallied: Tally, expression: str, points: list, method: str, dtype: str) -> None:
    records, wrt = computed(gradcli.grad(expression, points=columns_of(expression, points), method=method,
                                         dtype=dtype))
    tally(tallied, f"grad -m {method} --dtype {dtype}: {expression}", "grad", expression, records, dtype, wrt)


def computed(result) -> tuple[list[dict], list[str]]:
    """A result's records and the variables its derivatives are taken by, in the record's order."""
    doc = result.to_dict()
    wrt = doc.get("wrt") or [doc["variable"]]
    return list(result.records()), wrt


def measure() -> Tally:
    """Every family through grad (every method; without the exact column), hessian and derivative."""
    tallied = Tally()
    for family in FAMILIES.values():
        for expression, points in family.items():
            for method in (ALL, NO_EXACT, "tape,fd", "fd", "complex"):
                measure_grad(tallied, expression, points, method, "float64")
            if expression in FLOAT32:  # the points float32 holds (gradcli refuses the others)
                measure_grad(tallied, expression, [p for p in points if in_float32(p)], ALL, "float32")
    for expression in HESSIAN:
        columns = columns_of(expression, points_of(expression))
        for method in ("symbolic,tape,fd", "tape,fd"):
            records, wrt = computed(gradcli.hessian(expression, points=columns, method=method))
            tally(tallied, f"hessian -m {method}: {expression}", "hessian", expression, records, "float64", wrt)
    for expression in DERIVATIVE:
        columns = columns_of(expression, points_of(expression))
        for method, order in (("symbolic,tape,fd", 3), ("tape,fd", 3), (ALL, 1)):
            records, wrt = computed(gradcli.derivative(expression, points=columns, method=method, order=order))
            tally(tallied, f"derivative -n {order} -m {method}: {expression}", "derivative", expression, records,
                  "float64", wrt)
    # one point is a batch of one: the same judging, through --at
    for expression, at in (("(x - sin(x))/x**3", {"x": 1e-5}), ("sqrt(x**2 + y**2)", {"x": 1e200, "y": 1e200}),
                           ("cos(x)", {"x": 1e22})):
        for method in (ALL, NO_EXACT):
            records, wrt = computed(gradcli.grad(expression, at=at, method=method))
            tally(tallied, f"grad --at -m {method}: {expression}", "grad", expression, records, "float64", wrt)
    return tallied


@pytest.fixture(scope="module")
def measured() -> Tally:
    return measure()


def describe(cases) -> str:
    return "\n".join(repr(c) for c in cases[:40])


def test_every_printed_number_is_within_its_stated_error_or_warned(measured):
    assert not measured.silent, describe(measured.silent)
    assert measured.numbers > 1000  # the families did run


def test_no_warning_names_a_wrong_suspect(measured):
    assert not measured.wrong_suspects, describe(measured.wrong_suspects)


def test_false_alarms_are_under_five_percent(measured):
    assert measured.warnings > 50
    assert measured.rate() < 0.05, describe(measured.false_alarms)


# ---------------------------------------------------------------------------------------------
# the cases the contract found in the judge, one regression test each
# ---------------------------------------------------------------------------------------------
def warnings_of(result) -> list[str]:
    return result.to_dict()["warnings"]


def test_an_honest_large_fd_estimate_names_no_suspect():
    # (exp(x) - 1)/x at 1e-8 without SymPy: fd 0.5 is right within its estimate 3e-7, the tape is off by 1.1
    (w,) = [w for w in warnings_of(gradcli.grad("(exp(x) - 1)/x", at="x=1e-8", method="tape,fd")) if "disagree" in w]
    assert "suspect" not in w and "either may be wrong" in w
    said = warnings_of(gradcli.derivative("(1 - cos(x))/x**2", at="x=1e-5", order=3, method="tape,fd"))
    assert not any("fd is suspect" in w for w in said) and any("derivative 2" in w and "disagree" in w for w in said)


def test_fd_doubted_by_its_own_diagnostics_is_still_named():
    # a step --eps fixed at a kink: fd's 0.0167 beside the tape's 1
    assert any("fd is suspect" in w for w in
               warnings_of(gradcli.grad("abs(x)", at="x=1e-7", method="tape,fd", eps=6e-6)))


def test_a_tape_fd_cannot_check_is_said_to_be_unchecked():
    # (x - sin(x))/x**3 at 1e-5: tape -0.207, the answer -1.7e-7; fd cannot resolve it (estimate 0.52)
    said = warnings_of(gradcli.grad("(x - sin(x))/x**3", at="x=1e-5", method="tape,fd"))
    assert any(w.startswith("tape: d((x - sin(x))/x**3)/dx = -0.20698 is not checked") for w in said)
    assert not any("suspect" in w for w in said)


def test_fd_beside_a_tape_that_is_not_finite_is_said_to_be_unchecked():
    # sqrt(x**2 + y**2) at 1e-200: x**2 underflows; fd 0.0 +- 11 (the answer 0.7071) beside the tape's inf
    said = warnings_of(gradcli.grad("sqrt(x**2 + y**2)", points={"x": [1e-200], "y": [1e-200]}, method="tape,fd"))
    assert any(w.startswith("fd: d(sqrt(x**2 + y**2))/dx = 0 is not checked: the tape is not finite") for w in said)


def test_the_derivative_cross_check_does_not_grow_with_x():
    # cos(x) at 1e22: fd's step spans ~1e16 periods; 1e3 eps |x| in the tolerance let fd's -1.4e-17 through
    said = warnings_of(gradcli.derivative("cos(x)", at="x=1e22", order=1, method="tape,fd"))
    assert any("tape and fd disagree on derivative 1" in w for w in said)


@pytest.mark.parametrize("expression, variable", [("sqrt(x**2 + y**2)", "x"), ("x/y", "y")])
def test_hessian_judges_the_gradient_it_prints(expression, variable):
    # at 1e-200, 1e-200 fd's gradient was 0.0 beside 0.7071 (and 2.7e-190 beside -1e200), unwarned: now fd
    # says it cannot resolve the first (0.0 +- 11) and gets the second (a stencil clear of y = 0)
    result = gradcli.hessian(expression, at="x=1e-200,y=1e-200")
    said, doc = warnings_of(result), result.to_dict()
    fd, exact = doc["gradient"]["fd"][variable], doc["gradient"]["symbolic"][variable]
    within = abs(fd - exact) <= doc["fd_gradient_error_estimate"][variable]
    assert within or any(w.startswith(f"fd: d({expression})/d{variable} cannot be resolved") for w in said)
    assert not any(w.startswith(f"fd and symbolic disagree on d({expression})/d{variable}") for w in said)
    agree = warnings_of(gradcli.hessian(expression, at="x=3,y=4"))
    assert not any("disagree" in w for w in agree)


# ---------------------------------------------------------------------------------------------
# generated compositions (Hypothesis), at a scale drawn from 1e-300 to 1e200
# ---------------------------------------------------------------------------------------------
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=smooth_expressions(depth=3),
       xs=st.lists(st.floats(-3, 3, allow_nan=False).map(lambda t: round(t, 3)), min_size=2, max_size=2),
       scale=st.sampled_from([1e-300, 1e-30, 1.0, 1e30, 1e200]), dtype=st.sampled_from(["float64", "float32"]))
def test_generated_compositions_keep_the_contract(expression, xs, scale, dtype):
    if dtype == "float32":  # scales float32 holds
        scale = min(max(scale, 1e-30), 1e30)
    scaled = f"{scale!r}*({expression})"
    names = names_of(scaled)
    if not names:
        return
    columns = {v: [xs[0] + 0.25 * i, xs[1] - 0.5 * i] for i, v in enumerate(names)}
    tallied = Tally()
    for method in (ALL, NO_EXACT):
        records, wrt = computed(gradcli.grad(scaled, points=columns, method=method, dtype=dtype))
        tally(tallied, f"grad -m {method} --dtype {dtype}: {scaled}", "grad", scaled, records, dtype, wrt)
    assert not tallied.silent, describe(tallied.silent)
    assert not tallied.wrong_suspects, describe(tallied.wrong_suspects)


def test_the_oracle_agrees_with_a_closed_form():
    """The checker itself: d/dx (exp(x) - 1)/x at 1e-20 is 1/2 to 20 digits, as the series says."""
    truth, doubt = truth_at("(exp(x) - 1)/x", {"x": 1e-20}, "float64", {"x": 1})
    assert truth == pytest.approx(0.5, rel=1e-15) and doubt < 1e-30
    n = Number("fd", "d(f)/dx", 0.5 + 1e-9, 0.5, 1e-10)
    assert n.off and judge_warning("fd and symbolic disagree on d(f)/dx: error 1e-09 is more than x", [n]) \
        == (None, [])
    assert judge_warning("tape and fd disagree on d(f)/dx: |tape - fd| = 1 is more than fd's estimate; "
                         "fd is suspect (its own error estimate is large)",
                         [n, Number("tape", "d(f)/dx", 0.5, 0.5, 1e-13)])[1] == []
    right = Number("fd", "d(f)/dx", 0.5, 0.5, 1e-10)
    assert judge_warning("fd and symbolic disagree on d(f)/dx: error 1e-09 is more than x", [right])[1] == ["fd"]
