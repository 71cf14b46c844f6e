"""``descend -f csv`` for one start.

- without ``--every``: a row per run (per optimizer), the summary. Columns: the start's coordinates under the
  variables' names, ``optimizer``, ``learning_rate``, ``status``, ``steps``, ``final_<name>`` for each
  variable, ``value`` (f at the end), ``gradient_norm``, ``end_point_kind`` (minimum, maximum, saddle: what
  the Hessian says where a run converged), ``stationary_kind``, ``stationary_<name>``, ``stationary_value``,
  ``stationary_distance`` (SymPy's nearest stationary point), ``message``, ``seconds``. The same names as
  the rows of many starts (--points/--grid), whose file can be read back with --points.
- with ``--every K``: the trajectory, a row per kept step per run: ``optimizer``, ``learning_rate``,
  ``step``, the variables, ``value``, ``gradient_norm``, and ``status`` on each run's last row.

Empty cells: missing or non-finite numbers (JSON's null).
"""

from __future__ import annotations

from gradcli.compute.descend import DescentReport, DescentRun
from gradcli.render.common import to_csv


def descend_summary_csv(report: DescentReport) -> str:
    names = report.variables
    header = [*names, "optimizer", "learning_rate", "status", "steps", *[f"final_{v}" for v in names], "value",
              "gradient_norm", "end_point_kind", "stationary_kind", *[f"stationary_{v}" for v in names],
              "stationary_value", "stationary_distance", "message", "seconds"]
    return to_csv(header, [_summary_row(report, run) for run in report.runs])


def _summary_row(report: DescentReport, run: DescentRun) -> list:
    names = report.variables
    s = run.nearest_stationary
    stationary = [s.kind, *[s.point.get(v) for v in names], s.value, s.distance] if s is not None \
        else [None] * (len(names) + 3)
    return [*[report.start.get(v) for v in names], run.optimizer, run.learning_rate, run.status, run.steps,
            *[run.final.get(v) for v in names], run.value, run.gradient_norm, run.end_kind, *stationary,
            run.message, round(run.seconds, 3)]


def descend_trajectory_csv(report: DescentReport) -> str:
    header = ["optimizer", "learning_rate", "step", *report.variables, "value", "gradient_norm", "status"]
    rows = []
    for run in report.runs:
        for h in run.history:
            rows.append([run.optimizer, run.learning_rate, h.step, *[h.point.get(v) for v in report.variables],
                         h.value, h.gradient_norm, run.status if h is run.history[-1] else ""])
    return to_csv(header, rows)
