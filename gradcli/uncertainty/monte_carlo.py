"""Monte Carlo: seeded samples of the inputs (x = μ + L u, u normal or uniform on ±√3: mean 0, variance 1)
through gradcli's own evaluator, vectorised over the samples (gradcli.expression.evaluate.numpy_backend, the
evaluator of fd's vectorised stencils: the same tree, the same function table), and what the values say:
mean and standard deviation with their standard errors, quantiles, the sample covariance of several.

Samples are drawn and evaluated in chunks of CHUNK, so memory stays bounded by the values kept (8 bytes a
sample and expression) whatever the number of inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

CHUNK = 250_000
QUANTILES = (0.025, 0.5, 0.975)
QUANTILE_KEYS = ("2.5%", "50%", "97.5%")


@dataclass
class SampleStats:
    """What the samples of one expression say (``mean`` None: no sample was finite)."""

    samples: int
    finite: int
    mean: float | None
    sd: float | None
    se_mean: float | None
    se_sd: float | None
    quantiles: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"samples": self.samples, "finite": self.finite, "mean": self.mean, "sd": self.sd,
                "se_mean": self.se_mean, "se_sd": self.se_sd, "quantiles": dict(self.quantiles)}


def draw(means: list[float], lower, *, count: int, distribution: str, rng):
    """The next ``count`` samples of the inputs from ``rng``: a [count, d] array, μ + L u."""
    import numpy as np

    size = (count, len(means))
    u = rng.standard_normal(size) if distribution == "normal" else rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), size)
    return np.asarray(means, dtype=np.float64) + u @ lower.T


def sample_values(trees: list, names: list[str], means: list[float], lower, *, samples: int, seed: int,
                  distribution: str):
    """The values of each tree at ``samples`` seeded samples of the inputs: a [len(trees), samples] array."""
    import numpy as np

    from gradcli.expression.evaluate import compile_expression, numpy_backend

    backend = numpy_backend("float64")
    compiled = [compile_expression(t, backend) for t in trees]
    rng = np.random.default_rng(seed)
    out = np.empty((len(trees), samples), dtype=np.float64)
    for start in range(0, samples, CHUNK):
        stop = min(samples, start + CHUNK)
        x = draw(means, lower, count=stop - start, distribution=distribution, rng=rng)
        env = {name: np.ascontiguousarray(x[:, i]) for i, name in enumerate(names)}
        with np.errstate(all="ignore"):  # inf and NaN are counted below
            for k, f in enumerate(compiled):
                out[k, start:stop] = np.broadcast_to(np.asarray(f(env), dtype=np.float64), (stop - start,))
    return out


def stats(values) -> SampleStats:
    """Mean and standard deviation (n-1) of the finite values, their standard errors (the sd's from the
    fourth central moment: Var(s²) = (m4 - s⁴(n-3)/(n-1))/n, se(s) = se(s²)/2s) and the quantiles."""
    import numpy as np

    n_all = int(values.size)
    good = values[np.isfinite(values)]
    n = int(good.size)
    if n == 0:
        return SampleStats(n_all, 0, None, None, None, None, {k: None for k in QUANTILE_KEYS})
    mean = float(good.mean())
    if n == 1:
        return SampleStats(n_all, 1, mean, 0.0, None, None, {k: mean for k in QUANTILE_KEYS})
    centred = good - mean
    var = float(centred @ centred) / (n - 1)
    sd = math.sqrt(var)
    m4 = float(np.mean(centred ** 4))
    var_s2 = max(m4 - var * var * (n - 3) / (n - 1), 0.0) / n
    se_sd = math.sqrt(var_s2) / (2 * sd) if sd > 0 else 0.0
    q = np.quantile(good, QUANTILES)
    return SampleStats(n_all, n, mean, sd, sd / math.sqrt(n), se_sd,
                       {k: float(v) for k, v in zip(QUANTILE_KEYS, q)})


def sample_covariance(values) -> list[list[float]] | None:
    """The sample covariance of several expressions over the samples where every one is finite."""
    import numpy as np

    good = values[:, np.all(np.isfinite(values), axis=0)]
    if good.shape[1] < 2:
        return None
    return np.atleast_2d(np.cov(good)).tolist()
