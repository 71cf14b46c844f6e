"""Custom rules: ``--rule "NAME(u, ...) = BODY; d/du = FORMULA; ..."`` defines a function with its own derivative.

The rule is read by gradcli's own parser (the body and each formula are expressions over the parameters;
nothing is evaluated as Python). It becomes a :class:`gradcli.expression.tree.Rule`, and each call of NAME a
:class:`~gradcli.expression.tree.RuleCall` that carries the rule, so every backend knows it: the value is the
body's everywhere; the tape differentiates the call by the rule (``tf.custom_gradient``, in
:mod:`gradcli.expression.evaluate`); SymPy's column by a SymPy function whose ``fdiff`` is the formula
(:func:`gradcli.methods.symbolic.rule_function`); fd and the complex step differentiate the body's value.

A rule is checked before it is used (:func:`check_rules`), and a wrong one is refused with a counterexample
(exit 1):

- exactly: each FORMULA against SymPy's derivative of BODY, ``simplify(difference) == 0``;
- where ``simplify`` cannot decide, at 30 digits at exact (rational) points: random ones at four scales and
  the features of both formulas (switch points of where/min/max/abs/relu/clip, kinks, the centre of a narrow
  band), where the body's derivative is the limit from both sides; a rule compared at no point is refused;
- to second order: the tape's second derivatives of the call (the formulas differentiated by the tape)
  against SymPy's second derivatives of BODY. A formula can have the right values and still not be the
  derivative the tape differentiates further (``d/dx = stop_gradient(2*x)`` for ``x**2``).

A right rule may still change what the tape computes (that is what rules are for: ``log(1 + exp(x))``
overflows in float32 at x = 100, its rule ``1 - 1/(1 + exp(x))`` does not): :func:`numerics_notes` says so at
the command's point, with the tape's value with the rule and without it.
"""

from __future__ import annotations

import contextlib

import math
import random
import re
from dataclasses import dataclass, field

from gradcli.errors import ComputeError, ParseError, UsageError
from gradcli.expression.functions import ARITIES
from gradcli.expression.parser import check_variable_name, parse
from gradcli.limits import COMMAND_LINE_EXPRESSION_MAX_CHARS
from gradcli.expression.tree import (CONSTANTS, Call, children, Node, Rule, RuleCall, Var, active_rules, inline_rules,
                                     set_active_rules, walk)

# Random points per check, drawn (reproducibly) at three scales: where a rule is most often wrong, beyond,
# and where float64 overflow starts to matter.
SAMPLES = 32
SCALES = (1.0, 4.0, 30.0, 300.0)
SEED = 20240607
# float64 values of formula and derivative this far apart (relative, at least 1) are re-checked at 30 digits
FLOAT_GAP = 1e-9
# ... and a counterexample when they are this far apart there
EXACT_GAP = 1e-20
# The tape's second derivative of a call against the exact one: float64 differentiation of the formula
TAPE_GAP = 1e-7
MAX_RULES = 16
# The most nodes a rule's body or formula has with the rules it calls written out (what SymPy, fd and the
# tape compute): what an expression typed on the command line may be. A chain of rules each calling the last
# twice doubles with every rule; it is refused here, before any check spends minutes on it.
MAX_INLINED_NODES = COMMAND_LINE_EXPRESSION_MAX_CHARS

