"""Time twenty small `grad` commands through one `gradcli shell` against one plain `gradcli grad`.

Whole processes: the shell reads the twenty lines from a pipe, as `gradcli shell < commands.txt` does.
Each round runs every contender once, in turn (alternating, so drifting machine load hits all of them
alike); the table shows the median wall time over the rounds and the ratio to one plain `grad`.

    python bench/bench_shell.py [--rounds 5]

Target (issue 9, item 6): twenty commands through the shell take under 1.5x one plain `gradcli grad`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

# Twenty small grad commands, all three methods (SymPy, the tape, fd), tables and JSON.
EXPRESSIONS = [
    ("(x1+5)*x2**2", "x1=2,x2=3"), ("3*x**2+2*x-1", "x=1"), ("sin(x)*cos(y)", "x=1,y=2"),
    ("exp(-x**2)", "x=0.5"), ("log(1+x**2)", "x=2"), ("x*y*z", "x=1,y=2,z=3"), ("sqrt(x**2+y**2)", "x=3,y=4"),
    ("tanh(x)", "x=0.3"), ("x**3-3*x", "x=-2"), ("(x-1)**2+(y+2)**2", "x=0,y=0"),
]
COMMAND_LINES = [f'grad "{e}" --at {at}' + (" -f json" if i % 2 else "")
                 for i, (e, at) in enumerate(EXPRESSIONS * 2)]


def gradcli() -> str:
    return shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")


def time_once(cmd: list[str], stdin_text: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin_text, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    exe = gradcli()
    script = "\n".join(COMMAND_LINES) + "\n"
    contenders = {
        "one plain gradcli grad": ([exe, "grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3"], None),
        "gradcli shell, one grad line": ([exe, "shell"], COMMAND_LINES[0] + "\n"),
        "gradcli shell, twenty grad lines": ([exe, "shell"], script),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, (cmd, stdin_text) in contenders.items():
            times[name].append(time_once(cmd, stdin_text))
    reference = statistics.median(times["one plain gradcli grad"])
    print(f"{'contender':<36} {'median s':>9} {'vs one grad':>12}   ({args.rounds} rounds, {os.cpu_count()} CPUs)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<36} {median:>9.2f} {median / reference:>11.2f}x")


if __name__ == "__main__":
    main()
