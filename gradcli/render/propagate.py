"""``propagate``'s views of its report: the table (one point: a table per expression, the methods side by
side; many points: a row per point and expression), CSV and JSON Lines rows, and the JSON document.

Means and standard deviations are shown with 6 significant digits (Monte Carlo's are good to a few of them:
its standard errors are beside it), the standard errors with 2; the JSON has every digit."""

from __future__ import annotations

import json

from gradcli.errors import printable
from gradcli.render.common import stdout_console, to_csv, to_json
from gradcli.render.layout import Column, FittedTable, print_line, print_table
from gradcli.uncertainty.propagation import jsonl_record

LABELS = {"linear": "linear (exact)", "linear_tape": "linear (tape)", "linear_fd": "linear (fd)",
          "second_order": "second order", "monte_carlo": "Monte Carlo"}
METHODS = tuple(LABELS)
Z975 = 1.959963984540054  # the normal's 97.5% quantile
WHOLE = 12  # inputs shown by name on the inputs line


def fmt(x: float | None, digits: int = 6) -> str:
    if x is None:
        return "undefined"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def se(x: float | None) -> str:
    return "-" if x is None else "± " + fmt(x, 2)


def inputs_line(doc: dict, record: dict) -> str:
    parts = [f"{n} = {fmt(record['point'][n])} ± {fmt(record['sd'][n])}" for n in doc["inputs"][:WHOLE]]
    more = f", ... ({len(doc['inputs'])} inputs)" if len(doc["inputs"]) > WHOLE else ""
    return ", ".join(parts) + more


def propagate_table(doc: dict) -> None:
    """The one-point view: the inputs, then per expression its table, the shares, the interval and the
    verdict; several expressions: their covariance, linear and Monte Carlo."""
    console = stdout_console()
    print_line(console, f"[bold]inputs[/bold]  {printable(inputs_line(doc, doc))}")
    correlated = any(doc["input_covariance"][i][j] for i in range(len(doc["inputs"]))
                     for j in range(len(doc["inputs"])) if i != j)
    print_line(console, f"[bold]Monte Carlo[/bold]  {doc['samples']:,} {doc['distribution']} samples, seed "
                        f"{doc['seed']}{', correlated' if correlated else ''}; linear and second order: the "
                        f"quantiles of a normal")
    for r in doc["results"]:
        _expression_table(console, doc, r)
    if "covariance" in doc:
        for key, label in (("linear", "linear, J Σ Jᵀ"), ("monte_carlo", "Monte Carlo")):
            _matrix(console, doc["expressions"], doc["covariance"][key], f"covariance ({label})")


def _expression_table(console, doc: dict, r: dict) -> None:
    table = FittedTable([Column("method", "left", "bold"), Column("mean"), Column("sd"), Column("± mean"),
                         Column("± sd"), Column("2.5%"), Column("50%"), Column("97.5%")],
                        title=printable(r["expression"]))
    mc = r["monte_carlo"]
    for m in METHODS:
        mean, sd = r["mean"][m], r["sd"][m]
        if m == "monte_carlo":
            q = mc["quantiles"]
            table.add_row(LABELS[m], fmt(mean), fmt(sd), se(mc["se_mean"]), se(mc["se_sd"]), fmt(q["2.5%"]),
                          fmt(q["50%"]), fmt(q["97.5%"]))
            continue
        low = None if mean is None or sd is None else mean - Z975 * sd
        high = None if mean is None or sd is None else mean + Z975 * sd
        table.add_row(LABELS[m], fmt(mean), fmt(sd), "", "", fmt(low), fmt(mean), fmt(high))
    print_table(console, table)
    so = r["second_order"]
    if so is not None:
        source = "" if so["hessian"] == "symbolic" else " (the tape's Hessian)"
        print_line(console, f"[bold]second order[/bold]  mean shift ½tr(HΣ) = {fmt(so['mean_shift'])}, variance "
                            f"term {fmt(so['variance_term'])}{source}")
    iv = r["interval"]
    lower = "-inf" if iv["lower"] is None else repr(iv["lower"])
    upper = "inf" if iv["upper"] is None else repr(iv["upper"])
    extra = " (part of the box lies outside the domain)" if iv["undefined"] else ""
    print_line(console, f"[bold]interval[/bold] over ±{iv['k']:g} sd: [{lower}, {upper}]{extra}")
    shares = "; ".join(f"{printable(n)} {_share(s['linear'])} linear, {_share(s['second_order'])} second order"
                       for n, s in list(r["shares"].items())[:WHOLE])
    if shares:
        print_line(console, f"[bold]shares[/bold] of the variance: {shares}")
    print_line(console, f"[bold]verdict[/bold]  {printable(r['verdict']['text'])}")


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _matrix(console, names: list[str], matrix, title: str) -> None:
    if matrix is None:
        print_line(console, f"{title}: undefined")
        return
    table = FittedTable([Column("", "left", "bold")] + [Column(printable(n)) for n in names], title=title)
    for name, row in zip(names, matrix):
        table.add_row(printable(name), *(fmt(v) for v in row))
    print_table(console, table)


