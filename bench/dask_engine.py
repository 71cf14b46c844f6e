"""gradcli.dask against the local engine: N points' grad (the CLI's -f csv columns) through gradcli.api in
this process, and through gradcli.dask on a LocalCluster (``--workers`` processes, one thread each), warm
(every worker has prepared the request); and gradcli.dask's own overhead per partition once warm.

    python bench/dask_engine.py --points 100000 --workers 2 --partitions 8

The input frame is persisted on the cluster first (the data is there, as a read_parquet's would be), and the
dask time is ``compute()``: the partitions computed and their rows gathered to this process as one pandas
DataFrame. Printed: seconds per run (median of ``--repeat``), the ratio, points per second.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def frame_of(n: int):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    return pd.DataFrame({"id": np.arange(n), "x": rng.uniform(-2, 2, n), "y": rng.uniform(-2, 2, n)})


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--expression", default="x**2*sin(y) + exp(x*y)")
    parser.add_argument("--method", default="symbolic,fd")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--overhead-partitions", type=int, default=200)
    args = parser.parse_args()

    import dask.dataframe as dd
    import distributed

    import gradcli.api as api
    import gradcli.dask as gdask

    frame = frame_of(args.points)
    options = {"method": args.method}

    api.grad_columns(args.expression, frame.iloc[:100], **options)  # warm: SymPy, the imports
    local = timed(lambda: api.grad_columns(args.expression, frame, **options), args.repeat)

    cluster = distributed.LocalCluster(n_workers=args.workers, processes=True, threads_per_worker=1,
                                       dashboard_address=None, worker_dashboard_address=None)
    with distributed.Client(cluster) as client:
        warm = dd.from_pandas(frame.iloc[:4 * args.workers], npartitions=2 * args.workers, sort=False)
        gdask.grad(warm, args.expression, **options).compute()  # every worker prepares the request
        ddf = client.persist(dd.from_pandas(frame, npartitions=args.partitions, sort=False))
        distributed.wait(ddf)
        runs = iter(range(10**6))

        def fresh(frame_on_cluster):
            # a column of its own per run, so that no run finds the last one's rows still held by the
            # scheduler (the same graph's keys would be); the request, and so each worker's prepared
            # computation, is the same
            return gdask.grad(frame_on_cluster.assign(run=next(runs)), args.expression, **options)

        engine = timed(lambda: fresh(ddf).compute(), args.repeat)
        rows = len(fresh(ddf).compute())

        # per partition, once warm: many one-row partitions through the cluster (Dask's scheduling too) ...
        tiny = client.persist(dd.from_pandas(frame.iloc[:args.overhead_partitions],
                                             npartitions=args.overhead_partitions, sort=False))
        distributed.wait(tiny)
        tiny_out = gdask.grad(tiny, args.expression, **options)
        per_task = timed(lambda: fresh(tiny).compute(), args.repeat) / args.overhead_partitions
        # ... and gradcli.dask's own part of it, in a worker: a one-row partition's rows, the request prepared
        spec = gdask.spec_of("grad", expressions=[args.expression], **options)
        meta = tiny_out._meta
        one_row = frame.iloc[:1]

        def in_worker():
            import time as t

            from gradcli.dask import _partition_rows

            _partition_rows(one_row, spec, meta)
            start = t.perf_counter()
            for _ in range(200):
                _partition_rows(one_row, spec, meta)
            return (t.perf_counter() - start) / 200

        per_partition = min(client.run(in_worker).values())

        def rss() -> float:
            import psutil

            return psutil.Process().memory_info().rss / 2**30

        memory = max(client.run(rss).values())
    cluster.close()

    print(f"grad {args.expression!r} -m {args.method}: {args.points:,} points ({rows:,} rows), median of "
          f"{args.repeat}")
    print(f"  local (gradcli.api.grad_columns, one process): {local:.2f} s  "
          f"({args.points / local:,.0f} points/s)")
    print(f"  gradcli.dask, {args.workers} workers x 1 thread, {args.partitions} partitions: {engine:.2f} s  "
          f"({args.points / engine:,.0f} points/s), {engine / local:.2f}x local")
    print(f"  per partition once warm: {per_partition * 1e3:.2f} ms in gradcli.dask (a one-row partition's rows "
          f"in a worker), {per_task * 1e3:.1f} ms end to end through the scheduler "
          f"({args.overhead_partitions} one-row partitions)")
    print(f"  a worker's memory (RSS) after the run: {memory:.2f} GiB")
    print(f"  cpus: {os.cpu_count()}, load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
