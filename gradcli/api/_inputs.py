"""What the API takes for ``at``, ``points`` and ``grid``, turned into what the CLI's options would give.

- ``at``: a mapping ``{"x1": 2, "x2": "pi/4"}`` or the text ``"x1=2,x2=3"`` (or a list of such texts, as
  --at repeated) -> the ``--at`` texts;
- ``points``: a path (str or PathLike: CSV or JSON Lines, as --points FILE), a mapping of columns (name ->
  sequence or NumPy array) or a pandas DataFrame -> a ``--points`` spec. A mapping or a DataFrame is written
  as CSV text and read back by the CLI's reader as ``--points -`` reads standard input: the same checks, the
  same pass-through columns, the same records (``line`` is the row's line in that CSV: the header is line 1);
- ``grid``: the text ``"x=-1:1:5,y=0:1:3"``, as --grid.
"""

from __future__ import annotations

import csv
import io
import numbers
import os
from collections.abc import Mapping

from gradcli.errors import UsageError


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
    """A value as --at reads it: a string as written (``pi/4``), an integer exactly, a float with every digit."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{option}: {key} must be a number or a string such as 'pi/4', not {value!r}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return repr(float(value))


def points_spec(points) -> tuple[str | None, str | None]:
    """(the --points spec, the text to read as standard input for it, or None)."""
    if points is None:
        return None, None
    if isinstance(points, (str, os.PathLike)):
        return os.fspath(points), None
    columns = columns_of(points)
    return "-", _csv_text(columns)


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


def _csv_text(columns: dict[str, list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in zip(*columns.values()):
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (str, bool)):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))  # every digit (also of a NumPy scalar): the CSV reader reads back the same float64
    return str(v.item() if hasattr(v, "item") else v)
