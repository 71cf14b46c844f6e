"""Whether linear propagation holds: its mean and standard deviation against Monte Carlo's, within a few of
Monte Carlo's standard errors, and which input's spread is to blame when it does not.

Linear is unreliable when its mean or its sd differs from Monte Carlo's by more than Z standard errors of the
Monte Carlo figure (at most UNSETTLED of its sd) and by more than RELATIVE of Monte Carlo's sd (a gap that many
standard errors wide but a few hundredths of the spread is real and harmless: with enough samples every curved
function would be flagged), when the linear answer is undefined at the mean, or when some samples have no
finite value (the spread reaches a pole or the edge of a domain). The input to
blame is the one with the largest share of the second-order variance term (what the linear answer leaves out),
or, where that term is 0 (sin at 0: H = 0, yet the curvature further out matters), the largest share of the
linear variance.
"""

from __future__ import annotations

from dataclasses import dataclass

Z = 4.0
RELATIVE = 0.05
# Z standard errors are at most this much of the sd: beyond it Monte Carlo's own figure is unsettled (a heavy
# tail, 1/x near its pole: the standard error of the sd grows with the fourth moment), and no agreement within
# it says anything
UNSETTLED = 0.25
HOLDS = "linear propagation holds here"


def shortest(x: float) -> str:
    return f"{x:.4g}"

UNRELIABLE = "linear propagation is unreliable here"


@dataclass
class Verdict:
    linear_holds: bool
    second_order_holds: bool
    blame: str | None
    text: str
    mean_gap: float | None  # |linear mean - Monte Carlo mean| in Monte Carlo standard errors
    sd_gap: float | None

    def to_dict(self) -> dict:
        return {"linear_holds": self.linear_holds, "second_order_holds": self.second_order_holds,
                "blame": self.blame, "text": self.text, "mean_gap": self.mean_gap, "sd_gap": self.sd_gap}


def _gap(a: float, b: float, se: float | None) -> float | None:
    if se is None:
        return None
    if se == 0:
        return 0.0 if a == b else float("inf")
    return abs(a - b) / se


def agrees(mean: float, sd: float, mc) -> bool:
    """Whether (mean, sd) agree with Monte Carlo's within Z standard errors or RELATIVE of its sd."""
    if mc.mean is None or mc.finite < mc.samples:
        return False
    tolerance = RELATIVE * mc.sd
    cap = UNSETTLED * mc.sd
    mean_ok = abs(mean - mc.mean) <= max(min(Z * (mc.se_mean or 0.0), cap), tolerance)
    sd_ok = abs(sd - mc.sd) <= max(min(Z * (mc.se_sd or 0.0), cap), tolerance)
    return mean_ok and sd_ok


def judge(names: list[str], spread: list[float], mean: float | None, sd: float | None, second,
          linear_shares: list[float], mc) -> Verdict:
    """The verdict for one expression (``spread``: each input's sd): ``mean``/``sd`` linear, ``second`` the
    SecondOrder (or None), ``mc`` the Monte Carlo SampleStats."""
    if mc.mean is None:
        return Verdict(False, False, None, "no verdict: no Monte Carlo sample has a finite value", None, None)
    if mean is None or sd is None:
        return Verdict(False, False, None, f"{UNRELIABLE}: the value or its gradient is not finite at the mean, "
                       f"so there is no linear answer", None, None)
    holds = agrees(mean, sd, mc)
    second_holds = second is not None and agrees(second.mean, second.sd, mc)
    mean_gap, sd_gap = _gap(mean, mc.mean, mc.se_mean), _gap(sd, mc.sd, mc.se_sd)
    if holds:
        return Verdict(True, second_holds, None, f"{HOLDS} (linear and Monte Carlo agree within {Z:g} Monte Carlo "
                       f"standard errors or {RELATIVE:.0%} of the sd)", mean_gap, sd_gap)
    blame, second_share, linear_share = _blame(names, second, linear_shares)
    if blame is None and sum(1 for s in spread if s > 0) == 1:  # one input has a spread: it is to blame
        i = next(j for j, s in enumerate(spread) if s > 0)
        blame, linear_share = names[i], linear_shares[i]
        second_share = second.shares[i] if second is not None else 0.0
    if mc.finite < mc.samples:
        why = (f"{mc.samples - mc.finite:,} of {mc.samples:,} samples have no finite value (the spread reaches a "
               f"pole or the edge of a domain)")
    else:
        why = (f"Monte Carlo gives mean {shortest(mc.mean)} and sd {shortest(mc.sd)}, linear {shortest(mean)} and "
               f"{shortest(sd)}")
    text = f"{UNRELIABLE}: {why}"
    if blame is not None:
        text += (f"; {blame}'s spread is to blame ({linear_share:.0%} of the linear variance, {second_share:.0%} "
                 f"of the second-order term)")
    if second_holds:
        text += "; second order agrees with Monte Carlo"
    return Verdict(False, second_holds, blame, text, mean_gap, sd_gap)


def _blame(names: list[str], second, linear_shares: list[float]):
    if not names:
        return None, 0.0, 0.0
    second_shares = second.shares if second is not None and second.variance_term > 0 else None
    ranking = second_shares if second_shares is not None else linear_shares
    if not any(ranking):
        return None, 0.0, 0.0
    i = max(range(len(names)), key=lambda j: ranking[j])
    return names[i], (second_shares[i] if second_shares is not None else 0.0), linear_shares[i]
