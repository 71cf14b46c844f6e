"""Time plain `gradcli grad "x**2" --at x=3` calls through a warm daemon (GRADCLI_DAEMON=1) against cold ones,
and the client's start-up against `python -c pass`.

Whole processes. The script starts its own daemon in a private XDG_RUNTIME_DIR and stops it at the end.
Warm and cold calls alternate (one of each, twenty times), so drifting machine load hits both alike; then
twenty warm calls back to back, timed as a batch. The client's start-up: `python -c pass`, the client alone
with no daemon to reach (import, connect, refused), and a whole call that falls back to a cold run because
no daemon runs. Prints a Markdown table with the date, the CPUs and the load average.

    python bench/daemon.py [--calls 20] [--fallbacks 3]

Target: a plain warm call in about 0.1 s.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ARGS = ["grad", "x**2", "--at", "x=3"]
CLIENT_ONLY = ("import sys; from gradcli.daemon.client import run_through_daemon;"
               "sys.exit(0 if run_through_daemon(['grad', 'x**2', '--at', 'x=3']) is None else 1)")


def gradcli() -> str:
    return shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")


def environment(xdg: str, daemon: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADCLI_")}
    env.update({"XDG_RUNTIME_DIR": xdg, "COLUMNS": "100"})
    if daemon:
        env["GRADCLI_DAEMON"] = "1"
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed, done.stdout


def served(exe: str, xdg: str) -> int | None:
    out = subprocess.run([exe, "daemon", "status"], env=environment(xdg, False), capture_output=True,
                         text=True, timeout=60).stdout
    for line in out.splitlines():
        if line.startswith("requests served: "):
            return int(line.split(": ", 1)[1])
    return None


def ensure_daemon(exe: str, xdg: str) -> None:
    if served(exe, xdg) is None:  # not started yet, or stopped by an edit of a gradcli source file
        subprocess.run([exe, "daemon", "start"], env=environment(xdg, False), check=True, timeout=300,
                       stdout=subprocess.DEVNULL)


def warm_calls(exe: str, xdg: str, n: int, cold_out: bytes | None = None,
               cold_s: list[float] | None = None) -> tuple[list[float], float]:
    """n warm calls (each after a cold one when ``cold_s`` is given), all served by the daemon: a batch
    that a source edit interrupted (the daemon stops, calls run cold) is run again, up to three times."""
    for _ in range(3):
        ensure_daemon(exe, xdg)
        before, times, colds = served(exe, xdg), [], []
        start = time.perf_counter()
        for _ in range(n):
            if cold_s is not None:
                seconds, out = timed([exe, *ARGS], environment(xdg, False))
                colds.append(seconds)
            seconds, out = timed([exe, *ARGS], environment(xdg, True))
            if cold_out is not None and out != cold_out:
                raise SystemExit("a warm call's output differs from the cold one's")
            times.append(seconds)
        batch = time.perf_counter() - start
        if before is not None and served(exe, xdg) == before + n:
            if cold_s is not None:
                cold_s.extend(colds)
            return times, batch
        print("(the daemon stopped during a batch: a gradcli source file changed; again)", file=sys.stderr)
    raise SystemExit("the daemon did not serve a whole batch in three tries (source files keep changing)")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--fallbacks", type=int, default=3)
    args = parser.parse_args()
    exe, n = gradcli(), args.calls
    load_before = load()
    with tempfile.TemporaryDirectory(prefix="gradcli-bench-") as xdg, \
            tempfile.TemporaryDirectory(prefix="gradcli-bench-none-") as empty:
        os.chmod(xdg, 0o700)
        os.chmod(empty, 0o700)
        try:
            ensure_daemon(exe, xdg)
            _, cold_out = timed([exe, *ARGS], environment(xdg, False))
            cold: list[float] = []
            warm, _ = warm_calls(exe, xdg, n, cold_out, cold)
            _, warm_batch = warm_calls(exe, xdg, n, cold_out)
        finally:
            subprocess.run([exe, "daemon", "stop"], env=environment(xdg, False), timeout=120,
                           stdout=subprocess.DEVNULL)
        python = [timed([sys.executable, "-c", "pass"], environment(empty, False))[0] for _ in range(n)]
        client = [timed([sys.executable, "-c", CLIENT_ONLY], environment(empty, True))[0] for _ in range(n)]
        fallback = [timed([exe, *ARGS], environment(empty, True))[0] for _ in range(args.fallbacks)]
    cold_median, warm_median = statistics.median(cold), statistics.median(warm)
    rows = [
        (f"{n} warm calls, back to back (one batch)", warm_batch, f"{warm_batch / n:.3f} s a call"),
        (f"{n} warm calls, alternating with cold ones (sum)", sum(warm), f"median {warm_median:.3f} s"),
        (f"{n} cold calls (sum)", sum(cold), f"median {cold_median:.2f} s"),
        ("one cold call (median of the above)", cold_median, f"{cold_median / warm_median:.0f}x a warm call"),
        (f"fallback: `GRADCLI_DAEMON=1`, no daemon (median of {args.fallbacks})", statistics.median(fallback),
         f"{statistics.median(fallback) / cold_median:.2f}x a cold call"),
        (f"`python -c pass` (median of {n})", statistics.median(python), ""),
        (f"the client alone, no daemon to reach (median of {n})", statistics.median(client),
         f"+{(statistics.median(client) - statistics.median(python)) * 1000:.0f} ms over `python -c pass`"),
    ]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"`python bench/daemon.py --calls {n}` on {when}: {os.cpu_count()} CPUs, {platform.machine()}, "
          f"Python {platform.python_version()}; load average {load_before} before, {load()} after")
    print()
    print("| contender | wall time | |")
    print("|---|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds:.3f} s | {note} |")


if __name__ == "__main__":
    main()
