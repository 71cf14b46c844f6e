"""Nothing is cut at any terminal width (issue 9, item 1), and the descend plot fits the terminal (item 8).

Each command runs once in process; its report (or a batch table's records) is kept and the table is
rendered again at 120, 80, 60, 40 and 20 columns (COLUMNS, which gradcli's consoles follow). Every number
of the command's JSON, formatted the way the table formats it, and every name and status must appear whole
in each rendering, with no '…'.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re

import pytest

from gradcli.render import common
from gradcli.render.layout import wrap_plain

WIDTHS = (120, 80, 60, 40, 20)
NO_SYMPY = ("--stationary-timeout", "0")
# JSON fields no table shows, on purpose: settings, the fd steps' full digits (shown to 3), the Hessian
# command's gradient (it is the critical-point test's input), fd's stencil accuracy, trajectories without
# --every, timings, estimates and the learning rate a warning suggests.
NOT_IN_TABLES = {"step", "gradient", "fd_accuracy", "history", "tol", "learning_rate", "max_steps", "momentum",
                 "fd_error_estimate", "fd_gradient_error_estimate", "complex_error_estimate", "seconds", "setup_seconds",
                 "every", "order",
                 "suggested_learning_rate"}
NAME_KEYS = {"status", "optimizer", "kind", "definiteness", "variable", "expression"}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def render(fn, *args, width: int) -> tuple[str, str]:
    """stdout and stderr of ``fn(*args)`` at ``width`` columns (COLUMNS, as a terminal would set it)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.setenv("COLUMNS", str(width))
        mp.delenv("NO_COLOR", raising=False)
        fn(*args)
    return out.getvalue(), err.getvalue()


def capture(invoke, module, name: str, *args: str):
    """Run the command in process with ``module.name`` (the table renderer) recording its report."""
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, name, seen.append)
        result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    assert len(seen) == 1, result.stderr
    return seen[0]


def shown_forms(x) -> set[str]:
    """The ways gradcli's tables write a number: every digit (number), errors (.2e), norms and steps (.3g),
    distances (.2g), basin labels (.6g), integers."""
    if isinstance(x, int):
        return {str(x)}
    return {common.number(x), common.error(x), f"{x:.3g}", f"{x:.2g}", f"{x:.6g}", f"{x:g}"}


def appears_whole(text: str, piece: str) -> bool:
    """``piece`` is in ``text`` with no digit, letter or point glued to either side (a cut would show)."""
    return re.search(r"(?<![\w.])" + re.escape(piece) + r"(?![\w.])", text) is not None


def json_items(doc, key: str = ""):
    """(key, value) for every number and string of a JSON document, skipping NOT_IN_TABLES."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in NOT_IN_TABLES:
                yield from json_items(v, k)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_items(v, key)
    elif doc is not None and not isinstance(doc, bool):
        yield key, doc


def assert_whole(text: str, doc: dict, width: int) -> None:
    assert "…" not in text
    missing = []
    for key, value in json_items(doc):
        if isinstance(value, (int, float)):
            if not any(appears_whole(text, form) for form in shown_forms(value)):
                missing.append((key, value))
        elif key in NAME_KEYS and key != "expression" and not appears_whole(text, value):
            missing.append((key, value))
    assert not missing, f"at {width} columns, not shown whole: {missing}\n{text}"


def assert_expression_whole(text: str, expression: str) -> None:
    """An expression may wrap at spaces and operators, never elsewhere: it is whole once lines are joined."""
    joined = re.sub(r"\s+", "", text)
    assert re.sub(r"\s+", "", expression) in joined


def assert_fits(text: str, width: int) -> None:
    """Every line fits, at 40 columns and more (below that a 20-digit number may be wider than a line)."""
    if width >= 40:
        too_wide = [line for line in text.splitlines() if len(line) > width]
        assert not too_wide, f"{width} columns: {too_wide}"


# ---------------------------------------------------------------------------------------------
# one point: grad, hessian, derivative, descend
# ---------------------------------------------------------------------------------------------
def _grad_document(doc: dict) -> str:
    """A one-point document (grad's, hessian's: the table is a view of it) without its status: at one point
    the status is what stderr's warnings say, not a table cell."""
    return json.dumps({k: v for k, v in doc.items() if k != "status"})


