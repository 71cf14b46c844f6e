"""``grad --reduce sum|mean``: the gradient of a loss over a dataset's rows. The sums are exact (checked
against Python's Fractions, in any order and grouping), so a dataset split into part files gives the same
bits; the numbers against a closed form worked out in exact rational arithmetic; the CLI's document is the
API's; refusals are one-line usage errors."""

from __future__ import annotations

import json
import math
import random
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gradcli.compute.reduce import ExactSum, Reduction

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

finite = st.floats(allow_nan=False, allow_infinity=False)


def exact_sum(values) -> Fraction:
    return sum((Fraction(v) for v in values), Fraction(0))


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=60), st.randoms(use_true_random=False))
@example([1e308, 1e308, -1e308], random.Random(0))  # overflows in float64 on the way, not in the end
@example([5e-324, 5e-324, 1.0, -1.0], random.Random(0))  # subnormals
@example([1.0, 1e100, 1.0, -1e100], random.Random(0))  # naive float summation gives 0.0, the sum is 2
@example([8.988465674311579e+307, 8.98846567431158e+307], random.Random(0))  # below 2**1024, rounds to inf
def test_the_sum_is_exact_and_rounded_once_in_any_order_and_grouping(values, rng):
    expected = exact_sum(values)
    whole = ExactSum()
    whole.add(values)
    assert whole.exact() == expected
    try:
        rounded = float(expected)
    except OverflowError:  # the exact sum rounds beyond float64's largest number
        rounded = math.inf if expected > 0 else -math.inf
    assert whole.value() == rounded
    shuffled = list(values)
    rng.shuffle(shuffled)
    parts = ExactSum()
    cut = sorted(rng.randrange(len(shuffled) + 1) for _ in range(3))
    for a, b in zip([0, *cut], [*cut, len(shuffled)]):
        parts.add(shuffled[a:b])
    assert parts.exact() == expected and parts.count == len(values)


def test_more_than_a_group_of_one_exponent_stays_exact():
    values = [float(2 ** 53 - 1)] * 5000  # 5000 mantissas of 53 bits: beyond int64 if summed at once
    total = ExactSum()
    total.add(values)
    assert total.exact() == Fraction(2 ** 53 - 1) * 5000


def test_a_missing_value_makes_the_sum_undefined():
    total = ExactSum()
    total.add([1.0, math.nan, 2.0])
    assert (total.value(), total.missing, total.count) == (None, 1, 3)


def test_the_variance_is_the_exact_sample_variance_of_the_rows():
    rows = [0.1, 0.7, -2.5, 1e-3, 3.0]
    reduction = Reduction(["w"])
    reduction.add({"w": np.array(rows[:2])})
    reduction.add({"w": np.array(rows[2:])})
    result = reduction.result("mean", len(rows))
    s1 = exact_sum(rows)
    s2 = exact_sum(v * v for v in rows)  # the squares as float64 computes them
    assert result["gradient"]["w"] == float(s1 / len(rows))
    assert result["variance"]["w"] == float((s2 - s1 * s1 / len(rows)) / (len(rows) - 1))
    assert result["largest_norm"] == 3.0


XS = [0.5, -1.25, 2.0, 3.0, -0.1, 1e-3, 7.5, -4.0]
YS = [1.0, -0.5, 4.5, 6.25, 0.75, 1.1, 15.0, -6.0]


@pytest.fixture
def data(tmp_path):
    pq.write_table(pa.table({"x": XS, "y": YS}), tmp_path / "all.parquet")
    (tmp_path / "parts").mkdir()
    for i in range(4):
        pq.write_table(pa.table({"x": XS[2 * i:2 * i + 2], "y": YS[2 * i:2 * i + 2]}),
                       tmp_path / "parts" / f"part-{i}.parquet")
    (tmp_path / "d.csv").write_text("x,y\n" + "".join(f"{x!r},{y!r}\n" for x, y in zip(XS, YS)))
    return tmp_path


LOSS = ["grad", "(w0 + w1*x - y)**2", "--at", "w0=0.5,w1=1.5", "--wrt", "w0,w1"]


