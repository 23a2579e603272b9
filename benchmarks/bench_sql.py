"""Cost of confining SQL: `query` (DuckDB's reader on allowed paths) vs `connect` (Arrow).

Times the example query ``queries/per_gender_counts.sql`` over a synthetic hive-partitioned
dataset three ways: ``scoreframe.query`` (file access off but to the dataset's files),
``scoreframe.connect`` (no file access; the dataset registered as a pyarrow dataset), and an
unconfined DuckDB view over ``read_parquet`` (what ``query`` did before it was confined), and
prints the best of three wall times. Run: ``python benchmarks/bench_sql.py [N_TRIALS]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl

import scoreframe as sf

ROOT = Path(__file__).resolve().parents[1]


def best(f, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main(n: int) -> None:
    sql = (ROOT / "queries" / "per_gender_counts.sql").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        ds = Path(tmp) / "ds"
        sf.write_trials(pl.concat(sf.synth_chunks(n, seed=3)), ds, partition_by=["gender"])

        def confined_query() -> pl.DataFrame:
            return sf.query(sql, ds)

        def confined_connect() -> pl.DataFrame:
            con = sf.connect(ds)
            try:
                return con.sql(sql).pl()
            finally:
                con.close()

        def unconfined() -> pl.DataFrame:
            con = duckdb.connect()
            try:
                con.execute(f"create view trials as select * from read_parquet('{ds}/**/*.parquet',"
                            " hive_partitioning = true, union_by_name = true)")
                return con.sql(sql).pl()
            finally:
                con.close()

        assert confined_query().equals(unconfined()) and confined_connect().equals(unconfined())
        rows = [("query (allowed paths, DuckDB reader)", best(confined_query)),
                ("connect (no file access, Arrow dataset)", best(confined_connect)),
                ("unconfined read_parquet view (before)", best(unconfined))]
    print(f"{n:,} trials, queries/per_gender_counts.sql, best of 3")
    for name, t in rows:
        print(f"  {name:42s} {t:6.2f} s")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 2_000_000)