@pytest.fixture(scope="module")
def reports(invoke):
    from gradcli.render import derivative, descend, grad, hessian

    return {
        "grad": (grad.grad_detail, _grad_document, capture(
            invoke, grad, "grad_detail", "grad", "(x1+5)*x2**2", "x1*sin(x2)", "--at", "x1=2,x2=3",
            "-m", "symbolic,tape,fd")),
        "grad fd": (grad.grad_detail, _grad_document, capture(
            invoke, grad, "grad_detail", "grad", "x*y*z - cos(x)", "--at", "x=0.7,y=-1.3,z=2", "-m", "symbolic,fd")),
        "grad complex": (grad.grad_detail, _grad_document, capture(
            invoke, grad, "grad_detail", "grad", "x*sin(y)", "--at", "x=0.5,y=2", "-m", "symbolic,fd,complex")),
        "hessian": (hessian.hessian_detail, _grad_document, capture(
            invoke, hessian, "hessian_detail", "hessian", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "-m", "symbolic,fd")),
        "derivative": (derivative.derivative_detail, _grad_document, capture(
            invoke, derivative, "derivative_detail", "derivative", "sin(x)*exp(x)", "--at", "x=1", "--order", "3",
            "-m", "symbolic,fd")),
        "descend race": (descend.descend_table, descend.descend_json, capture(
            invoke, descend, "descend_table", "descend", "x**2 + 3*y**2", "--from", "x=3,y=1",
            "-o", "sgd,adam,rmsprop", "--steps", "300", *NO_SYMPY)),
        "descend single": (descend.descend_table, descend.descend_json, capture(
            invoke, descend, "descend_table", "descend", "(x-1)**2", "--from", "x=3", "-o", "sgd", "--steps", "40",
            "--every", "10", "--tol", "0", *NO_SYMPY)),
    }


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["grad", "grad fd", "grad complex", "hessian", "derivative", "descend race",
                                  "descend single"])
def test_every_number_of_the_json_appears_whole(reports, name, width):
    table, to_json, report = reports[name]
    out, err = render(table, report, width=width)
    doc = json.loads(to_json(report))
    assert_whole(out, doc, width)
    assert_fits(out, width)
    for expression in doc.get("expressions", [doc.get("expression")]):
        assert_expression_whole(out, expression)
    if width == 120 and name in ("grad fd", "hessian"):
        assert "gradcli: note" not in err  # a table that fits is shown as it is
    if width <= 40:
        assert "--format json" in err  # the note: how the table was laid out, how to see it whole


def test_the_race_says_each_status_whole_at_80_columns(reports):
    """The issue's cases: f = 2.2e-21 read as '2.208…' and the status as 'conve…'."""
    _, to_json, report = reports["descend race"]
    out, _ = render(reports["descend race"][0], report, width=80)
    for run in json.loads(to_json(report))["runs"]:
        assert appears_whole(out, run["status"]) and appears_whole(out, common.number(run["value"]))


def test_layouts_change_only_when_the_table_does_not_fit(reports):
    table, _, report = reports["grad"]
    wide, _ = render(table, report, width=200)
    narrow, narrow_note = render(table, report, width=40)
    assert "┃ formula" in wide and "formula:" not in wide  # one table, formulas inline
    assert "formula:" in narrow and "┃" not in narrow.split("gradient of")[1]  # records
    assert "one record per row" in narrow_note


@pytest.mark.parametrize("width", [120, 80, 40])
def test_tables_on_a_stdout_that_is_not_utf8(reports, width):
    """ASCII boxes, '+/-' for '±', the same numbers whole (was: internal error: UnicodeEncodeError)."""
    table, to_json, report = reports["grad"]
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii", write_through=True)
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(ascii_out), \
            contextlib.redirect_stderr(io.StringIO()):
        mp.setenv("COLUMNS", str(width))
        table(report)
    out = raw.getvalue().decode("ascii")
    assert "+/- " in out and "┃" not in out
    assert_whole(out, json.loads(to_json(report)), width)
    assert_fits(out, width)


# ---------------------------------------------------------------------------------------------
# many points: the batch tables of grad/hessian/derivative and descend's basins and starts
# ---------------------------------------------------------------------------------------------
def capture_sink(invoke, sink_class, *args: str):
    """Run the command with ``sink_class.finish`` recorded (and its records kept) instead of printed."""
    kept = {"records": []}
    write = sink_class.write

    def recording_write(self, batch):
        from gradcli.render.sinks import _records

        kept["records"] += _records(batch)
        write(self, batch)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sink_class, "write", recording_write)
        mp.setattr(sink_class, "finish", lambda self, *a: kept.update(sink=self, args=a))
        result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    return kept


