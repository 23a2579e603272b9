"""SQL over named tables (issue 21 item 6): query, connect, scan_query and the CLI's --table.

Every result is compared with a twin computed by polars joins on the same data; a query that
joins the trials with metadata tables streams into the out-of-core statistics with the same
numbers as the joined frame evaluated in memory.
"""

from __future__ import annotations

import contextlib

import duckdb
import polars as pl
import pytest

import scoreframe as sf
from scoreframe.cli import main
from scoreframe.frames import _sql_tables
from scoreframe.frames.sql import connect, query, scan_query

SQL = ("select t.*, m.age, s.mic from trials t join models m using (model) "
       "join segs s using (segment)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("sqltables")
    df = pl.concat(sf.synth_chunks(6000, n_systems=1, seed=5)).select(
        "model", "segment", "score", "label", "gender")
    sf.write_trials(df, root / "ds", partition_by=["gender"])
    models = df.select("model").unique().sort("model").with_row_index("i").select(
        "model", age=pl.when(pl.col("i") % 3 == 0).then(pl.lit("old")).otherwise(pl.lit("young")))
    segs = df.select("segment").unique().sort("segment").with_row_index("i").select(
        "segment", mic=(pl.col("i") % 2).cast(pl.Int64))
    models.write_csv(root / "models.csv")
    segs.write_parquet(root / "segs.parquet")
    (root / "segs_dir" / "part=a").mkdir(parents=True)
    segs.write_parquet(root / "segs_dir" / "part=a" / "0.parquet")
    joined = (pl.read_parquet(root / "ds" / "**" / "*.parquet", hive_partitioning=True)
              .join(models, on="model").join(segs, on="segment"))
    return root, joined, models, segs


def _tables(root, segs="segs.parquet"):
    return {"models": root / "models.csv", "segs": root / segs}


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    return df.sort("model", "segment")


@pytest.mark.parametrize("segs", ["segs.parquet", "segs_dir"])
def test_query_joins_named_tables_like_polars(data, segs):
    root, joined, *_ = data
    got = query(SQL, root / "ds", tables=_tables(root, segs))
    cols = ["model", "segment", "score", "label", "age", "mic"]
    assert _sorted(got).select(cols).equals(_sorted(joined).select(cols))
    assert got.schema["age"] == pl.String  # a CSV table is read as text, as --join reads it


def test_frames_and_other_registered_formats_are_tables(data, tmp_path):
    root, joined, models, _ = data
    key = tmp_path / "key.txt"  # BOSARIS text: read by the format registry, not as a path
    key.write_text("m000000 s00000000 target\nm000001 s00000001 nontarget\n")
    got = query("select count(*) as n, count(*) filter (where k.label) as n_tar from k",
                root / "ds", tables={"k": key})
    assert got.row(0) == (2, 1)
    ages = query("select age, count(*) as n from trials join m using (model) group by age "
                 "order by age", root / "ds", tables={"m": models.to_arrow()})
    twin = joined.group_by("age").len("n").sort("age")
    assert ages.with_columns(pl.col("n").cast(pl.UInt32)).equals(twin)


def test_connect_registers_the_tables(data):
    root, joined, *_ = data
    with contextlib.closing(connect(root / "ds", tables=_tables(root))) as con:
        n = con.sql(f"select count(*) from ({SQL})").fetchall()[0][0]
    assert n == joined.height


def test_scan_query_streams_in_batches_and_pushes_columns(data, monkeypatch):
    root, joined, *_ = data
    monkeypatch.setattr(_sql_tables, "STREAM_ROWS", 1000)
    seen: list[int] = []
    real = duckdb.DuckDBPyRelation.to_arrow_reader

    def spy(rel, batch_size=1000):
        seen.append(len(rel.columns))
        return real(rel, batch_size)

    monkeypatch.setattr(duckdb.DuckDBPyRelation, "to_arrow_reader", spy)
    lf = scan_query(SQL, root / "ds", tables=_tables(root))
    assert lf.select(pl.col("score").sum()).collect().item() == pytest.approx(
        joined["score"].sum(), rel=1e-12)
    assert seen and seen[-1] == 1  # only `score` was asked of DuckDB
    batches = list(lf.collect_batches(chunk_size=1000))
    assert sum(b.height for b in batches) == joined.height and len(batches) > 1
    assert lf.filter(pl.col("mic") == 1).head(7).collect().height == 7


@pytest.mark.parametrize("memory_limit", [None, "64KiB"])
def test_an_sql_query_is_an_input_of_evaluate(data, memory_limit):
    """The query streams through the out-of-core engine with the in-memory numbers."""
    root, joined, *_ = data
    by = ["gender", "age", "mic"]
    lf = scan_query(SQL, root / "ds", tables=_tables(root))
    got = sf.evaluate(lf, by=by, engine=sf.Engine(memory_limit=memory_limit, workers=2))
    twin = sf.evaluate(joined, by=by)
    assert got.sort(by).equals(twin.sort(by))


def test_a_duckdb_relation_is_an_input_of_evaluate(data):
    root, joined, *_ = data
    con = duckdb.connect()
    try:
        rel = con.sql(f"select * from read_parquet('{root}/ds/**/*.parquet', "
                      "hive_partitioning = true)")
        got = sf.evaluate(rel, by=["gender"], engine=sf.Engine(memory_limit="64KiB", workers=2))
    finally:
        con.close()
    assert got.sort("gender").equals(sf.evaluate(joined, by=["gender"]).sort("gender"))


def test_cli_sql_and_query_with_tables_equal_the_library(data, tmp_path):
    root, joined, *_ = data
    sql = tmp_path / "q.sql"
    sql.write_text(SQL)
    tables = ["--table", f"models={root / 'models.csv'}", "--table",
              f"segs={root / 'segs.parquet'}"]
    out = tmp_path / "r.csv"
    assert main(["evaluate", str(root / "ds"), "--sql", str(sql), *tables, "--by", "age",
                 "mic", "--memory-limit", "64KiB", "-o", str(out)]) == 0
    cli = pl.read_csv(out).sort("age", "mic").select("age", "n_tar", "n_non", "eer", "cllr")
    lib = (sf.evaluate(joined, by=["age", "mic"]).with_columns(pl.col("mic").cast(pl.String))
           .sort("age", "mic").select("age", "n_tar", "n_non", "eer", "cllr"))
    assert cli.with_columns(pl.col("n_tar", "n_non").cast(lib["n_tar"].dtype)).equals(lib)
    rows = tmp_path / "rows.parquet"
    assert main(["query", str(sql), str(root / "ds"), *tables, "-o", str(rows)]) == 0
    assert pl.read_parquet(rows).height == joined.height


@pytest.mark.parametrize("argv,match", [
    (["--table", "models=m.csv"], "give --sql FILE too"),
    (["--sql", "{sql}", "--key", "{ds}", "--scores", "{ds}"], "--key/--scores do not apply"),
])
def test_table_and_sql_option_combinations(data, tmp_path, capsys, argv, match):
    root, *_ = data
    sql = tmp_path / "q.sql"
    sql.write_text("select * from trials")
    args = [a.format(sql=sql, ds=root / "ds") for a in argv]
    positional = [] if "--key" in args else [str(root / "ds")]
    assert main(["evaluate", *positional, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err
