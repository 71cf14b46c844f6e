"""What grad says at one point that a batch only counts or leaves to ``gradcli trace``: each adapted fd
step and complex step with its value, why the tape's derivative through ``where`` is not finite, the first
node of the tape that went wrong (at many points: at the first point that asks, once per expression), and
what ``--constants``/``--watch`` did. Functions of the batch core
(gradcli.compute.batch.grad.GradBatch), which calls them when its only point is the --at one."""

from __future__ import annotations

import math

from gradcli.compute.tape_origin import origin_note


def complex_step_notes(core, cc) -> None:
    """A note for each complex-step value taken with another step than the default."""
    import numpy as np

    from gradcli.compute.complex_column import step_note
    from gradcli.methods.complex_step import COMPLEX_STEP

    for i, e in enumerate(core.exprs):
        for j, v in enumerate(core.wrt):
            if np.isfinite(cc.values[i, 0, j]) and cc.steps[i, 0, j] != COMPLEX_STEP[core.dtype]:
                core.notes.append(step_note(e.text, v, None, float(cc.steps[i, 0, j]), core.dtype))


def adapted_notes(core, results) -> None:
    """A note for each value whose fd stencil adapted to the domain, with its step."""
    from gradcli.methods.fd_notes import fd_line_notes

    for e, r in zip(core.exprs, results):
        for j, v in enumerate(core.wrt):
            if r.how[0, j]:
                _, notes, _ = fd_line_notes(f"d({e.text})/d{v}", "", dtype=core.dtype,
                                            value=float(r.values[0, j]), estimate=float(r.estimates[0, j]),
                                            step=float(r.steps[0, j]), how=int(r.how[0, j]))
                core.notes += notes


def where_note(core, i: int, v: str, bad: dict, columns, k: int, point: dict | None = None) -> None:
    """Once per run: why the tape's derivative through where is not finite where the exact one is."""
    from gradcli.expression.functions import where_nan_note

    exact = columns.get("symbolic")
    if "tape" in bad and exact is not None and math.isfinite(exact[i, k, core.wrt.index(v)]):
        note = where_nan_note(core.trees[i], core.exprs[i].text, v)
        if note and note not in core.notes:
            core.notes.append(note)
        origin_note(core, i, point=point)


def doubtful_tape(core, i: int, v: str, error: float, exact: float, tol: float, warnings: list[str]) -> None:
    """At one point: a tape value within its tolerance only because the tolerance is large. The tape's
    tolerance follows the scale of the point and of f (the roundings of intermediates that large), which can
    be far above the derivative itself (sqrt(x**2 + y**2) at 1e200: x**2 overflows, the tape says 0.0 beside
    0.7071, inside a tolerance of 3e188). There the trace settles it: a node that went wrong is a warning."""
    if core.at_point is False or not math.isfinite(error) or error <= 1e-6 * abs(exact) or tol <= 1e6 * abs(exact):
        return
    from gradcli.compute.judge import doubtful_tape_warning

    said = doubtful_tape_warning(f"d({core.exprs[i].text})/d{v}", error, tol, exact)
    at = len(warnings)
    if origin_note(core, i, into=warnings):  # the trace found where: the tape is off by more than its digits
        warnings.insert(at, said)


def kink_convention_note(core, i: int, v: str, column: str = "exact") -> None:
    """Once per derivative: at a kink the exact column's value is SymPy's convention, not a derivative (abs'
    derivative is sign(x), and sign(0) = 0; relu's where(x > 0, 1, 0) is 0 there), and the tape's is
    TensorFlow's (relu's gradient at 0 is 0, a tie in max goes to its first argument): the table shows it
    beside fd's kink."""
    if column == "exact":
        note = (f"the exact column's d({core.exprs[i].text})/d{v} at a kink is SymPy's convention (sign(0) = 0, "
                "a branch's value at its edge), not a derivative: the one-sided derivatives differ")
    else:
        note = (f"the tape's d({core.exprs[i].text})/d{v} at a kink is TensorFlow's convention (the gradient it "
                "defines there: relu's is 0 at 0, a tie in max or min goes to the first argument), not a "
                "derivative: the one-sided derivatives differ, and fd's two-sided value is neither")
    if note not in core.notes:
        core.notes.append(note)


def constants_note(unwatched: list[str], watched: list[str]) -> str:
    """What --constants/--watch did to the tape column, in the guide's terms."""
    words = []
    if unwatched:
        one = len(unwatched) == 1
        words.append(f"{', '.join(unwatched)} entered the tape as tf.constant and "
                     f"{'is' if one else 'are'} not watched, so tape.gradient returns None for "
                     f"{'it' if one else 'them'} (symbolic and fd still differentiate by {'it' if one else 'them'}; "
                     f"--watch {','.join(unwatched)} is the fix)")
    if watched:
        words.append(f"{', '.join(watched)} entered as tf.constant and tape.watch() made the tape record them")
    return "; ".join(words)


def one_shot_note(trees, points, wrt: list[str], dtype: str) -> str:
    """--one-shot: the guide's lesson on ``persistent``, run on a tape of its own and said in its terms."""
    from gradcli.methods.tape import one_shot_tape
    from gradcli.results import shortest

    first, said = one_shot_tape(trees, points, wrt, dtype=dtype)
    values = ", ".join(f"{name} {shortest(v, dtype)!r}" for name, v in zip(wrt, first))
    return (f"one-shot tape: tf.GradientTape() without persistent=True gave its first tape.gradient ({values}), "
            f"then forgot its record; the second tape.gradient raised RuntimeError: {said} (persistent=True, as "
            "the tape column's tape has it, keeps the record for every target and a second call)")
