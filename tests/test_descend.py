"""gradcli descend: the guide's two descents, Keras' optimizers, the guardrails and the outputs."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import os
import subprocess
import sys

import pytest

from generated_programs import run_generated

from gradcli.compute.descend import OPTIMIZERS, STATUSES

GUIDE = "3*x**2+2*x-1"
BOOTH = "(x+2*y-7)**2+(2*x+y-5)**2"
ROSENBROCK = "100*(y-x**2)**2+(1-x)**2"
EDGE = "(x-3)^2+10*(y+1)^2"  # lr 0.1 is exactly 2/λmax for the y direction
NO_SYMPY = ("--stationary-timeout", "0")


def runs_by_name(doc: dict) -> dict[str, dict]:
    return {r["optimizer"]: r for r in doc["runs"]}


def descend_core(expression: str, start: str, *, every=None, jit=False, progress_factory=None, **options):
    """One start through the core, as the CLI runs it (a batch of one): its record and kept trajectories."""
    from gradcli.compute.descend import plan_descent, start_chunk
    from gradcli.compute.descend.core import DescentCore

    plan = plan_descent(expression, start=start, **options)
    core = DescentCore(plan, stationary_time_limit=0, every=every, jit=jit, progress_factory=progress_factory)
    (record,) = core.compute(start_chunk(plan)).records()
    return record, core.trajectories


# ---------------------------------------------------------------------------------------------
# The guide's run
# ---------------------------------------------------------------------------------------------
def test_guide_run_manual_and_sgd_end_at_minus_one_third(invoke_json):
    doc = invoke_json("descend", GUIDE, "--from", "x=0", "--lr", "0.1", "--steps", "100", "--tol", "0",
                      "-o", "manual,sgd", "--every", "1", *NO_SYMPY)
    runs = runs_by_name(doc)
    for name in ("manual", "sgd"):
        assert runs[name]["steps"] == 100
        assert runs[name]["final"]["x"] == pytest.approx(-1 / 3, abs=1e-15)
        assert runs[name]["value"] == pytest.approx(-4 / 3, abs=1e-15)
    # the hand-written loop and Keras' SGD take identical steps, bit for bit
    assert doc["trajectory"]["manual"] == doc["trajectory"]["sgd"]
    assert [h["step"] for h in doc["trajectory"]["manual"]] == list(range(101))


def test_guide_run_in_float32_prints_the_guides_number(invoke_json):
    doc = invoke_json("descend", GUIDE, "--from", "x=0", "--steps", "100", "--tol", "0", "--dtype", "float32",
                      "-o", "manual,sgd", *NO_SYMPY)
    assert doc["dtype"] == "float32"
    for run in doc["runs"]:
        assert run["final"]["x"] == -0.3333333  # the guide's <tf.Variable ... numpy=-0.3333333>


def test_default_tolerance_converges_early_at_minus_one_third(invoke_json):
    doc = invoke_json("descend", GUIDE, "--from", "x=0", "--steps", "100", *NO_SYMPY)
    (run,) = doc["runs"]
    assert run["optimizer"] == "manual"
    assert run["status"] == "converged"
    assert run["steps"] < 100
    assert run["gradient_norm"] < doc["tol"] == 1e-10
    assert run["final"]["x"] == pytest.approx(-1 / 3, abs=1e-10)
    assert run["end_point_kind"] == "minimum"
    assert "trajectory" not in doc and doc["every"] is None  # only with --every


def test_huge_steps_still_end_promptly(invoke_json):
    doc = invoke_json("descend", GUIDE, "--steps", "1000000000000", "-o", "manual,adam", *NO_SYMPY)
    runs = runs_by_name(doc)
    assert runs["manual"]["status"] == "converged" and runs["manual"]["steps"] < 100
    assert runs["adam"]["status"] == "converged"


def test_default_start_is_zero_and_said_so(invoke):
    result = invoke("descend", GUIDE, *NO_SYMPY)
    assert result.exit_code == 0, result.stderr
    assert "starting at x=0" in result.stderr


# ---------------------------------------------------------------------------------------------
# Maximising, racing, test functions
# ---------------------------------------------------------------------------------------------
def test_maximize_climbs_and_reports_f(invoke_json):
    doc = invoke_json("descend", "1-(x-2)**2-(y+1)**2", "--from", "x=0,y=0", "--maximize", *NO_SYMPY)
    (run,) = doc["runs"]
    assert doc["maximize"] is True
    assert run["status"] == "converged"
    assert run["final"]["x"] == pytest.approx(2, abs=1e-9)
    assert run["final"]["y"] == pytest.approx(-1, abs=1e-9)
    assert run["value"] == pytest.approx(1.0, abs=1e-12)  # f itself, not -f
    assert run["end_point_kind"] == "maximum"


def test_race_of_several_optimizers_from_the_same_start(invoke_json):
    args = ("descend", BOOTH, "--from", "x=0,y=0", "--lr", "0.05", "--steps", "2000",
            "-o", "sgd,momentum,nesterov,adam,rmsprop")
    doc = invoke_json(*args, *NO_SYMPY)
    assert [r["optimizer"] for r in doc["runs"]] == ["sgd", "momentum", "nesterov", "adam", "rmsprop"]
    assert doc["start"] == {"x": 0.0, "y": 0.0}
    for run in doc["runs"]:
        assert run["status"] in STATUSES
        assert run["learning_rate"] == 0.05
    for name in ("sgd", "momentum", "nesterov", "adam"):
        run = runs_by_name(doc)[name]
        assert run["final"]["x"] == pytest.approx(1, abs=1e-3) and run["final"]["y"] == pytest.approx(3, abs=1e-3)


def test_every_optimizer_runs_in_the_compiled_loop():
    record, _ = descend_core("(x-1)**2+(y+2)**2", "x=0,y=0", optimizers="all", lr=0.05, steps=30)
    assert [r["optimizer"] for r in record["runs"]] == list(OPTIMIZERS)
    for run in record["runs"]:
        assert run["status"] in STATUSES
        assert run["value"] is not None and math.isfinite(run["value"])
        assert run["value"] < 5.0  # every optimizer went downhill from f(0, 0) = 5


def test_booth_with_sgd_reaches_1_3(invoke_json):
    doc = invoke_json("descend", BOOTH, "--from", "x=0,y=0", "-o", "sgd", "--lr", "0.05")
    (run,) = doc["runs"]
    assert run["status"] == "converged"
    assert run["final"]["x"] == pytest.approx(1, abs=1e-9)
    assert run["final"]["y"] == pytest.approx(3, abs=1e-9)
    nearest = run["nearest_stationary_point"]  # SymPy solved grad f = 0
    assert nearest["kind"] == "minimum"
    assert nearest["point"] == {"x": 1.0, "y": 3.0}
    assert nearest["value"] == 0.0
    assert nearest["distance"] < 1e-9


def test_rosenbrock_with_adam_reaches_1_1(invoke_json):
    doc = invoke_json("descend", ROSENBROCK, "--from", "x=-1.2,y=1", "-o", "adam", "--lr", "0.01",
                      "--steps", "20000", *NO_SYMPY)
    (run,) = doc["runs"]
    assert run["final"]["x"] == pytest.approx(1, abs=1e-3)
    assert run["final"]["y"] == pytest.approx(1, abs=1e-3)
    assert run["status"] == "converged"
    assert list(run["final"]) == ["x", "y"]  # --from's order, not the order of appearance


def heavy_ball(x: float, lr: float, mu: float, steps: int, nesterov: bool = False) -> list[float]:
    """Keras' SGD with momentum on f = x**2 (g = 2x), by hand in float64: v = mu*v - lr*g; x += v
    (Nesterov: x += mu*v - lr*g)."""
    xs, v = [x], 0.0
    for _ in range(steps):
        g = 2 * x
        v = mu * v - lr * g
        x = x + (mu * v - lr * g if nesterov else v)
        xs.append(x)
    return xs


def test_momentum_steps_in_float64():
    _, kept = descend_core("x**2", "x=1", optimizers="momentum,nesterov", steps=10, tol=0, every=1)
    for name, history in kept.items():
        expected = heavy_ball(1.0, 0.1, 0.9, 10, nesterov=name == "nesterov")
        got = [h.point["x"] for h in history]
        assert len(got) == 11
        for a, b in zip(got, expected):
            assert a == pytest.approx(b, abs=1e-15, rel=0)
    assert kept["momentum"][2].point["x"] == pytest.approx(0.46, abs=1e-15)  # not 0.46000000357627869


def test_keras_hyperparameters_are_exact_in_float64():
    from gradcli.compute.descend import CAST_HYPERPARAMETERS, make_optimizer, optimizer_hyperparameters
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    cast = 0
    for name in OPTIMIZERS[1:]:
        opt = make_optimizer(name, 0.1, 0.9, "float64")
        assert float(tf.cast(opt.learning_rate, tf.float64)) == 0.1
        for key, value in optimizer_hyperparameters(name, 0.9).items():
            if key in CAST_HYPERPARAMETERS:
                # what Keras' update steps do with them: ops.cast(self.beta_1, variable.dtype)
                assert float(tf.cast(getattr(opt, key), tf.float64)) == value, (name, key)
                cast += 1
            else:  # the others meet tensors only in arithmetic, which converts them to the tensor's dtype
                assert float(tf.constant(1.0, tf.float64) * getattr(opt, key)) == value, (name, key)
    assert cast >= 15


# ---------------------------------------------------------------------------------------------
# Guardrails
# ---------------------------------------------------------------------------------------------
def test_divergence_names_the_step_and_suggests_a_learning_rate(invoke, invoke_json):
    doc = invoke_json("descend", "x**4", "--from", "x=10", "--lr", "0.1", *NO_SYMPY, code=1)
    (run,) = doc["runs"]
    assert run["status"] == "diverged"
    assert run["stopped_at"] == run["steps"] == 3
    # f'' = 12 x**2 = 1200 at the start: 2/λmax = 1/600, half of it suggested
    assert run["suggested_learning_rate"] == pytest.approx(1 / 1200, rel=1e-2)
    result = invoke("descend", "x**4", "--from", "x=10", "--lr", "0.1", *NO_SYMPY)
    assert result.exit_code == 1
    assert "diverged at step 3" in result.stderr
    assert "--lr 0.000833" in result.stderr
    assert "Traceback" not in result.stderr


def test_not_finite_at_the_start(invoke_json):
    doc = invoke_json("descend", "log(x)", "--from", "x=-1", *NO_SYMPY, code=1)
    assert doc["runs"][0]["status"] == "diverged"
    assert doc["runs"][0]["steps"] == 0
    assert "start point" in doc["runs"][0]["message"]


def test_unbounded_below_is_reported(invoke):
    # An expression starting with "-" follows "--", or it reads as an option.
    result = invoke("descend", "--from", "x=1", "--format", "json", *NO_SYMPY, "--", "-x**2")
    assert result.exit_code == 1, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert run["status"] == "unbounded"
    assert run["steps"] < 1000  # stopped long before --steps
    result = invoke("descend", "--from", "x=1", "--steps", "1000000", *NO_SYMPY, "--", "-x**2")
    assert result.exit_code == 1
    assert "unbounded below" in result.stderr


def test_linear_runaway_is_reported_unbounded(invoke_json):
    doc = invoke_json("descend", "1-x-y", "--from", "x=1,y=1", *NO_SYMPY, code=1)
    assert doc["runs"][0]["status"] == "unbounded"


def test_starting_on_a_maximum_is_not_called_a_minimum(invoke):
    result = invoke("descend", *NO_SYMPY, "--", "-x**2")  # the gradient is 0 at the default start x=0
    assert result.exit_code == 0
    assert "maximum, not a minimum" in result.stderr


def test_maximize_advice_uses_the_curvature_of_minus_f(invoke):
    # -f = 10 x**2 has λmax = 20: 2/λmax = 0.1, half of it suggested (f's own Hessian has no positive curvature)
    result = invoke("descend", "--from", "x=1", "--maximize", "--lr", "1", "--steps", "100", "--format", "json",
                    *NO_SYMPY, "--", "-10*x**2")
    assert result.exit_code == 1, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert run["status"] == "diverged"
    assert run["suggested_learning_rate"] == 0.05
    assert "λmax = 20" in run["message"] and "no positive curvature" not in run["message"]


def test_oscillation_on_the_stability_edge_is_flagged(invoke, invoke_json):
    doc = invoke_json("descend", EDGE, "--from", "x=0,y=0", "--lr", "0.1", "--steps", "200", *NO_SYMPY)
    (run,) = doc["runs"]
    assert run["status"] == "oscillating"
    assert run["steps"] == 200
    assert run["final"]["x"] == pytest.approx(3, abs=1e-9)  # x converged; y bounces between 0 and -2
    assert run["suggested_learning_rate"] == pytest.approx(0.05)
    result = invoke("descend", EDGE, "--lr", "0.1", "--steps", "200", *NO_SYMPY)
    assert result.exit_code == 0
    assert "oscillating in y" in result.stderr and "--lr 0.05" in result.stderr
    # half that learning rate converges
    calm = invoke_json("descend", EDGE, "--lr", "0.05", "--steps", "2000", *NO_SYMPY)
    assert calm["runs"][0]["status"] == "converged"


@pytest.mark.parametrize("args, message", [
    (("--lr", "0"), "--lr"),
    (("--lr", "-0.1"), "--lr"),
    (("--lr", "nan"), "--lr"),
    (("--lr", "inf"), "--lr"),
    (("--steps", "0"), "--steps"),
    (("-o", "sgd,bogus"), "unknown optimizer 'bogus'"),
    (("--tol", "-1"), "--tol"),
    (("--from", "z=1"), "not a variable"),
    (("--momentum", "1.5", "-o", "momentum"), "--momentum"),
    (("--steps", "99999999999999999999"), "--steps"),
    (("--every", "99999999999999999999"), "--every"),
    (("--stationary-timeout", "inf"), "--stationary-timeout"),
    (("--stationary-timeout", "nan"), "--stationary-timeout"),
    (("--stationary-timeout", "1e300"), "--stationary-timeout"),
])
def test_usage_errors_exit_2(invoke, args, message):
    result = invoke("descend", GUIDE, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_out_of_range_numbers_are_usage_errors_with_show_code_too(invoke):
    for args in (("--steps", "99999999999999999999"), ("--stationary-timeout", "inf")):
        result = invoke("descend", GUIDE, *args, "--show-code")
        assert result.exit_code == 2, (result.stdout, result.stderr)
        assert "internal error" not in result.stderr and result.stdout == ""


def test_constant_expression_is_a_usage_error(invoke):
    result = invoke("descend", "2+3")
    assert result.exit_code == 2
    assert "no variables" in result.stderr


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------
def test_json_schema(invoke_json):
    doc = invoke_json("descend", GUIDE, "--from", "x=0", "--steps", "100", "--every", "10")
    assert doc["command"] == "descend"
    assert doc["expression"] == "3*x**2 + 2*x - 1"
    assert doc["start"] == {"x": 0.0}
    assert doc["dtype"] == "float64"
    (run,) = doc["runs"]
    assert set(run) >= {"optimizer", "learning_rate", "steps", "status", "final", "value", "gradient_norm",
                        "message", "stopped_at", "suggested_learning_rate", "nearest_stationary_point"}
    history = doc["trajectory"]["manual"]
    steps = [h["step"] for h in history]
    assert steps[:3] == [0, 10, 20] and steps[-1] == run["steps"]  # every K steps, and where it ended
    assert history[-1]["point"] == run["final"]
    assert doc["stationary_points"][0]["kind"] == "minimum"


def test_csv_with_every_is_the_trajectory(invoke):
    result = invoke("descend", BOOTH, "--from", "x=0,y=0", "-o", "sgd,adam", "--lr", "0.05", "--steps", "50",
                    "--every", "1", "--format", "csv", *NO_SYMPY)
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["optimizer", "learning_rate", "step", "x", "y", "value", "gradient_norm", "status"]
    sgd = [r for r in rows if r["optimizer"] == "sgd"]
    assert [int(r["step"]) for r in sgd] == list(range(51))
    assert float(sgd[0]["value"]) == 74.0  # f(0, 0) = 49 + 25
    assert sgd[-1]["status"] == "max_steps"


def test_trajectory_table_with_every(invoke):
    result = invoke("descend", GUIDE, "--from", "x=0", "--steps", "100", "--every", "5", *NO_SYMPY)
    assert result.exit_code == 0
    assert "every 5 steps" in result.stdout


def test_plot_goes_to_stdout_and_keeps_json_clean(invoke):
    result = invoke("descend", BOOTH, "-o", "sgd,adam", "--lr", "0.05", "--steps", "200", "--plot", *NO_SYMPY)
    assert result.exit_code == 0, result.stderr
    assert "sgd (" in result.stdout and "adam (" in result.stdout and "step" in result.stdout
    as_json = invoke("descend", BOOTH, "-o", "sgd", "--lr", "0.05", "--steps", "200", "--plot", "--format", "json",
                     *NO_SYMPY)
    json.loads(as_json.stdout)
    assert "sgd (" in as_json.stderr


def test_show_code_is_a_runnable_program(invoke, tmp_path):
    result = invoke("descend", GUIDE, "--from", "x=0", "--steps", "100", "--tol", "0", "-o", "manual,sgd",
                    "--show-code")
    assert result.exit_code == 0
    program = result.stdout
    ast.parse(program)
    assert "x.assign_sub(learning_rate * grads[0])" in program
    assert "optimizer.apply_gradients(zip(grads, [x]))" in program
    assert "@tf.function" in program
    printed = [line for line in run_generated(program).splitlines() if line.startswith("steps:")]
    assert printed == ["steps: 100 x = -0.3333333333333333 f = -1.3333333333333333"] * 2


def run_program(program: str, tmp_path) -> list[str]:
    return [line for line in run_generated(program).splitlines() if line.startswith("steps:")]


def test_show_code_renames_variables_that_clash_with_the_program(invoke, invoke_json, tmp_path):
    args = ("descend", "f**2+step", "--from", "f=1,step=2", "--steps", "100", "--tol", "0", "-o", "manual,sgd")
    result = invoke(*args, "--show-code")
    assert result.exit_code == 0, result.stderr
    assert "f -> f_, step -> step_" in result.stdout
    printed = run_program(result.stdout, tmp_path)
    doc = invoke_json(*args, *NO_SYMPY)
    assert len(printed) == 2
    for line, run in zip(printed, doc["runs"]):
        words = line.split()
        # steps: 100 f = <f> step = <step> f = <value>: the user's names label the numbers
        assert words[:3] == ["steps:", "100", "f"] and words[5] == "step"
        assert float(words[4]) == run["final"]["f"]
        assert float(words[7]) == run["final"]["step"] == pytest.approx(-8.0, abs=1e-12)
        assert float(words[10]) == run["value"]


def test_show_code_does_not_run_anything(invoke, monkeypatch):
    import gradcli.compute.descend.core as core

    def refuse(*args, **kwargs):
        raise AssertionError("--show-code ran the descent")

    monkeypatch.setattr(core, "run_starts", refuse)
    monkeypatch.setattr(core, "start_stationary_points", refuse)
    result = invoke("descend", "tape*z + print**2 + optimizer", "--from", "tape=1,z=2,print=3,optimizer=4",
                    "-o", "all", "--show-code")
    assert result.exit_code == 0, result.stderr
    ast.parse(result.stdout)
    assert result.stdout.count("optimizer = keras.optimizers.") == len(OPTIMIZERS) - 1


def test_momentum_program_matches_gradcli(invoke, invoke_json, tmp_path):
    args = ("descend", "(x-1)**2+3*(y+2)**2", "--steps", "50", "--tol", "0", "-o", "momentum,adam", "--lr", "0.05")
    result = invoke(*args, "--show-code")
    assert result.exit_code == 0, result.stderr
    printed = run_program(result.stdout, tmp_path)
    doc = invoke_json(*args, *NO_SYMPY)
    for line, run in zip(printed, doc["runs"]):
        words = line.split()
        assert float(words[4]) == pytest.approx(run["final"]["x"], abs=1e-15)
        assert float(words[7]) == pytest.approx(run["final"]["y"], abs=1e-15)


def test_sympy_search_is_stopped_at_its_time_limit(tmp_path):
    # SymPy's solve works on this system far longer than 1 s; the forked search is killed at the deadline
    # and the descent's own results stand. (A fresh interpreter: TensorFlow is not imported yet there.)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "gradcli", "descend", "x**7 + y**7 + z**7 - 3*x*y*z + x**2*y**3*z**4",
         "--from", "x=0.5,y=0.5,z=0.5", "--stationary-timeout", "1", "--format", "json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["stationary_points"] is None
    assert doc["runs"][0]["status"] == "converged"
    assert "did not solve grad f = 0 within 1 s" in done.stderr


# ---------------------------------------------------------------------------------------------
# The compiled loop in pieces: blocks (the calls between two rounds of tests) change nothing
# ---------------------------------------------------------------------------------------------
def test_runs_in_short_blocks_match_runs_in_long_ones(monkeypatch):
    from gradcli.compute.descend import loop

    calls = []

    def factory(name, total):
        return lambda done, total_: calls.append(done)

    common = dict(optimizers="manual,adam", lr=0.0001, steps=9_000, tol=0)
    whole, _ = descend_core("x**2+y**2", "x=1,y=-1", **common)  # blocks of 100, 200, 400, then 800 steps
    # Blocks of 8 steps (1,126 calls), a progress report every 3,000 steps or more, and every step kept
    monkeypatch.setattr(loop, "FIRST_BLOCK_STEPS", 8)
    monkeypatch.setattr(loop, "MAX_BLOCK_STEPS", 8)
    monkeypatch.setattr(loop, "PROGRESS_WORK", 3000)
    pieces, kept = descend_core("x**2+y**2", "x=1,y=-1", every=1, progress_factory=factory, **common)
    assert calls == [3000, 6000, 9000] * 2
    for one, chunked in zip(whole["runs"], pieces["runs"]):  # Adam's state too: no step is taken twice
        assert one["final"] == chunked["final"] and one["steps"] == chunked["steps"] == 9000
    for history in kept.values():
        assert [h.step for h in history] == list(range(9_001))  # no step lost or repeated across calls


def test_a_stall_inside_a_long_block_stops_where_short_blocks_stop_it(monkeypatch):
    # In float32 sgd's steps on (x - 1e4)**2 fall below x's precision at step 5,347 (as a plain graph; XLA's
    # rounding takes one step more), in the middle of a block of 800 steps (4,700 .. 5,499): the stall is dated
    # from the step the point stopped changing, whatever the block's length.
    from gradcli.compute.descend import loop

    options = dict(optimizers="sgd", lr=0.001, steps=20_000, tol=1e-30, dtype="float32")
    (long_run,) = descend_core("(x - 1e4)**2", "x=0", **options)[0]["runs"]
    monkeypatch.setattr(loop, "FIRST_BLOCK_STEPS", 8)
    monkeypatch.setattr(loop, "MAX_BLOCK_STEPS", 8)
    (short_run,) = descend_core("(x - 1e4)**2", "x=0", **options)[0]["runs"]
    assert long_run["steps"] == short_run["steps"] == 5347
    assert "stopped changing in float32 at step 5347" in long_run["message"]
    assert {**long_run, "seconds": None} == {**short_run, "seconds": None}


def test_infinite_start_value_is_said_plainly(invoke):
    result = invoke("descend", "log(x)", "--from", "x=0", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["runs"][0]["message"] == "f is infinite at the start point: choose another start"


def test_setup_is_shown_once_and_not_billed_to_the_first_run(invoke_json):
    """TensorFlow's one-time start (import, the loop's first tracing, Keras' first optimizer) is done before
    the race and reported once: the runs' seconds are their own (the first optimizer raced was billed ~2 s)."""
    doc = invoke_json("descend", "x**2", "--from", "x=1", "-o", "manual,sgd", "--steps", "5",
                      "--stationary-timeout", "0")
    assert doc["setup_seconds"] > 0
    assert all(run["seconds"] > 0 for run in doc["runs"])


