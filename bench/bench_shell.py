"""Time twenty lines piped through one `gradcli shell` against one plain call of the same command.

Whole processes: the shell reads the twenty lines from a pipe, as `gradcli shell < commands.txt` does.
Three kinds of line, each its own group: `check` (SymPy twice a line, no TensorFlow), `eval` (neither),
and `grad` with all three methods (SymPy, the tape, fd). Each round runs every contender once, in turn
(alternating, so drifting machine load hits all of them alike); the table shows the median wall time over
the rounds and the ratio to the one plain call of its group.

    python bench/bench_shell.py [--rounds 5] [--only check,eval,grad]

Targets: twenty `check` lines through the shell under 2x one plain `gradcli check`; twenty `grad` lines
under 1.5x one plain `gradcli grad`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

# Ten small expressions at a point; each group's twenty lines go through them twice.
EXPRESSIONS = [
    ("(x1+5)*x2**2", "x1=2,x2=3"), ("3*x**2+2*x-1", "x=1"), ("sin(x)*cos(y)", "x=1,y=2"),
    ("exp(-x**2)", "x=0.5"), ("log(1+x**2)", "x=2"), ("x*y*z", "x=1,y=2,z=3"), ("sqrt(x**2+y**2)", "x=3,y=4"),
    ("tanh(x)", "x=0.3"), ("x**3-3*x", "x=-2"), ("(x-1)**2+(y+2)**2", "x=0,y=0"),
]
# check: a hand derivative per expression (all right: every line proves and samples, exit 0)
CHECKS = [
    ('"(x1+5)*x2**2"', '-e x1=x2**2 -e "x2=2*x2*(x1+5)"'), ('"3*x**2+2*x-1"', '-e "x=6*x+2"'),
    ('"sin(x)*cos(y)"', '-e "x=cos(x)*cos(y)" -e "y=-sin(x)*sin(y)"'), ('"exp(-x**2)"', '-e "x=-2*x*exp(-x**2)"'),
    ('"log(1+x**2)"', '-e "x=2*x/(1+x**2)"'), ('"x*y*z"', '-e x=y*z -e y=x*z -e z=x*y'),
    ('"sqrt(x**2+y**2)"', '-e "x=x/sqrt(x**2+y**2)" --box 0.5:2'), ('"tanh(x)"', '-e "x=1-tanh(x)**2"'),
    ('"x**3-3*x"', '-e "x=3*x**2-3"'), ('"(x-1)**2+(y+2)**2"', '-e "x=2*(x-1)" -e "y=2*(y+2)"'),
]
GROUPS = {
    "check": [f"check {e} {expect}" for e, expect in CHECKS * 2],
    "eval": [f'eval "{e}" --at {at}' for e, at in EXPRESSIONS * 2],
    "grad": [f'grad "{e}" --at {at}' + (" -f json" if i % 2 else "") for i, (e, at) in enumerate(EXPRESSIONS * 2)],
}


def gradcli() -> str:
    return shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")


def time_once(cmd: list[str], stdin_text: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin_text, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr}")
    return elapsed


def contenders(exe: str, groups: list[str]) -> dict[str, tuple[str, list[str], str | None]]:
    """name: (group, command, stdin)."""
    out = {}
    for group in groups:
        lines = GROUPS[group]
        out[f"one plain gradcli {group}"] = (group, [exe, *shlex.split(lines[0])], None)
        out[f"gradcli shell, twenty {group} lines"] = (group, [exe, "shell"], "\n".join(lines) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="check,eval,grad", help="groups, comma-separated")
    args = parser.parse_args()
    groups = [g for g in args.only.split(",") if g]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise SystemExit(f"unknown group {unknown[0]!r}: choose from {', '.join(GROUPS)}")
    runs = contenders(gradcli(), groups)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (_, cmd, stdin_text) in runs.items():
            times[name].append(time_once(cmd, stdin_text))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{'contender':<36} {'median s':>9} {'vs one plain':>13}   "
          f"({args.rounds} rounds, {os.cpu_count()} CPUs, load average {load:.1f} at the end)")
    for name, (group, _, _) in runs.items():
        median = statistics.median(times[name])
        reference = statistics.median(times[f"one plain gradcli {group}"])
        print(f"{name:<36} {median:>9.2f} {median / reference:>12.2f}x")


if __name__ == "__main__":
    main()
