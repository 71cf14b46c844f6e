"""Where batch points come from: ``--points FILE`` (CSV or JSON Lines, ``-`` for stdin) and ``--grid SPEC``.

Pure core: no typer, rich, sympy or tensorflow here; NumPy is imported when chunks are built.

A :class:`PointSource` hands out :class:`PointChunk` s of at most ``chunk_size`` points: one float64
array per needed variable (values fixed by ``--at`` broadcast), the pass-through columns of every
point, and the line each point came from. Memory is bounded by ``chunk_size``, never by the input:

- a FILE is read twice. :func:`open_points` validates it in a first streaming pass that keeps
  nothing, so a bad row anywhere is a usage error (exit 2) before anything is computed, and
  ``total`` is known; :meth:`PointSource.chunks` then reads it again.
- STDIN (or a pipe named as a file) is read once and validated as it is read: the good rows before
  a bad line come out as a last, partial chunk, and the next iteration raises the error for the bad
  line, so whatever the caller wrote for the earlier rows stays valid.
- a GRID is generated chunk by chunk from the flat index range (``numpy.unravel_index``).

Every error is a :class:`gradcli.errors.UsageError` worded ``"{option} {label}:{line}: what is wrong"``;
text echoed from the input is shortened and has its non-printable characters escaped.

The package: ``shapes`` (PointChunk, PointSource, Needs), ``messages`` (error wording, escaping),
``numbers`` (number and constant-expression parsing), ``lines`` (the line reader, sniffing),
``csv_reader`` and ``jsonl_reader`` (lines -> validated rows), ``files`` (file and stream sources,
chunking), ``grid`` (--grid); :func:`open_points` is here.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, TextIO

from gradcli.expression.sources.files import FileSource, StreamSource, format_by_extension, os_reason
from gradcli.expression.sources.grid import MAX_GRID_POINTS, grid_points
from gradcli.expression.sources.lines import MAX_LINE_LENGTH, Lines
from gradcli.expression.sources.messages import SHOW_CHARS, Where, escape  # noqa: F401 (SHOW_CHARS: re-exported)
from gradcli.expression.sources.numbers import parse_number  # noqa: F401 (re-exported)
from gradcli.expression.sources.parquet import ParquetSource, is_parquet
from gradcli.expression.sources.shapes import Needs, PointChunk, PointSource
from gradcli.errors import UsageError
from gradcli.streams import stdin_refusal

if TYPE_CHECKING:  # pragma: no cover
    from gradcli.expression.points import Point

__all__ = ["MAX_GRID_POINTS", "PointChunk", "PointSource", "grid_points", "open_points"]


# open_points is defined here, not in ``files``, because it looks ``open`` and MAX_LINE_LENGTH up in
# this module's namespace: patching them on gradcli.expression.sources (an unreadable file, a short line
# limit) reaches the code that opens and reads the input.
def open_points(spec: str, *, variables: list[str], fixed: "Point | None" = None,
                chunk_size: int = 4096, stdin: TextIO | None = None, option: str = "--points",
                fixed_option: str | None = "--at", dtype: str = "float64") -> PointSource:
    """The points of a CSV or JSON Lines file, of Parquet (a file, a folder of them, a glob), or of stdin for
    ``-``.

    A regular file is validated completely here (so ``total`` is known and any bad row is a
    UsageError now); stdin and pipes are validated as ``chunks()`` reads them. ``fixed_option``: the
    option that fixes the variables ``fixed`` gives, named in errors (None: the command has no such
    option, and errors do not suggest one). ``dtype``: a value it cannot hold (float32: beyond 3.4e38,
    or nonzero and rounding to 0) is a usage error naming its line, as ``--at`` refuses it.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    needs = Needs(variables, fixed, fixed_option, dtype)
    if spec == "-":
        where = Where(option, "<stdin>")
        stream = sys.stdin if stdin is None else stdin
        return StreamSource(Lines.from_text(stream, where, max_length=MAX_LINE_LENGTH), where, needs, chunk_size)
    if not spec.strip():
        raise UsageError(f"{option} is empty: give a CSV or JSON Lines file, or - for stdin")
    where = Where(option, escape(spec))
    if is_parquet(spec):
        return ParquetSource(spec, where, needs, chunk_size)
    try:
        f = open(spec, "rb")
    except OSError as exc:
        raise where.at(None, os_reason(exc)) from None
    try:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise where.at(None, "is a directory, not a file")
        refusal = stdin_refusal(spec, f.fileno())
        if refusal:
            raise where.at(None, refusal)
        if not stat.S_ISREG(mode):  # a pipe (<(cmd), /dev/stdin): it cannot be read twice
            return StreamSource(Lines.from_binary(f, where, max_length=MAX_LINE_LENGTH), where, needs, chunk_size,
                                by_extension=format_by_extension(spec), close=f.close)
        with f:
            return FileSource(spec, where, needs, chunk_size, f, max_line_length=MAX_LINE_LENGTH)
    except OSError as exc:
        f.close()
        raise where.at(None, os_reason(exc)) from None
    except BaseException:
        f.close()
        raise