def reduced(invoke, *args) -> dict:
    result = invoke(*args, "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_mean_gradient_is_the_closed_form_over_the_rows(data, invoke):
    doc = reduced(invoke, *LOSS, "--points", str(data / "d.csv"), "--reduce", "mean", "-m", "symbolic,tape,fd")
    w0, w1 = Fraction(0.5), Fraction(1.5)
    residuals = [w0 + w1 * Fraction(x) - Fraction(y) for x, y in zip(XS, YS)]
    exact = {"w0": 2 * sum(residuals) / len(XS), "w1": 2 * sum(r * Fraction(x) for r, x in zip(residuals, XS)) / len(XS)}
    for method in ("symbolic", "tape"):
        for v in ("w0", "w1"):
            assert math.isclose(doc["gradient"][method][v], float(exact[v]), rel_tol=1e-14), (method, v)
    for v in ("w0", "w1"):  # fd within its own estimate of the mean
        assert abs(doc["gradient"]["fd"][v] - float(exact[v])) <= doc["fd_error_estimate"][v]
        assert doc["error"]["fd"][v] <= doc["fd_error_estimate"][v]
    assert (doc["rows"], doc["reduce"], doc["parameters"]) == (8, "mean", {"w0": 0.5, "w1": 1.5})
    assert doc["warnings"] == [] and doc["largest_norm"]["symbolic"] > 0


def test_one_parquet_file_and_its_four_parts_give_the_same_document(data, invoke):
    whole = reduced(invoke, *LOSS, "--points", str(data / "all.parquet"), "--reduce", "sum")
    split = reduced(invoke, *LOSS, "--points", str(data / "parts"), "--reduce", "sum", "--batch-size", "3")
    from_csv = reduced(invoke, *LOSS, "--points", str(data / "d.csv"), "--reduce", "sum")
    assert whole == split == from_csv


def test_the_api_returns_the_clis_document(data, invoke):
    import gradcli

    cli = reduced(invoke, *LOSS, "--points", str(data / "d.csv"), "--reduce", "mean", "-m", "tape,fd")
    api = gradcli.grad("(w0 + w1*x - y)**2", at="w0=0.5,w1=1.5", wrt="w0,w1", points=str(data / "d.csv"),
                       reduce="mean", method="tape,fd")
    assert api.to_dict() == cli
    assert api.gradient["tape"] == cli["gradient"]["tape"] and api.variance == cli["variance"]
    assert "mean of the gradient" in str(api)


def test_the_table_shows_each_method_with_its_error(data, invoke):
    result = invoke(*LOSS, "--points", str(data / "d.csv"), "--reduce", "sum", "-m", "symbolic,tape,fd")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "sum of the gradient of (w0 + w1*x - y)**2 over 8 rows, at w0=0.5, w1=1.5 (exact sums)"
    assert any("fd ± estimate" in line for line in lines)
    assert lines[-1].startswith("largest per-example norm  symbolic ")


def test_a_row_where_the_gradient_is_undefined_makes_the_sum_undefined(tmp_path, invoke):
    (tmp_path / "p.csv").write_text("x\n1.0\n-2.0\n3.0\n")
    result = invoke("grad", "log(w*x)", "--at", "w=1", "--wrt", "w", "--points", str(tmp_path / "p.csv"),
                    "--reduce", "sum", "-m", "symbolic,tape", "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["gradient"]["symbolic"]["w"] is None
    assert any("so its sum is undefined" in w for w in doc["warnings"])


@pytest.mark.parametrize("args, message", [
    (["--at", "x=1", "--reduce", "sum"], "--reduce sums the gradient over the rows of --points"),
    (["--grid", "x=0:1:3", "--reduce", "median"], "--reduce"),
    (["--grid", "x=0:1:3", "--reduce", "sum", "-f", "csv"], "--reduce writes one result: -f table or -f json"),
])
def test_reduce_refusals_are_usage_errors(invoke, args, message):
    result = invoke("grad", "x**2", *args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_reduce_takes_one_expression(invoke):
    result = invoke("grad", "x**2", "x**3", "--grid", "x=0:1:3", "--reduce", "sum")
    assert result.exit_code == 2 and "--reduce takes one expression" in result.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
