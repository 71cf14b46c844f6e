"""Growth of one process calling ``gradcli.descend`` again and again (a notebook's loop).

    python bench/descend_memory.py [--calls 300] [--optimizer adam]

The resident set after a warm-up call and after ``--calls`` more identical calls; the figure is the growth
per call. Compiled loops are reused between calls (gradcli.compute.descend.runner_pool); before that each
call traced a new ``tf.function`` and built a new Keras optimizer, which TensorFlow keeps.
"""

from __future__ import annotations

import argparse
import gc
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--optimizer", default="adam")
    args = parser.parse_args()
    import gradcli

    def call():
        gradcli.descend("(x-3)**2 + y**2", start="x=0,y=1", steps=20, optimizer=args.optimizer)

    call()
    gc.collect()
    before = resident_mb()
    for _ in range(args.calls):
        call()
    gc.collect()
    after = resident_mb()
    print(f"{args.calls} calls of descend -O {args.optimizer}: {before:.0f} -> {after:.0f} MB, "
          f"{(after - before) / args.calls * 1000:.1f} KB a call")


if __name__ == "__main__":
    main()