def propagate_many_table(doc: dict) -> None:
    """Many points: a row per point and expression."""
    console = stdout_console()
    several = len(doc["expressions"]) > 1
    columns = [Column("line"), Column("inputs", "left")] + ([Column("expression", "left")] if several else [])
    columns += [Column("linear mean"), Column("linear sd"), Column("2nd-order sd"), Column("MC mean"),
                Column("MC sd"), Column("verdict", "left")]
    table = FittedTable(columns, title=f"propagate: {doc['samples']:,} {doc['distribution']} samples a point")
    for record in doc["points"]:
        for r in record["results"]:
            v = r["verdict"]
            verdict = "holds" if v["linear_holds"] else f"unreliable ({v['blame']})" if v["blame"] else "unreliable"
            row = [str(record.get("line", "")), printable(_point_text(record))]
            row += [printable(r["expression"])] if several else []
            row += [fmt(r["mean"]["linear"]), fmt(r["sd"]["linear"]), fmt(r["sd"]["second_order"]),
                    fmt(r["mean"]["monte_carlo"]), fmt(r["sd"]["monte_carlo"]), verdict]
            table.add_row(*row)
    print_table(console, table)


def _point_text(record: dict) -> str:
    return ", ".join(f"{n}={fmt(v)}±{fmt(record['sd'][n])}" for n, v in record["point"].items())


def csv_rows(doc: dict, records: list[dict]) -> tuple[list[str], list[list]]:
    """A row per point and expression: the pass-through fields, each input's mean and sd, then each method's
    mean and sd, Monte Carlo's errors and quantiles, the interval, the verdict."""
    header: list[str] = []
    rows = []
    for record in records:
        for r in record["results"]:
            cells = [("line", record.get("line")), *(record.get("fields") or {}).items()]
            for n in doc["inputs"]:
                cells += [(n, record["point"][n]), (f"{n}_sd", record["sd"][n])]
            cells += [("expression", r["expression"]), ("value", r["value"])]
            for m in METHODS:
                cells += [(f"{m}_mean", r["mean"][m]), (f"{m}_sd", r["sd"][m])]
            mc = r["monte_carlo"]
            cells += [("monte_carlo_se_mean", mc["se_mean"]), ("monte_carlo_se_sd", mc["se_sd"])]
            cells += [(f"q{k.rstrip('%')}", v) for k, v in mc["quantiles"].items()]
            cells += [("interval_lower", r["interval"]["lower"]), ("interval_upper", r["interval"]["upper"]),
                      ("interval_undefined", str(r["interval"]["undefined"]).lower()),
                      ("linear_holds", str(r["verdict"]["linear_holds"]).lower()), ("blame", r["verdict"]["blame"]),
                      ("status", record["status"]), ("warnings", "; ".join(record["warnings"]))]
            if record.get("line") is None:
                cells = cells[1:]
            header = header or [k for k, _ in cells]
            rows.append([v for _, v in cells])
    return header, rows


def write(doc: dict, output: str, *, one_point: bool, file=None) -> None:
    """``doc`` (the report's to_dict()) in ``output`` format on ``file`` (default stdout)."""
    import sys

    out = file or sys.stdout
    records = [doc] if one_point else doc["points"]
    if output == "json":
        out.write(to_json(doc) + "\n")
    elif output == "jsonl":
        for record in records:
            out.write(json.dumps(jsonl_record(record), separators=(",", ":"), allow_nan=False) + "\n")
    elif output == "csv":
        header, rows = csv_rows(doc, records)
        out.write(to_csv(header, rows) if rows else "")
    elif one_point:
        propagate_table(doc)
    else:
        propagate_many_table(doc)
