"""``--engine dask`` from the installed command: a real LocalCluster (2 worker processes) gives the bytes the
local engine gives, in input order, for every format; a worker killed mid-run costs a retry of its chunk,
never a lost or doubled row. Real subprocess runs: the cluster's workers are processes of their own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hang_guard import HANG_S

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow.parquet")

ROWS = 3000


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "points.csv"
    path.write_text("id,x,y\n" + "".join(f"{i},{i / 300 - 5},{(i % 17) / 4 - 2}\n" for i in range(ROWS)))
    return path


def gradcli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("argv", [
    ["grad", "x**2*y + sin(x*y)", "-m", "tape,fd", "-f", "csv"],
    ["hessian", "x**2*y", "-m", "symbolic,fd", "-f", "jsonl"],
    ["eval", "log(x)*y", "-f", "json"],
], ids=["grad-csv", "hessian-jsonl", "eval-json"])
def test_the_dask_engine_writes_the_local_engines_bytes(points, argv):
    local = gradcli(*argv, "--points", str(points), "--batch-size", "400")
    dask = gradcli(*argv, "--points", str(points), "--batch-size", "400", "--engine", "dask", "--workers", "2")
    assert local.returncode == dask.returncode and local.returncode in (0, 1), dask.stderr
    assert dask.stdout == local.stdout
    assert dask.stderr.splitlines()[-1] == local.stderr.splitlines()[-1]  # the summary line


def test_parquet_output_is_the_same_table(points, tmp_path):
    argv = ["grad", "x**2*y", "-m", "tape,fd", "-f", "parquet", "--points", str(points), "--batch-size", "500"]
    assert gradcli(*argv, "--output", str(tmp_path / "local.parquet")).returncode == 0
    run = gradcli(*argv, "--output", str(tmp_path / "dask.parquet"), "--engine", "dask", "--workers", "2")
    assert run.returncode == 0, run.stderr
    assert pa.read_table(tmp_path / "dask.parquet").equals(pa.read_table(tmp_path / "local.parquet"))


def test_a_reduced_gradient_has_the_local_engines_bits(points):
    argv = ["grad", "(w0 + w1*x - y)**2", "--at", "w0=0.5,w1=-1", "--wrt", "w0,w1", "--reduce", "mean",
            "-m", "symbolic,tape,fd", "-f", "json", "--points", str(points)]
    local = gradcli(*argv, "--batch-size", "3000")
    dask = gradcli(*argv, "--batch-size", "250", "--engine", "dask", "--workers", "2")
    assert local.returncode == dask.returncode == 0, dask.stderr
    assert dask.stdout == local.stdout  # exact sums: the partitioning cannot show


def test_a_worker_killed_mid_run_loses_and_doubles_no_row(points, tmp_path):
    argv = ["grad", "x*y", "-m", "tape,fd", "-f", "csv", "--points", str(points), "--batch-size", "300"]
    local = gradcli(*argv)
    killed = gradcli(*argv, "--engine", "dask", "--workers", "2",
                     env={"GRADCLI_TEST_DASK_EXIT": f"{tmp_path}:3"})
    assert (tmp_path / "chunk-3").exists()  # the hook did end a worker on chunk 3's first attempt
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout == local.stdout
    ids = [line.split(",")[0] for line in killed.stdout.splitlines()[1:]]
    assert ids == [str(i) for i in range(ROWS)]


def test_dask_options_belong_to_the_dask_engine():
    run = gradcli("grad", "x**2", "--grid", "x=0:1:3", "--workers", "2")
    assert run.returncode == 2 and "--workers is for the Dask engine: add --engine dask" in run.stderr