def test_a_rule_s_custom_gradient_drives_the_loop_and_its_program(invoke, invoke_json, tmp_path):
    """--rule: the tape's gradient in the compiled loop is the rule's tf.custom_gradient, and --show-code
    defines the rule as that function; the program ends where gradcli does."""
    from gradcli.expression.tree import set_active_rules

    args = ("descend", "sq(x-3)+sq(y)", "--from", "x=0,y=1", "-o", "manual,adam", "--steps", "30", "--tol", "0",
            "--rule", "sq(u) = u**2; d/du = 2*u")
    try:
        doc = invoke_json(*args, *NO_SYMPY)
        set_active_rules([])
        result = invoke(*args, "--show-code")
    finally:
        set_active_rules([])
    assert result.exit_code == 0, result.stderr
    assert "@tf.custom_gradient\ndef rule_sq(u):" in result.stdout
    for line, run in zip(run_program(result.stdout, tmp_path), doc["runs"]):
        words = line.split()
        assert float(words[4]) == pytest.approx(run["final"]["x"], abs=1e-15)
    assert doc["runs"][0]["final"]["x"] == pytest.approx(3 - 3 * 0.8 ** 30, abs=1e-12)  # x_k = 3 - 3 (1 - 2 lr)^k


def test_a_wrong_rule_exits_1_before_descending(invoke):
    from gradcli.expression.tree import set_active_rules

    try:
        result = invoke("descend", "sq(x)", "--from", "x=1", "--rule", "sq(u) = u**2; d/du = 3*u")
    finally:
        set_active_rules([])
    assert result.exit_code == 1 and "rule sq is wrong" in result.stderr
