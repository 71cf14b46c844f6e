"""Parquet input: ``--points data.parquet``, a folder of Parquet files (a dataset as Spark, Dask or pandas
write one), or a glob (``'part-*.parquet'``), read with pyarrow a row group at a time.

A point's ``line`` is its row's number, 1-based, across the files in name order. The needed variables must
be number columns (floats, integers; decimals are refused: their exact digits do not survive float64); a
null or a non-finite value is refused with its row, as a CSV row's is. Other columns pass through, as
JSON Lines' do (their values typed as Arrow holds them: numbers, strings, booleans, null). Like a CSV file,
the input is checked whole before anything is computed (the variables' columns only), so a bad row is an
error up front and ``total`` is known; memory is bounded by the chunk size.
"""

from __future__ import annotations

import glob
import math
import os
from typing import Iterator

from gradcli.expression.sources.files import os_reason
from gradcli.expression.sources.messages import Where, both_message, escape, missing_message, show
from gradcli.expression.sources.shapes import Needs, PointChunk, PointSource

SUFFIXES = (".parquet", ".parq", ".pq")
_GLOB = set("*?[")


def is_parquet(spec: str) -> bool:
    """Whether ``--points`` names Parquet: a file or a glob with a Parquet suffix, or a folder."""
    return spec.lower().endswith(SUFFIXES) or os.path.isdir(spec)


def parquet_files(spec: str, where: Where) -> list[str]:
    """The files ``spec`` names, in name order (a folder: its Parquet files, recursively, hidden and
    ``_``-prefixed ones left out, as Spark's ``_SUCCESS`` and ``_metadata`` are)."""
    if os.path.isdir(spec):
        found = []
        for folder, subfolders, names in os.walk(spec):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "_")))
            found += [os.path.join(folder, n) for n in names
                      if n.lower().endswith(SUFFIXES) and not n.startswith((".", "_"))]
        if not found:
            raise where.at(None, "is a directory with no Parquet file (*.parquet) in it: give a CSV, JSON Lines "
                                 "or Parquet file, or a folder of Parquet files")
        return sorted(found)
    if _GLOB & set(spec) and not os.path.exists(spec):
        found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
        if not found:
            raise where.at(None, "matches no file")
        return found
    try:
        os.stat(spec)
    except OSError as exc:
        raise where.at(None, os_reason(exc)) from None
    return [spec]


def _pyarrow(where: Where):
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:  # pragma: no cover - a dependency of gradcli
        raise where.at(None, "reading Parquet needs pyarrow, which is not installed (pip install pyarrow)") from None
    return pyarrow


class ParquetSource(PointSource):
    format = "parquet"

    def __init__(self, spec: str, where: Where, needs: Needs, chunk_size: int):
        self.label = where.label
        self.variable_names = list(needs.names)
        self._where = where
        self._needs = needs
        self._chunk_size = chunk_size
        pa = _pyarrow(where)
        self._files = parquet_files(spec, where)
        self._opened = [self._open(pa, path) for path in self._files]
        schema = self._opened[0][1].schema_arrow
        for path, parquet in self._opened[1:]:
            if set(parquet.schema_arrow.names) != set(schema.names):
                raise Where(where.option, escape(path)).at(
                    None, f"has other columns than {escape(self._files[0])}: "
                          f"{', '.join(parquet.schema_arrow.names)} against {', '.join(schema.names)}")
        names = schema.names
        for v in needs.names:
            if v in names and v in needs.fixed:
                raise where.at(None, both_message(v, "column", needs.fixed_option))
        missing = [v for v in needs.from_input if v not in names]
        if missing:
            raise where.at(None, missing_message("column", missing, needs.fixed_option))
        for v in needs.from_input:
            kind = schema.field(v).type
            if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
                raise where.at(None, f"column {show(v)} holds {kind}, not numbers (float or integer)")
        self.field_names = [n for n in names if n not in needs.needed]
        self.total = sum(p.metadata.num_rows for _, p in self._opened)
        for _ in self._chunks(with_fields=False):  # the variables' columns checked whole, up front
            pass

    def _open(self, pa, path: str):
        try:
            return path, pa.parquet.ParquetFile(path)
        except OSError as exc:
            raise Where(self._where.option, escape(path)).at(None, os_reason(exc)) from None
        except pa.ArrowException as exc:
            raise Where(self._where.option, escape(path)).at(None, f"is not a Parquet file ({_reason(exc)})") from None

    def chunks(self) -> Iterator[PointChunk]:
        return self._chunks(with_fields=True)

    def _chunks(self, *, with_fields: bool) -> Iterator[PointChunk]:
        import numpy as np

        needs, row = self._needs, 0
        columns = list(needs.from_input) + (self.field_names if with_fields else [])
        for path, parquet in self._opened:
            where = self._where if len(self._files) == 1 else Where(self._where.option, escape(path))
            try:
                batches = parquet.iter_batches(batch_size=self._chunk_size, columns=columns or None,
                                               use_threads=False)
                for batch in batches:
                    n = batch.num_rows
                    values = {}
                    for v in needs.names:
                        if v in needs.fixed:
                            values[v] = np.full(n, needs.fixed[v], dtype=np.float64)
                        else:
                            values[v] = self._column(batch.column(v), v, row, where)
                    lines = list(range(row + 1, row + n + 1))
                    if with_fields and self.field_names:
                        passed = batch.select(self.field_names).to_pylist()
                        fields = [{k: _plain(x) for k, x in r.items()} for r in passed]
                    else:
                        fields = [{} for _ in range(n)]
                    row += n
                    if n:
                        yield PointChunk(values, fields, lines)
            except OSError as exc:
                raise where.at(None, _reason(exc)) from None

    def _column(self, column, name: str, row: int, where: Where):
        import numpy as np

        if column.null_count:
            first = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise where.at(row + first + 1, f"{name}: null is not a number")
        values = column.to_numpy(zero_copy_only=False)
        as_float = values.astype(np.float64)
        if values.dtype.kind in "iu":
            lost = np.flatnonzero(as_float.astype(values.dtype) != values) if values.size else []
            if len(lost):
                i = int(lost[0])
                raise where.at(row + i + 1, f"{name}: {values[i]} has more digits than float64 holds")
        bad = np.flatnonzero(~np.isfinite(as_float))
        if len(bad):
            i = int(bad[0])
            raise where.at(row + i + 1, f"{name}: {as_float[i]} is not a finite number")
        if needs_check := self._needs.dtype != "float64":
            for i, value in enumerate(as_float.tolist()):
                if needs_check and (misfit := self._needs.misfit(name, value)):
                    raise where.at(row + i + 1, misfit)
        return as_float


def _plain(value):
    """A pass-through value as JSON can hold it (NaN and the infinities as null, as in JSON Lines)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # dates, decimals, lists: as text


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
