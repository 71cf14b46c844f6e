"""The work estimate (gradcli.compute.work): a request too large to finish in reasonable time is refused
before anything is computed, alike for --grid, --points, stdin and the API; a long run shows a progress bar
on a terminal's stderr only."""

from __future__ import annotations

import io

import pytest

import gradcli.api
from gradcli.commands.common import OutputFormat, shows_progress, with_progress
from gradcli.compute import work
from gradcli.compute.batch.grad import GradBatch
from gradcli.errors import UsageError
from gradcli.limits import WORK_MAX_SECONDS


def many_variables(terms: int, variables: int) -> str:
    return " + ".join(f"x{i % variables}*sin(x{(i * 7 + 1) % variables})" for i in range(terms))


def fixed_at(first: int, last: int) -> str:
    return ",".join(f"x{i}=1" for i in range(first, last))


@pytest.fixture
def tiny_limit(monkeypatch):
    """A limit that a few hundred points of x*y pass past, so that the refusal is tested without a heavy
    request."""
    seconds = work.WorkEstimate("grad", 3, 2, ("symbolic", "tape", "fd")).seconds(100)
    monkeypatch.setattr(work, "WORK_MAX_SECONDS", seconds)
    return seconds


def test_the_estimate_grows_with_nodes_variables_points_and_methods():
    small = work.WorkEstimate("grad", 100, 10, ("fd",))
    assert work.WorkEstimate("grad", 200, 10, ("fd",)).seconds(1) > small.seconds(1)
    assert work.WorkEstimate("grad", 100, 20, ("fd",)).seconds(1) > small.seconds(1)
    assert work.WorkEstimate("grad", 100, 10, ("fd", "tape")).seconds(1) > small.seconds(1)
    assert small.seconds(2000) == pytest.approx(2000 * small.seconds(1))
    hessian = work.WorkEstimate("hessian", 100, 10, ("fd",))
    assert hessian.evaluations_per_point == 100 * 10 * 10 and hessian.seconds(1) > small.seconds(1)


def test_the_estimate_reads_the_core():
    core = GradBatch(["x*y + sin(z)"], wrt="x,y")
    estimate = work.estimate(core)
    assert (estimate.command, estimate.nodes, estimate.variables) == ("grad", 6, 2)  # Add, Mul, x, y, sin, z
    assert estimate.methods == ("symbolic", "tape", "fd")


def test_what_is_fast_today_passes():
    # one point of the largest expression and variables allowed; a million points of Rosenbrock
    work.WorkEstimate("grad", 5000, 1000, ("symbolic", "tape", "fd", "complex")).check(1)
    work.WorkEstimate("hessian", 5000, 100, ("symbolic", "tape", "fd")).check(1)
    work.WorkEstimate("grad", 17, 2, ("symbolic", "tape", "fd")).check(1_000_000)
    work.WorkEstimate("hessian", 17, 2, ("symbolic", "tape", "fd")).check(1_000_000)


def test_days_of_work_are_refused_with_the_numbers():
    with pytest.raises(UsageError) as caught:
        work.WorkEstimate("grad", 5000, 1000, ("symbolic", "tape", "fd")).check(1_000_000)
    message = str(caught.value)
    assert message.startswith("this request is about 5,000,000,000,000 node-variable-point evaluations "
                              "(5,000 nodes x 1,000 variables x 1,000,000 points, ~")
    assert "days on a typical machine): more than the limit of ~1 h; split the points (--points in parts), " \
           "use fewer --wrt variables, or fewer methods (-m ...)" in message


def test_duration_text():
    assert [work.duration_text(s) for s in (40, 600, WORK_MAX_SECONDS, 5 * 3600, 10 * 86400)] == \
        ["40 s", "10 min", "1 h", "5 h", "10 days"]


def test_a_large_grid_is_refused_before_anything_is_computed(invoke):
    # 100 variables, 400 nodes, 10^8 grid points: far past an hour, refused at once (exit 2, stdout empty)
    result = invoke("grad", many_variables(100, 20), "--grid", "x0=0:1:10000,x1=0:1:10000",
                    "--at", fixed_at(2, 20), "-f", "jsonl")
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("gradcli: error: this request is about ")
    assert "x 100,000,000 points" in result.stderr and "more than the limit" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_fewer_methods_or_points_pass(invoke, tiny_limit):
    refused = invoke("grad", "x*y", "--grid", "x=0:1:20,y=0:1:20", "-f", "jsonl")
    assert refused.exit_code == 2 and "400 points" in refused.stderr
    done = invoke("grad", "x*y", "--grid", "x=0:1:20,y=0:1:4", "-f", "jsonl")
    assert done.exit_code == 0, done.stderr
    assert len(done.stdout.splitlines()) == 80


