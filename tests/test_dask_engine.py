"""gradcli.dask on a real distributed cluster (two worker processes, one thread each): the rows equal
gradcli.api's columns for the same points bit for bit, for 1, 2 and 7 partitions; the frame's other columns,
its order and its index are kept; a worker killed mid-run still gives every row exactly once."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import gradcli.api as api  # noqa: E402
import gradcli.dask as gdask  # noqa: E402
from gradcli.errors import ParseError, UsageError  # noqa: E402

PARTITIONS = (1, 2, 7)


@pytest.fixture(scope="module")
def client():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                       worker_dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    n = 240
    x = rng.uniform(-2, 2, n)
    x[[3, 50, 111]] = [1e-20, 0.0, -3e-18]  # the exact fallback (cancellation near 0), and log(x)'s pole
    return pd.DataFrame({"id": [f"p{i}" for i in range(n)], "x": x, "y": rng.uniform(-2, 2, n),
                         "k": np.arange(n, dtype=np.int64) * 3},
                        index=pd.Index(np.arange(1000, 1000 + n), name="row"))


def assert_bit_identical(got, want: dict) -> None:
    assert list(got.columns) == list(want)
    for name, column in want.items():
        values = got[name].to_numpy()
        if column.dtype.kind == "f":
            assert values.dtype == np.float64, name
            assert np.array_equal(values.view(np.int64), column.view(np.int64)), name  # NaN's bits too
        else:
            assert [str(v) for v in values] == [str(v) for v in column], name


def partitioned(frame, n):
    ddf = dd.from_pandas(frame, npartitions=n, sort=False)
    assert ddf.npartitions == n
    return ddf


@pytest.mark.parametrize("n", PARTITIONS)
def test_grad_equals_the_api_bit_for_bit(client, frame, n):
    expressions = ["(exp(x) - 1)/x*y", "log(x)*y**2"]
    out = gdask.grad(partitioned(frame, n), *expressions, method="symbolic,fd")
    got = out.compute()
    assert_bit_identical(got, api.grad_columns(expressions, frame, method="symbolic,fd"))
    # the input's order and index, a row per point and expression; the other columns as they came
    assert list(got.index) == list(np.repeat(frame.index, 2))
    assert list(got["id"]) == list(np.repeat(frame["id"], 2)) and got["k"].dtype == np.int64
    assert set(got["status"]) <= {"ok", "warning", "undefined"} and (got["status"] == "undefined").any()


@pytest.mark.parametrize("n", PARTITIONS)
def test_hessian_equals_the_api_bit_for_bit(client, frame, n):
    got = gdask.hessian(partitioned(frame, n), "x**2*sin(y) + exp(x*y)", method="symbolic,fd").compute()
    assert_bit_identical(got, api.hessian_columns("x**2*sin(y) + exp(x*y)", frame, method="symbolic,fd"))
    assert list(got.index) == list(frame.index)


@pytest.mark.parametrize("n", PARTITIONS)
def test_derivative_equals_the_api_bit_for_bit(client, frame, n):
    points = frame[["id", "x"]]
    got = gdask.derivative(partitioned(points, n), "(exp(x) - 1)/x", order=2, method="symbolic,fd").compute()
    assert_bit_identical(got, api.derivative_columns("(exp(x) - 1)/x", points, order=2, method="symbolic,fd"))
    assert got["symbolic_d1"].iloc[3] == 0.5  # x = 1e-20: the 30-digit value, in whichever partition


@pytest.mark.parametrize("n", PARTITIONS)
def test_eval_equals_the_api_bit_for_bit(client, frame, n):
    got = gdask.eval(partitioned(frame, n), "log(x) + y").compute()
    want = api.evaluate("log(x) + y", points=frame).columns()
    passed = {k: frame[k].to_numpy() for k in frame.columns if k not in ("x", "y")}
    assert_bit_identical(got, {**passed, **{k: v for k, v in want.items() if k not in passed}})


def test_tape_equals_the_api_bit_for_bit(client, frame):
    got = gdask.grad(partitioned(frame, 2), "sin(x)*y**3", method="tape,fd").compute()
    assert_bit_identical(got, api.grad_columns("sin(x)*y**3", frame, method="tape,fd"))

    def pools():
        import sys

        if "tensorflow" not in sys.modules:  # a worker that was given no partition of this request
            return None
        tf = sys.modules["tensorflow"]
        return (tf.config.threading.get_intra_op_parallelism_threads(),
                tf.config.threading.get_inter_op_parallelism_threads())

    loaded = [p for p in client.run(pools).values() if p is not None]
    assert loaded and set(loaded) == {(1, 1)}  # each worker's share: its one thread


def test_at_fixes_a_variable_the_frame_lacks(client, frame):
    points = frame[["id", "x"]]
    got = gdask.grad(partitioned(points, 2), "x*y**2", at={"y": 3}, method="symbolic,fd").compute()
    assert_bit_identical(got, api.grad_columns("x*y**2", points, at={"y": 3}, method="symbolic,fd"))


def test_meta_is_known_without_computing(client, frame):
    out = gdask.grad(partitioned(frame, 7), "x*y", method="symbolic,fd")
    assert list(out.columns)[:6] == ["id", "k", "x", "y", "value", "symbolic_dx"]
    assert out.dtypes["value"] == np.float64 and out.dtypes["k"] == np.int64
    assert dict(out.compute().dtypes) == dict(out.dtypes)


def test_bad_requests_are_refused_on_the_client(client, frame):
    with pytest.raises(ParseError):
        gdask.grad(partitioned(frame, 2), "x**")
    with pytest.raises(UsageError, match="column"):
        gdask.grad(partitioned(frame[["id"]], 2), "x*y")
    with pytest.raises(UsageError, match="Dask DataFrame"):
        gdask.grad(frame, "x*y")
    with pytest.raises(UsageError, match="--method"):
        gdask.grad(partitioned(frame, 2), "x*y", method="nope")


def test_a_worker_killed_mid_run_still_gives_every_row_once(client):
    # every point needs its 30-digit value (~1 ms each): partitions long enough to kill a worker in one
    n = 1000
    frame = pd.DataFrame({"id": np.arange(n), "x": np.linspace(1e-20, 1e-17, n)})
    out = gdask.grad(dd.from_pandas(frame, npartitions=6, sort=False), "(exp(x) - 1)/x", method="symbolic")
    pids = client.run(os.getpid)
    future = client.compute(out)
    deadline = time.monotonic() + 60
    while not any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    victim = next(addr for addr, tasks in client.processing().items() if tasks)
    os.kill(pids[victim], signal.SIGKILL)
    got = future.result(timeout=300)
    assert sorted(got["id"]) == list(range(n)) and list(got["id"]) == list(range(n))  # once each, in order
    assert (got["symbolic_dx"] == 0.5).all()
    assert client.run(os.getpid) != pids  # a worker was replaced (its nanny started another)