_HEAD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)\s*$")
_DERIVATIVE = re.compile(r"\s*d\s*/\s*d\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
_ASSIGN = re.compile(r"(?<![<>=!])=(?!=)")


class RuleError(ComputeError):
    """A rule whose derivative is wrong (exit 1, with a counterexample)."""


@dataclass
class Checked:
    """The rules of one run, checked, and what the checks have to say besides "right"."""

    rules: list[Rule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Reading a rule
# ---------------------------------------------------------------------------------------------
def parse_rule(text: str, earlier: dict[str, Rule] | None = None) -> Rule:
    """Read ``NAME(u, ...) = BODY; d/du = FORMULA; ...`` (one formula per parameter). The body and the
    formulas may call the language's functions and the rules in ``earlier``, not NAME itself."""
    earlier = dict(earlier or {})
    parts, starts = _split(text)
    head_text, head_at = parts[0], starts[0]
    m = _ASSIGN.search(head_text)
    if m is None:
        raise ParseError("a rule reads NAME(u, ...) = BODY; d/du = FORMULA; ...: no '=' after NAME(...)",
                         source=text, position=head_at)
    signature = _HEAD.match(head_text[:m.start()])
    if signature is None:
        raise ParseError("a rule starts with NAME(u, ...) =, the parameters plain names", source=text,
                         position=head_at)
    name = signature.group(1)
    if name in ARITIES or name in CONSTANTS:
        raise ParseError(f"'{name}' is already gradcli's own; a rule needs a new name", source=text,
                         position=head_at + signature.start(1))
    if name in earlier:
        raise ParseError(f"rule '{name}' is defined twice", source=text, position=head_at + signature.start(1))
    params_text = signature.group(2)
    params = tuple(p.strip() for p in params_text.split(","))
    offset = head_at + signature.start(2)
    for p in params:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p):
            raise ParseError(f"parameter {p!r} is not a name", source=text, position=offset)
        check_variable_name(p, source=text, position=offset)
        if p == name or p in earlier:
            raise ParseError(f"parameter '{p}' is also a rule's name", source=text, position=offset)
    if len(set(params)) != len(params):
        raise ParseError("a parameter is named twice", source=text, position=offset)
    body = _expression(text, head_text[m.end():], head_at + m.end(), params, earlier, "the body")
    formulas: dict[str, Node] = {}
    for part, at in zip(parts[1:], starts[1:]):
        m = _ASSIGN.search(part)
        d = _DERIVATIVE.match(part[:m.start()]) if m else None
        if d is None:
            raise ParseError("after the body come the derivatives, each 'd/du = FORMULA'", source=text, position=at)
        var = d.group(1)
        if var not in params:
            raise ParseError(f"d/d{var}: '{var}' is not a parameter of {name}({', '.join(params)})", source=text,
                             position=at + d.start(1))
        if var in formulas:
            raise ParseError(f"d/d{var} is given twice", source=text, position=at + d.start(1))
        formulas[var] = _expression(text, part[m.end():], at + m.end(), params, earlier, f"d/d{var}")
    missing = [p for p in params if p not in formulas]
    if missing:
        raise ParseError(f"rule {name} gives no derivative by {', '.join(missing)} (one 'd/du = ...' per "
                         f"parameter)", source=text, position=len(text))
    return Rule(name, params, body, tuple(formulas[p] for p in params), text=text.strip())


def _split(text: str) -> tuple[list[str], list[int]]:
    parts, starts, at = [], [], 0
    for piece in text.split(";"):
        if piece.strip():
            parts.append(piece)
            starts.append(at)
        at += len(piece) + 1
    if not parts:
        raise ParseError("empty rule", source=text, position=0)
    return parts, starts


def _expression(text: str, piece: str, at: int, params, earlier: dict[str, Rule], what: str) -> Node:
    saved = dict(active_rules())
    set_active_rules(earlier.values())
    try:
        tree = parse(piece).tree
    except ParseError as exc:
        position = None if exc.position is None else at + exc.position
        raise ParseError(f"{what}: {exc.message}", source=text, position=position) from None
    finally:
        set_active_rules(saved.values())
    stray = [n for n in walk(tree) if isinstance(n, Var) and n.name not in params]
    if stray:
        raise ParseError(f"{what} uses '{stray[0].name}', which is not a parameter", source=text,
                         position=at + stray[0].pos)
    return tree


def read_rules(texts: list[str] | None) -> list[Rule]:
    """Every ``--rule``, in order (a later one may call an earlier one)."""
    texts = list(texts or [])
    if len(texts) > MAX_RULES:
        raise UsageError(f"at most {MAX_RULES} rules")
    rules: dict[str, Rule] = {}
    sizes: dict = {}
    for t in texts:
        r = parse_rule(t, rules)
        for what, tree in [("body", r.body)] + [(f"d/d{p}", d) for p, d in zip(r.params, r.derivatives)]:
            n = inlined_size(tree, {p: 1 for p in r.params}, sizes)
            if n > MAX_INLINED_NODES:
                raise UsageError(f"rule {r.name}: its {what} with the rules it calls written out has {n:,} terms and "
                                 f"operators, more than {MAX_INLINED_NODES:,} (what a command-line expression may be)")
        rules[r.name] = r
    return list(rules.values())


def inlined_size(tree: Node, param_sizes: dict[str, int], memo: dict) -> int:
    """Nodes of ``tree`` with every rule call written out (:func:`inline_rules`), counted without writing it:
    a parameter counts as its argument's size."""
    total, stack = 0, [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            total += param_sizes.get(n.name, 1)
        elif isinstance(n, RuleCall):
            args = tuple(inlined_size(a, param_sizes, memo) for a in n.args)
            key = (n.rule.name, args)
            if key not in memo:
                memo[key] = inlined_size(n.rule.body, dict(zip(n.rule.params, args)), memo)
            total += memo[key]
        else:
            total += 1
            stack.extend(children(n))
    return total


# ---------------------------------------------------------------------------------------------
# Checking a rule
# ---------------------------------------------------------------------------------------------
def _value_of_formula(tree: Node) -> Node:
    """The formula as a value: stop_gradient(e) is e (first order compares values; the second-order check
    on the tape is where stop_gradient in a formula counts)."""
    if isinstance(tree, Call) and not isinstance(tree, RuleCall) and tree.func == "stop_gradient":
        return _value_of_formula(tree.args[0])
    from gradcli.expression.tree import map_children

    return map_children(tree, _value_of_formula)


def sample_points(rule: Rule) -> list[dict[str, float]]:
    rng = random.Random(f"{SEED}:{rule.name}")
    return [{p: rng.uniform(-s, s) for p in rule.params} for s in SCALES for _ in range(SAMPLES // len(SCALES))]


def _show_point(point: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def sympy_checks(rule: Rule, points: list[dict[str, float]], cancel=None):
    """The SymPy side of the checks (module-level, picklable: run as a bounded job). Returns
    (counterexample or None, notes, {(i, j): [exact second derivative at each point or None]}).

    A formula SymPy proves equal to the body's derivative is right. Otherwise it is compared at
    :data:`COMPARE_DIGITS` digits, exactly at the points (rationals: a condition such as ``u == 0`` is decided
    exactly), at the random points and at the features of both formulas (:func:`feature_points`: switch points,
    kinks, the centre of a narrow band); a difference beyond :data:`EXACT_GAP` is a counterexample. At a
    feature the body's derivative is the limit from both sides (a kink, where the two differ, is passed over:
    no derivative there). A rule that could be compared at no point is refused."""
    import sympy as sp

    from gradcli.methods import symbolic

    syms = symbolic.symbols_for(rule.params)
    body = symbolic.to_sympy(inline_rules(rule.body), syms)
    notes = []
    exact_points = [{syms[k]: sp.Rational(v) for k, v in pt.items()} for pt in points]
    for i, p in enumerate(rule.params):
        if cancel is not None:
            cancel.check()
        true = symbolic.diff(body, syms[p])
        stated = symbolic.to_sympy(inline_rules(_value_of_formula(rule.derivatives[i])), syms)
        if _proven_equal(sp, stated, true):
            continue
        features = feature_points(sp, [body, stated, true], syms, syms[p], exact_points[:1] or [{}])
        checked = 0
        for subs, at_feature in [(e, False) for e in exact_points] + [(e, True) for e in features]:
            if cancel is not None:
                cancel.check()
            if _exact_value(sp, body, subs) is None:
                continue  # outside the body's domain: nothing to compare
            if at_feature:
                t = _two_sided(sp, true, subs, syms[p])
                if t is _KINK:
                    continue
            else:
                t = _exact_value(sp, true, subs)
            if t is None:
                continue
            checked += 1
            s_ = _exact_value(sp, stated, subs)
            if s_ is not None and abs(s_ - t) <= EXACT_GAP * max(1, abs(t)):
                continue
            shown = ", ".join(f"{k}={_show_number(v)}" for k, v in sorted(subs.items(), key=lambda kv: kv[0].name))
            return ((f"rule {rule.name} is wrong: d/d{p} = {_text(rule.derivatives[i])} is not the derivative "
                     f"of {_text(rule.body)}: at {shown} it is "
                     f"{'undefined' if s_ is None else sp.Float(s_, 17)}, the derivative is {sp.Float(t, 17)} "
                     f"(SymPy: {sp.simplify(true)})"), notes, {})
        if checked == 0:
            return ((f"rule {rule.name} could not be checked: SymPy could not prove d/d{p} = "
                     f"{_text(rule.derivatives[i])} equal to the derivative of {_text(rule.body)}, and none of the "
                     f"{len(exact_points) + len(features)} points tried lies in the body's domain"), notes, {})
        notes.append(f"rule {rule.name}: SymPy could not simplify d/d{p}'s difference from the body's derivative "
                     f"to 0; the two agree to {COMPARE_DIGITS} digits at all {checked} points checked (random "
                     f"ones and the formulas' switch points, kinks and bands)")
    second = {}
    for i, p in enumerate(rule.params):
        for j, q in enumerate(rule.params):
            d2 = symbolic.diff(body, syms[p], syms[q])
            second[(i, j)] = [symbolic.value_at(d2, subs) if symbolic.value_at(body, subs) is not None else None
                              for subs in exact_points]
    return None, notes, second


# Digits of the exact comparison: a formula off by 1e-9 (or 1e-20) of the derivative is a counterexample.
COMPARE_DIGITS = 30
# The one-sided limits of the body's derivative at a feature: this far (relative to 1 + |point|) to each side.
_SIDE = 10 ** -40
_KINK = object()


def _proven_equal(sp, stated, true) -> bool:
    try:
        return sp.simplify(stated - true) == 0
    except Exception:  # simplify's own failures (Piecewise conditions it cannot order): not proven
        return False


def _exact_value(sp, expr, subs):
    """``expr`` at the rational point ``subs`` to :data:`COMPARE_DIGITS` + 10 digits (a SymPy Float), or None
    where it is not a finite real number."""
    try:
        v = expr.xreplace(subs).evalf(COMPARE_DIGITS + 10)
    except (TypeError, ValueError, ZeroDivisionError, ArithmeticError):
        return None
    if not v.is_number or v.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return None
    re_, im_ = v.as_real_imag()
    if im_ != 0 and abs(im_) > EXACT_GAP * max(1, abs(re_)):
        return None
    if not re_.is_Number or not re_.is_finite:
        return None
    return re_


def _two_sided(sp, expr, subs, sym):
    """The limit of ``expr`` at ``subs`` from both sides of ``sym``: _KINK where the two differ (no derivative
    there), None where a side is undefined."""
    x = subs[sym]
    side = sp.Rational(_SIDE) * (1 + abs(x))
    left = _exact_value(sp, expr, {**subs, sym: x - side})
    right = _exact_value(sp, expr, {**subs, sym: x + side})
    if left is None or right is None:
        return None
    if abs(left - right) > 10 ** -(COMPARE_DIGITS - 5) * max(1, abs(left)):
        return _KINK
    return (left + right) / 2


# At most this many features (switch points, kinks, band centres) per formula and parameter, and at most
# this degree of a polynomial argument whose roots are solved for.
MAX_FEATURES = 64
_MAX_DEGREE = 4


def feature_points(sp, exprs, syms, sym, bases) -> list[dict]:
    """Rational points where one of ``exprs`` changes its form along ``sym``: the arguments of abs, sign,
    heaviside, min/max differences and where's comparisons at 0 (switch points and kinks), and the real roots of
    every polynomial argument and of its derivative (the centre of a band such as exp(-1e6*(u - 3)**2)). The
    other parameters stay at ``bases``' values. Each feature is also taken 1e-6 to each side (a narrow band)."""
    found: list = []
    for base in bases:
        others = {k: v for k, v in base.items() if k != sym}
        for arg in _feature_arguments(sp, exprs):
            g = arg.xreplace(others)
            if not g.has(sym):
                continue
            for root in _real_roots(sp, g, sym):
                for x in (root, root - sp.Rational(1, 10 ** 6), root + sp.Rational(1, 10 ** 6)):
                    point = {**{k: v for k, v in base.items()}, sym: x}
                    if point not in found:
                        found.append(point)
                if len(found) >= MAX_FEATURES:
                    return found
    return found


def _feature_arguments(sp, exprs):
    seen = []
    for expr in exprs:
        for e in sp.preorder_traversal(expr):
            args = []
            if isinstance(e, (sp.Abs, sp.sign, sp.Heaviside, sp.DiracDelta)):
                args = [e.args[0]]
            elif isinstance(e, (sp.Min, sp.Max)):
                args = [a - b for k, a in enumerate(e.args) for b in e.args[k + 1:]]
            elif isinstance(e, sp.core.relational.Relational):
                args = [e.lhs - e.rhs]
            elif isinstance(e, (sp.Function, sp.Pow)) and not isinstance(e, sp.Piecewise):
                args = list(e.args)
            for a in args:
                if a.free_symbols and a not in seen:
                    seen.append(a)
    return seen


def _real_roots(sp, g, sym) -> list:
    """Rational approximations (40 digits) of the real roots of g and of dg/dsym, where g is a polynomial in
    sym of degree at most _MAX_DEGREE; none otherwise (the random points cover the rest)."""
    out = []
    try:
        if not g.is_polynomial(sym):
            return out
        poly = sp.Poly(g, sym)
        if poly.degree() > _MAX_DEGREE or poly.degree() < 1:
            return out
        for q in (poly, poly.diff(sym)):
            if q.degree() < 1:
                continue
            for r in sp.Poly(q.as_expr(), sym).nroots(n=40):
                if r.is_real:
                    out.append(sp.Rational(str(sp.Float(r, 40))) if not r.is_Rational else r)
    except Exception:  # a polynomial SymPy cannot solve numerically: left to the random points
        return out
    return out


def _show_number(v) -> str:
    import sympy as sp

    f = float(v)
    return repr(f) if sp.Rational(f) == v else str(sp.Float(v, 20))


def _text(tree: Node) -> str:
    from gradcli.expression.tree import to_text

    return to_text(tree)


def tape_second_order(rule: Rule, points: list[dict[str, float]], second: dict) -> str | None:
    """The tape's second derivatives of ``NAME(u, ...)`` (the rule's formulas, differentiated by the tape)
    against SymPy's of the body: a counterexample, or None."""
    import numpy as np

    from gradcli.expression.evaluate import compile_expression
    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    call = compile_expression(RuleCall(rule.name, tuple(Var(p) for p in rule.params), rule=rule),
                              tf_backend("float64"))
    xs = [tf.Variable(np.array([pt[p] for pt in points], dtype=np.float64)) for p in rule.params]
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(call(dict(zip(rule.params, xs))))
        firsts = inner.gradient(y, xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        sums = [tf.reduce_sum(g) for g in firsts]
    for i, p in enumerate(rule.params):
        row = outer.gradient(sums[i], xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for j, q in enumerate(rule.params):
            tape = row[j].numpy()
            for k, exact in enumerate(second[(i, j)]):
                if exact is None or not math.isfinite(exact) or not math.isfinite(tape[k]):
                    continue  # a float64 overflow on the tape is no counterexample
                if not abs(tape[k] - exact) <= TAPE_GAP * max(1.0, abs(exact)):
                    what = f"d2/d{p}2" if p == q else f"d2/d{p}d{q}"
                    return (f"rule {rule.name} is wrong to second order: the tape's {what} of {rule.name} (its "
                            f"formula d/d{p} = {_text(rule.derivatives[i])} differentiated) is {float(tape[k])!r} at "
                            f"{_show_point(points[k])}, the body's is {exact!r}")
    return None


def check_rules(rules: list[Rule], *, time_limit: float = 10.0) -> Checked:
    """Check every rule (exactly, at random points, to second order on the tape); raise :class:`RuleError`
    with a counterexample for a wrong one."""
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    checked = Checked(rules=list(rules))
    seconds: dict[str, tuple] = {}
    for rule in rules:  # SymPy first, in a bounded job, before anything imports TensorFlow
        points = sample_points(rule)
        try:
            counterexample, notes, second = BoundedJob(sympy_checks, (rule, points), time_limit, parallel=True,
                                                       cancellable=True).result()
        except SymbolicTimeout as exc:
            raise RuleError(f"rule {rule.name} could not be checked: {exc} (raise --symbolic-timeout)") from None
        if counterexample:
            raise RuleError(counterexample)
        checked.notes += notes
        seconds[rule.name] = (points, second)
    for rule in rules:
        points, second = seconds[rule.name]
        counterexample = tape_second_order(rule, points, second)
        if counterexample:
            raise RuleError(counterexample)
    return checked


def define_rules(texts: list[str] | None, *, time_limit: float = 10.0) -> Checked:
    """Read and check ``--rule`` options and make them the rules the parser reads for this run."""
    rules = read_rules(texts)
    set_active_rules(rules)
    if not rules:
        return Checked()
    return check_rules(rules, time_limit=time_limit)


@contextlib.contextmanager
def rules_in_force(texts: str | list[str] | None, *, time_limit: float = 10.0):
    """:func:`define_rules` for the length of a block, then the rules that were in force before (the Python
    API: one call's rules end with the call). Yields the :class:`Checked` notes. Without texts nothing
    changes (the rules already in force stay)."""
    if not texts:
        yield Checked()
        return
    saved = dict(active_rules())
    try:
        yield define_rules([texts] if isinstance(texts, str) else texts, time_limit=time_limit)
    finally:
        set_active_rules(saved.values())


# ---------------------------------------------------------------------------------------------
# What a right rule changes
# ---------------------------------------------------------------------------------------------
def numerics_notes(trees: list[Node], texts: list[str], values: dict[str, float], wrt: list[str], dtype: str,
                   tape: list[dict[str, float]]) -> list[str]:
    """Where a rule changes the tape's value at the command's point: the tape with the rules (``tape``, as the
    command computed it) against the tape of the same expressions with each rule's body written out."""
    from gradcli.methods.tape import tape_gradient

    out = []
    for tree, text, with_rule in zip(trees, texts, tape):
        if not any(isinstance(n, RuleCall) for n in walk(tree)):
            continue
        without, *_ = tape_gradient([inline_rules(tree)], values, wrt, dtype=dtype)
        names = sorted({n.func for n in walk(tree) if isinstance(n, RuleCall)})
        for v in wrt:
            a, b = with_rule.get(v), without[0].get(v)
            if a is None or b is None or _same(a, b, dtype):
                continue
            out.append(f"the rule{'s' if len(names) > 1 else ''} for {', '.join(names)} change{'' if len(names) > 1 else 's'}"
                       f" the tape's numerics: d({text})/d{v} is {a!r} on the tape with the rule, {b!r} with the body "
                       f"written out ({_text(inline_rules(tree))})")
    return out


def _same(a: float, b: float, dtype: str) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    eps = 1.2e-7 if dtype == "float32" else 2.3e-16
    return abs(a - b) <= 64 * eps * max(1.0, abs(a), abs(b))


__all__ = ["Checked", "RuleError", "check_rules", "define_rules", "numerics_notes", "parse_rule", "read_rules",
           "sample_points", "sympy_checks", "tape_second_order"]
