"""What a Request takes for its points, and the chunks of points given as columns.

- ``at``: a mapping ``{"x1": 2, "x2": "pi/4"}`` (propagate: ``{"x": (2, 0.1)}``, a value and its standard
  deviation, or ``"2±0.1"``) or the text ``"x1=2,x2=3"`` (or a list of such texts, as --at
  repeated) -> the ``--at`` texts;
- ``points``: a path (CSV or JSON Lines, as --points FILE), or columns: a mapping (name -> sequence or NumPy
  array) or a pandas DataFrame. Columns are read as the CSV with that header and those rows would be, without
  writing it: the same checks, the same pass-through columns (their values as that CSV's text), the same
  records (``line`` is the row's line in that CSV: the header is line 1);
- ``grid``: the text ``"x=-1:1:5,y=0:1:3"``, as --grid.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping

from gradcli.errors import UsageError

# How errors name points given as columns (a --points FILE is named by its path).
COLUMNS_LABEL = "columns"


def at_texts(at, option: str = "at") -> list[str] | None:
    """The ``--at`` texts for ``at`` (None: not given)."""
    if at is None:
        return None
    if isinstance(at, str):
        return [at]
    if isinstance(at, Mapping):
        return [",".join(f"{_name(k, option)}={_value(k, v, option)}" for k, v in at.items())] if at else None
    if isinstance(at, (list, tuple)) and all(isinstance(a, str) for a in at):
        return list(at)
    raise UsageError(f"{option}: give a mapping such as {{'x': 2}} or the text 'x=2,y=3', not {type(at).__name__}")


def _name(key, option: str) -> str:
    if not isinstance(key, str):
        raise UsageError(f"{option}: variable names are strings, not {key!r}")
    return key


def _value(key: str, value, option: str) -> str:
    """A value as --at reads it: a string as written (``pi/4``, ``2±0.1``), an integer exactly, a float with
    every digit; a pair (value, standard deviation) as ``value±sd`` (which only propagation takes)."""
    if isinstance(value, tuple) and len(value) == 2:
        return f"{_value(key, value[0], option)}±{_value(key, value[1], option)}"
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{option}: {key} must be a number or a string such as 'pi/4', not {value!r}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return repr(float(value))


def columns_of(points) -> dict[str, list]:
    """A mapping or a DataFrame-like object (``to_dict("list")``) as {column name: list of values}."""
    if not isinstance(points, Mapping) and hasattr(points, "to_dict") and hasattr(points, "columns"):
        points = points.to_dict("list")  # a pandas DataFrame, without importing pandas
    if not isinstance(points, Mapping):
        raise UsageError("points: give a CSV or JSON Lines path, a mapping of columns {'x': [...]} or a DataFrame, "
                         f"not {type(points).__name__}")
    if not points:
        raise UsageError("points: the mapping has no columns")
    columns = {}
    for name, column in points.items():
        values = column.tolist() if hasattr(column, "tolist") else column
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise UsageError(f"points: column {name!r} is not a sequence of values")
        columns[str(name)] = list(values)
    sizes = {len(v) for v in columns.values()}
    if len(sizes) > 1:
        raise UsageError("points: the columns have different lengths: "
                         + ", ".join(f"{k} {len(v)}" for k, v in columns.items()))
    return columns


def cell_text(v) -> str:
    """A value as the CSV of the columns would hold it: every digit of a float (a NumPy scalar's too)."""
    if v is None:
        return ""
    if isinstance(v, (str, bool)):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    return str(v.item() if hasattr(v, "item") else v)


def column_chunks(core, points, *, at: list[str] | None, batch_size: int):
    """The chunks of ``points`` (a :class:`gradcli.library.requests.PointColumns`) for ``core``: as
    gradcli.compute.batch.points.point_chunks gives a --points file's, refused alike past the work limit."""
    from gradcli.compute.batch.points import PointChunks
    from gradcli.compute.work import estimate
    from gradcli.expression.points import parse_point

    source = ColumnsSource(points.columns, variables=core.variables, fixed=parse_point(at, required=False),
                           chunk_size=core.chunk_size(batch_size), dtype=core.dtype)
    work = estimate(core)
    if work is not None:
        work.check(source.total)
    if source.total == 0:
        core.notes.append(f"no points were read: {source.label} has no rows")
    return PointChunks(source.chunks(), source.total, work)


class ColumnsSource:
    """Points given as columns, as a gradcli.expression.sources.PointSource: every row checked when made
    (before anything is computed, as a file's are), then chunks of at most ``chunk_size`` points.
    ``fixed_option``: the option that fixes the variables ``fixed`` gives (None: the command has none)."""

    label = COLUMNS_LABEL
    format = "columns"

    def __init__(self, columns: dict[str, list], *, variables: list[str], fixed=None,
                 fixed_option: str | None = "--at", chunk_size: int, dtype: str = "float64"):
        from gradcli.expression.sources.messages import Where, both_message, missing_message
        from gradcli.expression.sources.shapes import Needs

        needs = self._needs = Needs(variables, fixed, fixed_option, dtype)
        where = Where("--points", COLUMNS_LABEL)
        for v in needs.names:
            if v in columns and v in needs.fixed:
                raise where.at(1, both_message(v, "column", needs.fixed_option))
        missing = [v for v in needs.from_input if v not in columns]
        if missing:
            raise where.at(1, missing_message("column", missing, needs.fixed_option))
        self.variable_names = list(needs.names)
        self.field_names = [name for name in columns if name not in needs.needed]
        self._rows = list(_rows(columns, needs, where))
        self.total = len(self._rows)
        self._chunk_size = chunk_size

    def chunks(self):
        from gradcli.expression.sources.files import chunked_rows

        return chunked_rows(iter(self._rows), self._needs, self._chunk_size)


def _rows(columns: dict[str, list], needs, where) -> Iterator:
    """(line, values of the variables the columns give, pass-through fields) per row, checked as a CSV row."""
    from gradcli.expression.sources.messages import show
    from gradcli.expression.sources.numbers import NotANumber, parse_number

    given = [(name, columns[name]) for name in needs.from_input]
    passing = [(name, values) for name, values in columns.items() if name not in needs.needed]
    for i in range(len(next(iter(columns.values())))):
        line = i + 2  # the header is line 1
        values = []
        for name, column in given:
            text = cell_text(column[i])
            try:
                values.append(parse_number(text))
            except NotANumber as exc:
                raise where.at(line, f"{name}: {show(text)} {exc.reason}") from None
            misfit = needs.misfit(name, values[-1])
            if misfit:
                raise where.at(line, misfit)
        yield line, values, {name: cell_text(column[i]) for name, column in passing}