@pytest.fixture(scope="module")
def batches(invoke):
    from gradcli.render import descend_batch, sinks

    return {
        "grad --grid": capture_sink(invoke, sinks.TableSink, "grad", "x*sin(y)", "--grid", "x=-1:1:2,y=0:3:2",
                                    "-m", "symbolic,fd"),
        "derivative --grid": capture_sink(invoke, sinks.TableSink, "derivative", "x*exp(-x)", "--grid", "x=-1:2:4",
                                          "--order", "2", "-m", "symbolic,fd"),
        "hessian --grid": capture_sink(invoke, sinks.TableSink, "hessian", "x**2*y", "--grid", "x=-1:1:2,y=0:2:2",
                                       "-m", "symbolic,fd"),
        "descend --grid": capture_sink(invoke, descend_batch.BasinsTableSink, "descend", "(x**2-1)**2 + y**2",
                                       "--grid", "x=-2:2:2,y=-1:1:2", "-o", "sgd,adam", "--lr", "0.05",
                                       "--steps", "200", *NO_SYMPY),
    }


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["grad --grid", "derivative --grid", "hessian --grid"])
def test_batch_tables_show_every_cell_whole(batches, name, width):
    kept = batches[name]
    sink = kept["sink"]
    out, _ = render(lambda: type(sink).finish(sink, *kept["args"]), width=width)
    assert "…" not in out
    assert_fits(out, width)
    assert len(sink.kept) == len(kept["records"]) == 4
    for row in sink.kept:
        for column, cell in row:
            assert appears_whole(out, cell), (width, column, cell, out)


@pytest.mark.parametrize("width", WIDTHS)
def test_descend_basins_and_starts_show_every_start_whole(batches, width):
    kept = batches["descend --grid"]
    sink = kept["sink"]
    out, _ = render(lambda: type(sink).finish(sink, *kept["args"]), width=width)
    assert "…" not in out
    assert_fits(out, width)
    runs = [(record["start"], r) for record in kept["records"] for r in record["runs"]]
    assert {r["optimizer"] for _, r in runs} == {"sgd", "adam"} and len(runs) == 8
    for start, r in runs:
        pieces = [r["optimizer"], r["status"], str(r["steps"]), common.number(r["value"])]
        pieces += [common.number(v) for v in [*start.values(), *r["final"].values()]]
        assert all(appears_whole(out, p) for p in pieces), (width, pieces, out)
    summary = kept["args"][0]
    for basin in summary["basins"].values():
        assert appears_whole(out, str(basin["starts"]))


# ---------------------------------------------------------------------------------------------
# eval and check print lines, not tables: their numbers are whole at any width too
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [80, 20])
def test_eval_and_check_print_whole_numbers(invoke, width):
    from typer.testing import CliRunner

    from gradcli.cli import app

    runner = CliRunner()
    env = {"COLUMNS": str(width)}
    value = runner.invoke(app, ["eval", "sin(x)*1e-20", "--at", "x=1.3"], env=env)
    exact = json.loads(runner.invoke(app, ["eval", "sin(x)*1e-20", "--at", "x=1.3", "-f", "json"]).stdout)["value"]
    assert value.exit_code == 0 and value.stdout.strip() == repr(exact)
    doc = json.loads(runner.invoke(app, ["check", "x**2*y", "--expect", "x=2*x*y+0.001", "--at", "x=1.5,y=-2.25",
                                         "-f", "json"], env=env).stdout)
    text = runner.invoke(app, ["check", "x**2*y", "--expect", "x=2*x*y+0.001", "--at", "x=1.5,y=-2.25"], env=env)
    assert text.exit_code == 1 and "…" not in text.stdout
    c = doc["counterexample"]
    for x in (c["expected"], c["exact"], c["difference"], *c["point"].values()):
        assert appears_whole(text.stdout, repr(x)), (x, text.stdout)


# ---------------------------------------------------------------------------------------------
# lines: wrapped at spaces and operators, never inside a number or a name
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [8, 12, 20, 30])
def test_wrapping_never_splits_a_number_or_a_name(width):
    text = "gradient of (x1+5)*x2**2 - 3.5e-10*sin(alpha_2)   (value -63.000000000001)"
    lines = wrap_plain(text, width)
    assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")
    words = re.findall(r"\d+\.?\d*(?:e[+-]?\d+)?|[A-Za-z_]\w*", text)
    for word in words:
        assert any(word in line for line in lines), (word, lines)
    assert any("-63.000000000001" in line for line in lines)  # the sign stays with its number
    assert all(len(line) <= max(width, len("-63.000000000001)") + 2) for line in lines)


# ---------------------------------------------------------------------------------------------
# the plot (item 8)
# ---------------------------------------------------------------------------------------------
class Terminal(io.StringIO):
    """A file that says it is a terminal (colour allowed), in an encoding of our choosing."""

    def __init__(self, encoding: str = "utf-8"):
        super().__init__()
        self._encoding = encoding

    def isatty(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return self._encoding


def plot(report, file, *, width: int = 60, no_color: bool = False) -> str:
    from gradcli.render.descend import descend_plot

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(width))
        if no_color:
            mp.setenv("NO_COLOR", "1")
        else:
            mp.delenv("NO_COLOR", raising=False)
        descend_plot(report, file=file)
    return file.getvalue()