def test_a_points_file_is_refused_up_front(invoke, tiny_limit, tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("x,y\n" + "".join(f"{i},{i}\n" for i in range(500)))
    result = invoke("grad", "x*y", "--points", str(path), "-f", "jsonl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "this request is about 3,000 node-variable-point evaluations (3 nodes x 2 variables x 500 points" \
        in result.stderr


def test_a_stream_is_refused_once_its_points_pass_the_limit(runner, tiny_limit):
    from gradcli.cli import app

    rows = "x,y\n" + "".join(f"{i},{i}\n" for i in range(500))
    result = runner.invoke(app, ["grad", "x*y", "--points", "-", "--batch-size", "40", "-f", "jsonl"],
                           input=rows, catch_exceptions=False)
    assert result.exit_code == 2
    assert "the first 120 points read are about 720 node-variable-point evaluations" in result.stderr
    assert len(result.stdout.splitlines()) == 80  # the chunks before, as a stream writes them


def test_the_api_refuses_alike(tiny_limit):
    with pytest.raises(UsageError, match="this request is about .* x 400 points"):
        gradcli.api.grad("x*y", grid="x=0:1:20,y=0:1:20")
    with pytest.raises(UsageError, match="more than the limit"):
        gradcli.api.hessian("x*y", points={"x": list(range(400)), "y": list(range(400))})
    assert not gradcli.api.grad("x*y", grid="x=0:1:5,y=0:1:5").failed
    # the columns API for Ray, Dask or Spark batches: a batch past the limit is refused alike
    with pytest.raises(UsageError, match="x 400 points"):
        gradcli.api.grad_columns("x*y", {"x": list(range(400)), "y": list(range(400))})
    assert len(gradcli.api.grad_columns("x*y", {"x": [1.0, 2.0], "y": [3.0, 4.0]})["x"]) == 2


def test_a_real_limit_refusal_through_the_api():
    with pytest.raises(UsageError, match="x 100,000,000 points"):
        gradcli.api.grad(many_variables(100, 20), grid="x0=0:1:10000,x1=0:1:10000", at=fixed_at(2, 20))


class FakeStream(io.StringIO):
    def __init__(self, terminal: bool):
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


@pytest.mark.parametrize("seconds, output, stderr_tty, stdout_tty, shown", [
    (60.0, OutputFormat.jsonl, True, False, True),  # a long run into a file, watched on a terminal
    (60.0, OutputFormat.table, True, True, True),  # a table is printed at the end: the bar goes first
    (60.0, OutputFormat.jsonl, True, True, False),  # records stream to the same terminal: no bar among them
    (60.0, OutputFormat.json, True, True, False),
    (60.0, OutputFormat.jsonl, False, False, False),  # stderr a pipe or a file: never
    (1.0, OutputFormat.jsonl, True, False, False),  # a quick run: no bar
    (None, OutputFormat.jsonl, True, False, False),  # a stream: its length is unknown
])
def test_when_a_progress_bar_shows(seconds, output, stderr_tty, stdout_tty, shown):
    assert shows_progress(seconds, output, stderr=FakeStream(stderr_tty), stdout=FakeStream(stdout_tty)) is shown


def test_the_progress_bar_counts_the_points_and_goes_away():
    from rich.console import Console

    terminal = FakeStream(True)
    console = Console(file=terminal, force_terminal=True, width=80)
    chunks = [[0] * 30, [0] * 30, [0] * 40]
    assert list(with_progress(chunks, 100, console=console)) == chunks
    assert "100/100" in terminal.getvalue()


def test_a_long_run_on_a_pipe_shows_no_bar(invoke, monkeypatch):
    import gradcli.commands.common as common

    monkeypatch.setattr(common, "PROGRESS_MIN_SECONDS", 0.0)  # every run is long; stderr is not a terminal
    result = invoke("grad", "x*y", "--grid", "x=0:1:3,y=0:1:3", "-f", "jsonl")
    assert result.exit_code == 0
    assert "\u2501" not in result.stderr and "9/9" not in result.stderr  # the bar's line and its count
    assert len(result.stdout.splitlines()) == 9
