"""grad's records as JSON lines, written from the chunk's arrays through one template per chunk instead of
through a dict per point: a million points spend most of their time building dicts otherwise. A property
test holds the text equal, byte for byte, to the dict records' (gradcli.compute.batch.engine.json_line)."""

from __future__ import annotations

from gradcli.compute.batch import engine
from gradcli.results import shortest


class Parts:
    """One chunk's results (arrays), ready to become records: dicts, or JSON lines straight from the arrays."""

    def __init__(self, chunk, values, columns, errors, unconnected, steps, said, dtype, estimates=None,
                 complex_estimates=None, fd=None, complex_steps=None, tape_sum=None):
        self.chunk, self.values, self.columns, self.errors = chunk, values, columns, errors
        self.unconnected, self.steps, self.said, self.dtype = unconnected, steps, said, dtype
        self.estimates = estimates  # [T, P, n] fd's error estimates, or None
        self.complex_estimates = complex_estimates  # [T, P, n] the complex step's, or None
        self.complex_steps = complex_steps  # [T, P, n] the step each complex value was taken with, or None
        self.fd = fd  # _FdExtras, or None
        self.tape_sum = tape_sum  # [P][n] what tape.gradient([z1, z2, ...]) returns (several expressions), or None
        self._lists = None

    def lists(self, indices: list[int] | None = None):
        """(columns, errors, values, steps, fd's and the complex step's estimates) as nested Python lists, None
        where not finite: of every point (built once), or of ``indices`` alone, in that order (a chunk's few
        points with warnings need not convert the whole chunk)."""
        if indices is None:
            if self._lists is None:
                self._lists = self._as_lists(slice(None))
            return self._lists
        return self._as_lists(indices)

    def _as_lists(self, which):
        def points(a, axis=1):  # the points' axis: 1 of [T, P, ...], 0 of steps' [P, n]
            return a[:, which] if axis == 1 else a[which]

        return ({m: as_lists(points(c), self.dtype if m != "symbolic" else "float64")
                 for m, c in self.columns.items()},
                {m: as_lists(points(e), "float64") for m, e in self.errors.items()},
                as_lists(points(self.values), "float64"),
                points(self.steps, 0).tolist() if self.steps is not None else None,
                as_lists(points(self.estimates), "float64") if self.estimates is not None else None,
                as_lists(points(self.complex_estimates), "float64") if self.complex_estimates is not None
                else None)


def text_columns(array) -> list[list[str]]:
    """A [P, w] float array as w columns of JSON number texts (null where not finite): one orjson call."""
    import numpy as np
    import orjson

    size, width = array.shape
    if not size or not width:
        return [[] for _ in range(width)] if not size else []
    flat = orjson.dumps(np.ascontiguousarray(array), option=orjson.OPT_SERIALIZE_NUMPY).decode()
    cells = flat[2:-2].replace("],[", ",").split(",")
    return [cells[j::width] for j in range(width)]


def as_lists(a, dtype: str) -> list:
    """A float array as nested lists, None where it is not finite (strict JSON), float32 values with the
    digits float32 needs."""
    import numpy as np

    if dtype == "float64" and np.isfinite(a).all():
        return a.tolist()  # the common case, and ~10x faster than through an object array
    obj = a.astype(object)
    obj[~np.isfinite(a)] = None
    if dtype != "float64":
        finite = np.isfinite(a)
        obj[finite] = [shortest(float(x), dtype) for x in a[finite]]
    return obj.tolist()


def line_and_fields(chunk, k: int) -> str:
    """The record keys between the point and its results, as JSON text (as base_record writes them)."""
    text = "" if chunk.lines[k] is None else f',"line":{chunk.lines[k]}'
    if chunk.fields and chunk.fields[k]:
        import orjson

        try:
            text += ',"fields":' + orjson.dumps(chunk.fields[k]).decode()
        except orjson.JSONEncodeError:  # as json_line does: the standard encoder for what orjson cannot
            import json

            text += ',"fields":' + json.dumps(chunk.fields[k], separators=(",", ":"), allow_nan=False)
    return text


def json_lines(core, p: Parts) -> list[str]:
    """The records as JSON lines, written from column fragments through one template per chunk: the
    same text ``json_line`` gives for the dict record (a property test holds them equal byte for byte).
    One expression only; points with warnings go through their dicts."""
    import numpy as np
    import orjson

    size, wrt = p.values.shape[1], core.wrt
    # float32 results with float32's shortest digits as float64 numbers, which orjson writes as the dict
    # path does (orjson's own float32 text is positional: 0.0000017628644 against 1.7628644e-6)
    typed = {m: (c[0].astype(np.float32).astype(str).astype(np.float64)
                 if core.dtype == "float32" and m != "symbolic" else c[0]) for m, c in p.columns.items()}
    columns = text_columns(np.stack([p.chunk.values[v] for v in core.variables], axis=1))
    columns.append([line_and_fields(p.chunk, k) for k in range(size)])
    columns += text_columns(p.values[0][:, None])
    for m in p.columns:
        columns += text_columns(typed[m])
    for m in p.errors:
        columns += text_columns(p.errors[m][0])
    if p.estimates is not None:
        columns += text_columns(p.estimates[0])
    if p.complex_estimates is not None:
        columns += text_columns(p.complex_estimates[0])
        columns += text_columns(p.complex_steps[0])
    if p.steps is not None:
        columns += text_columns(p.steps)

    def obj(names: list[str]) -> str:
        return "{" + ",".join(f'"{n}":%s' for n in names) + "}"

    template = ('{"point":' + obj(core.variables) + '%s,"results":[{"expression":'
                + orjson.dumps(core.exprs[0].text).decode() + ',"value":%s,"gradient":{'
                + ",".join(f'"{m}":' + obj(wrt) for m in p.columns) + '},"error":{'
                + ",".join(f'"{m}":' + obj(wrt) for m in p.errors) + '},"unconnected":'
                + orjson.dumps(p.unconnected[0]).decode()
                + (',"fd_error_estimate":' + obj(wrt) if p.estimates is not None else "")
                + (',"complex_error_estimate":' + obj(wrt) + ',"complex_step":' + obj(wrt)
                   if p.complex_estimates is not None else "") + "}]"
                + (',"fd_step":' + obj(wrt) if p.steps is not None else "") + ',"status":"ok","warnings":[]}')
    lines = [template % row for row in zip(*columns)]
    if p.said:  # points with warnings: their records, as the dict path writes them
        slow = sorted(p.said)
        for k, record in zip(slow, core.dicts(p, slow)):
            lines[k] = engine.json_line(record)
    return lines