@pytest.fixture(scope="module")
def long_race(invoke):
    from gradcli.render import descend

    return capture(invoke, descend, "descend_table", "descend", "x**2 + 3*y**2", "--from", "x=3,y=1",
                   "-o", "sgd,adam", "--steps", "830", "--tol", "0", "--plot", *NO_SYMPY)


def test_plot_respects_no_color(long_race):
    assert "\x1b[" in plot(long_race, Terminal())  # colour on a terminal...
    assert "\x1b[" not in plot(long_race, Terminal(), no_color=True)  # ...unless NO_COLOR says no


@pytest.mark.parametrize("width", [60, 40, 100])
def test_plot_follows_the_terminal_width(long_race, width):
    out = plot(long_race, Terminal(), width=width, no_color=True)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    assert max(len(line) for line in lines) >= width - 2  # and uses it


def test_plot_keeps_the_legend_off_the_data_and_counts_steps_in_integers(long_race):
    lines = plot(long_race, Terminal(), no_color=True).splitlines()
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    area = "\n".join(lines[top:bottom + 1])
    assert "sgd" not in area and "adam" not in area  # the legend is not drawn over the data
    legend = "\n".join(lines[bottom + 1:])
    assert "sgd (max_steps)" in legend and "adam (max_steps)" in legend
    ticks = lines[bottom + 1].split()
    assert ticks[0] == "0" and all(t.isdigit() for t in ticks), ticks  # 0 200 400, not 0.0e0 2.0e2
    assert int(ticks[-1]) >= 800


def test_plot_is_ascii_when_the_output_is_not_utf8(long_race):
    out = plot(long_race, Terminal("ascii"), no_color=True)
    out.encode("ascii")  # would raise on box drawing or a bullet marker
    assert "+--" in out and "|" in out
    assert "sgd (max_steps)" in out


def test_plot_on_a_non_utf8_stdout_end_to_end(tmp_path):
    """The console script with PYTHONIOENCODING=ascii (was: internal error: UnicodeEncodeError)."""
    import subprocess
    import sys

    gradcli = os.path.join(os.path.dirname(sys.executable), "gradcli")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "60", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([gradcli, "descend", "x**2+y**2", "--from", "x=3,y=1", "-o", "sgd,adam", "--steps", "50",
                           "--plot", *NO_SYMPY], env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout.decode("ascii")  # every byte is ASCII
    assert "sgd (" in out and "adam (" in out
    assert max(len(line) for line in out.splitlines()) <= 60


def test_starts_plot_fits_and_is_ascii_when_asked(batches):
    from gradcli.render.descend_batch import plot_starts

    kept = batches["descend --grid"]
    sink = kept["sink"]
    samples: dict = {}
    for record in kept["records"]:
        for r in record["runs"]:
            samples.setdefault(r["optimizer"], []).append((record["start"]["x"], record["start"]["y"], "elsewhere"))
    seen = {k: len(v) for k, v in samples.items()}
    file = Terminal("ascii")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "50")
        mp.setenv("NO_COLOR", "1")
        plot_starts(sink.header, kept["args"][0], samples, seen, file=file)
    out = file.getvalue()
    out.encode("ascii")
    assert max(len(line) for line in out.splitlines()) <= 50
    assert "\x1b[" not in out


# ---------------------------------------------------------------------------------------------
# the layouts themselves, on a made-up table
# ---------------------------------------------------------------------------------------------
def test_each_layout_in_turn_and_secondary_columns_sharing_one_column():
    from rich.console import Console

    from gradcli.render.layout import FORMULA, SECONDARY, Column, FittedTable, print_table

    table = FittedTable([Column("name", "left"), Column("formula", "left", role=FORMULA), Column("value"),
                         Column("error", role=SECONDARY, under="value"),
                         Column("estimate", role=SECONDARY, under="value")], title="made up")
    table.add_row("alpha", "2*alpha*beta + sin(alpha)/3", "-0.41614683654714246", "1.25e-13", "± 3.00e-12")
    layouts, texts = {}, {}
    for width in (100, 60, 40, 20):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            layouts[width] = print_table(Console(file=out, width=width), table)
        texts[width] = out.getvalue()
        assert "…" not in texts[width]
        for cell in ("alpha", "-0.41614683654714246", "1.25e-13", "± 3.00e-12"):
            assert cell in texts[width], (width, cell, texts[width])
        assert_expression_whole(texts[width], "2*alpha*beta + sin(alpha)/3")
    assert layouts == {100: "table", 60: "formulas below", 40: "stacked", 20: "records"}
    assert "(1.25e-13)" in texts[40] and "(± 3.00e-12)" in texts[40]  # both under 'value'
