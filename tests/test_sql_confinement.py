"""SQL reaches nothing but the trials (issue "Trust, round 3", items 1 and 8, SQL half).

Every SQL surface — ``scoreframe query`` / :func:`scoreframe.query` (DuckDB) and the
``where=`` / ``--where`` predicates (polars) — is fed a catalogue of escape attempts: writing
files (``COPY``, ``ATTACH``, ``EXPORT``), reading them (``read_csv`` & co. on a secret file made
for the test), extensions, settings, ``CREATE``, stacked statements and comments. Each must be
one clear error (exit 2, one line, no traceback in the CLI), print none of the secret file,
change no file and write nothing. Hypothesis then generates valid predicates and queries, whose
rows must equal a twin computed with polars expressions, and corrupted ones, which must fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scoreframe as sf
from scoreframe.cli.main import main
from scoreframe.errors import ScoreframeError
from scoreframe.frames._sql_guard import MAX_OPERATORS, MAX_WHERE_CHARS, apply_where, where_expr
from scoreframe.frames.sql import connect, query
from scoreframe.stats import Engine

ROOT = Path(__file__).resolve().parents[1]
SECRET = "TOPSECRET_7f3a9c"  # the content of the secret files: must never be printed
COLUMNS = ["model", "segment", "score", "label", "gender", "cond", "channel"]


def _trials(n: int = 60) -> pl.DataFrame:
    rng = np.random.default_rng(20261125)
    return pl.DataFrame({
        "model": [f"m{i % 7}" for i in range(n)], "segment": [f"s{i}" for i in range(n)],
        "score": rng.normal(size=n).round(2), "label": [i % 3 == 0 for i in range(n)],
        "gender": [None if i % 11 == 0 else "fm"[i % 2] for i in range(n)],
        "cond": [i % 4 for i in range(n)],
        "channel": ["tel" if i % 5 else "mic" for i in range(n)]})


def _world(root: Path) -> dict[str, Path]:
    """A partitioned dataset, a single-file dataset and secret files beside them."""
    root.mkdir(parents=True, exist_ok=True)
    df = _trials()
    sf.write_trials(df, root / "ds", partition_by=["gender", "cond"])
    df.write_parquet(root / "one.parquet")
    (root / "secret.txt").write_text(f"{SECRET}\nsecond line {SECRET}\n")
    (root / "secret.csv").write_text(f"{SECRET}_COL,x\n{SECRET}_VAL,1\n")
    pl.DataFrame({"model": [f"{SECRET}_PQ"]}).write_parquet(root / "secret.parquet")
    (root / "secret.json").write_text(f'[{{"k": "{SECRET}_JSON"}}]')
    (root / "work").mkdir()
    return {"root": root, "ds": root / "ds", "one": root / "one.parquet",
            "secret": root / "secret.txt", "csv": root / "secret.csv",
            "pq": root / "secret.parquet", "json": root / "secret.json", "work": root / "work"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return _world(tmp_path_factory.mktemp("sqlworld"))


def _tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root``: size and content hash (directories as -1)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = ((-1, "") if p.is_dir() else
                    (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()))
    return out


@contextlib.contextmanager
def _unchanged(root: Path):
    """Fail if anything under ``root`` is added, removed or changed; run in ``root/work``."""
    before, cwd = _tree(root), Path.cwd()
    os.chdir(root / "work")  # a relative path in the SQL lands in the watched tree
    try:
        yield
    finally:
        os.chdir(cwd)
    assert _tree(root) == before, "a refused SQL changed or wrote a file"


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _assert_user_error(code: int, out: str, err: str, *, match: str | None = None) -> None:
    assert code == 2, (code, out, err)
    # a library error, or a value refused while parsing ("scoreframe evaluate: error: ...")
    assert re.match(r"scoreframe( [a-z-]+)*: error: ", err) and err.count("\n") == 1, err
    assert "Traceback" not in err and SECRET not in out + err, err
    assert len(err) < 1000, f"a {len(err)}-character message"
    if match:
        assert match in err, err


def _fill(text: str, w: dict[str, Path], **extra: str) -> str:
    return text.format(**{k: str(v) for k, v in w.items()}, **extra)


# --- the catalogue: `scoreframe query` and scoreframe.query -----------------------------------
# (SQL, substring of the message). {root}, {ds}, {secret}, ... are paths of the world above.
OUTSIDE = "reach outside the dataset"
ONE_QUERY = "one read-only query"
QUERY_ESCAPES = {
    "copy-to": ("COPY (SELECT * FROM trials) TO '{root}/out.csv'", ONE_QUERY),
    "copy-over-input": ("COPY (SELECT 1 AS x) TO '{one}' (FORMAT parquet)", ONE_QUERY),
    "copy-from": ("COPY trials FROM '{csv}'", ONE_QUERY),
    "attach": ("ATTACH '{root}/x.db' AS x", ONE_QUERY),
    "attach-stacked": ("ATTACH '{root}/x.db' AS x; CREATE TABLE x.t AS SELECT 1", ONE_QUERY),
    "export": ("EXPORT DATABASE '{root}/exported'", ONE_QUERY),
    "import": ("IMPORT DATABASE '{root}'", ONE_QUERY),
    "read_csv": ("SELECT * FROM read_csv('{csv}')", OUTSIDE),
    "read_csv_auto": ("SELECT * FROM read_csv_auto('{csv}', header = false)", OUTSIDE),
    "read_parquet": ("SELECT * FROM read_parquet('{pq}')", OUTSIDE),
    "read_parquet-other-dataset": ("SELECT * FROM read_parquet('{ds}/**/*.parquet')", OUTSIDE),
    "read_blob-dataset-directory": ("SELECT * FROM read_blob('{ds}/*')", OUTSIDE),
    "path-traversal": ("SELECT * FROM read_text('{one}/../secret.txt')", OUTSIDE),
    "read_text": ("SELECT content FROM read_text('{secret}')", OUTSIDE),
    "read_blob": ("SELECT content FROM read_blob('{secret}')", OUTSIDE),
    "read_json": ("SELECT * FROM read_json('{json}')", OUTSIDE),
    "glob": ("SELECT * FROM glob('{root}/*')", OUTSIDE),
    "glob-etc": ("SELECT * FROM glob('/etc/*')", OUTSIDE),
    "path-as-table": ("SELECT * FROM '{csv}'", OUTSIDE),
    "sniff_csv": ("SELECT * FROM sniff_csv('{csv}')", OUTSIDE),
    "cte-read": ("WITH s AS (SELECT * FROM read_text('{secret}')) SELECT * FROM s", OUTSIDE),
    "union-read": ("SELECT model FROM trials UNION ALL SELECT content FROM read_text('{secret}')",
                   OUTSIDE),
    "subquery-read": ("SELECT * FROM trials WHERE model IN "
                      "(SELECT content FROM read_text('{secret}'))", OUTSIDE),
    "query-function": ("SELECT * FROM query('SELECT * FROM read_text(''{secret}'')')", OUTSIDE),
    "query-function-copy": ("SELECT * FROM query('COPY (SELECT 1) TO ''{root}/out.csv'' ')",
                            "SQL query failed"),
    "query_table": ("SELECT * FROM query_table('{csv}')", OUTSIDE),
    "parquet_metadata": ("SELECT * FROM parquet_metadata('{pq}')", OUTSIDE),
    "url": ("SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')", OUTSIDE),
    "install": ("INSTALL httpfs", ONE_QUERY),
    "load": ("LOAD httpfs", ONE_QUERY),
    "force-install": ("FORCE INSTALL '{root}/x.duckdb_extension'", ONE_QUERY),
    "pragma": ("PRAGMA version", ONE_QUERY),
    "pragma-profiling": ("PRAGMA enable_profiling = 'json'", ONE_QUERY),
    "call": ("CALL pragma_version()", ONE_QUERY),
    "set-temp-directory": ("SET temp_directory = '{root}/spill'", ONE_QUERY),
    "set-external-access": ("SET enable_external_access = true", ONE_QUERY),
    "set-variable": ("SET VARIABLE p = '{secret}'", ONE_QUERY),
    "reset": ("RESET enable_external_access", ONE_QUERY),
    "create-table": ("CREATE TABLE t AS SELECT * FROM trials", ONE_QUERY),
    "create-secret": ("CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", ONE_QUERY),
    "create-macro": ("CREATE MACRO f(x) AS x + 1", ONE_QUERY),
    "drop": ("DROP VIEW trials", ONE_QUERY),
    "insert": ("INSERT INTO trials SELECT * FROM trials", ONE_QUERY),
    "stacked-copy": ("SELECT count(*) FROM trials; COPY (SELECT 1) TO '{root}/out.csv'",
                     ONE_QUERY),
    "stacked-select": ("SELECT 1; SELECT 2", ONE_QUERY),
    "comment-then-copy": ("SELECT 1 /* ; */; COPY (SELECT 1) TO '{root}/out.csv' -- x",
                          ONE_QUERY),
    "explain-analyze": ("EXPLAIN ANALYZE SELECT * FROM trials", ONE_QUERY),
    "checkpoint": ("CHECKPOINT", ONE_QUERY),
}


@pytest.mark.parametrize("case", sorted(QUERY_ESCAPES))
def test_query_escape_is_refused_by_the_cli(case, world):
    sql, match = QUERY_ESCAPES[case]
    sql_file = world["work"] / f"{case}.sql"
    sql_file.write_text(_fill(sql, world))
    datasets = [world["one"]] if "other-dataset" in case else [world["ds"], world["one"]]
    for ds in datasets:
        with _unchanged(world["root"]):
            _assert_user_error(*_cli(["query", str(sql_file), str(ds)]), match=match)
            assert not (world["root"] / "out.csv").exists()


@pytest.mark.parametrize("case", sorted(QUERY_ESCAPES))
def test_query_escape_is_refused_by_the_library(case, world):
    sql, match = QUERY_ESCAPES[case]
    ds = world["one"] if "other-dataset" in case else world["ds"]
    with _unchanged(world["root"]), pytest.raises(ScoreframeError, match=match) as err:
        query(_fill(sql, world), ds, sql_name=f"{case}.sql")
    text = str(err.value)
    assert SECRET not in text and f"{case}.sql" in text and str(ds) in text


def test_the_dataset_own_files_are_the_only_files_readable(world):
    """Reading a file of the dataset by name gives its trials; its neighbours stay closed."""
    files = sorted(world["ds"].rglob("*.parquet"))
    by_name = query(f"SELECT count(*) AS n FROM read_parquet('{files[0]}')", world["ds"])
    assert by_name["n"][0] == pl.read_parquet(files[0]).height
    with pytest.raises(ScoreframeError, match=OUTSIDE):
        query(f"SELECT count(*) AS n FROM read_parquet('{files[0]}')", world["one"])


def test_the_connection_sees_only_the_trials(world):
    """Locked settings, no extensions, no Python variables, no other file."""
    secret_frame = pl.DataFrame({"pw": [SECRET]})  # noqa: F841 - a replacement scan would see it
    con = connect(world["ds"])
    try:
        assert con.execute("select count(*) from trials").fetchall() == [(60,)]
        settings_now = dict(con.sql(
            "select name, value from duckdb_settings() where name in ('enable_external_access',"
            " 'lock_configuration', 'autoload_known_extensions', 'autoinstall_known_extensions',"
            " 'python_enable_replacements')").fetchall())
        assert settings_now == {"enable_external_access": "false", "lock_configuration": "true",
                                "autoload_known_extensions": "false",
                                "autoinstall_known_extensions": "false",
                                "python_enable_replacements": "false"}
        with pytest.raises(duckdb.CatalogException):
            con.sql("select * from secret_frame")
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.PermissionException):
            con.sql(f"select * from read_csv('{world['csv']}')")
        assert {r[0] for r in con.sql("show tables").fetchall()} == {"trials"}
    finally:
        con.close()


def test_a_raw_connection_cannot_write_even_over_the_dataset(world):
    """`connect` runs any statement, so it allows no path at all (the dataset is Arrow)."""
    target = sorted(world["ds"].rglob("*.parquet"))[0]
    with _unchanged(world["root"]):
        con = connect(world["ds"])
        try:
            for sql in (f"COPY (SELECT 1 AS x) TO '{target}' (FORMAT parquet, USE_TMP_FILE false)",
                        f"ATTACH '{target}' AS t", f"SELECT * FROM read_blob('{target}')",
                        f"EXPORT DATABASE '{world['root']}/exported'"):
                with pytest.raises(duckdb.PermissionException):
                    con.execute(sql)
        finally:
            con.close()


def test_connect_and_query_see_the_same_trials(world):
    cols = ", ".join(COLUMNS)
    with contextlib.closing(connect(world["ds"])) as con:
        arrow = con.sql(f"SELECT {cols} FROM trials ORDER BY segment").pl()
    assert arrow.equals(query(f"SELECT {cols} FROM trials ORDER BY segment", world["ds"]))


def test_spill_directory_is_one_the_stale_cleaner_knows(world, tmp_path, monkeypatch):
    """DuckDB spills (a large sort) under $SCOREFRAME_SPILL_DIR, named like every spill dir."""
    from scoreframe.stats.outofcore import SPILL_PREFIX, _host

    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    con = connect(world["one"])
    try:
        temp = Path(con.execute("select current_setting('temp_directory')").fetchall()[0][0])
    finally:
        con.close()
    assert temp.parent == tmp_path
    assert temp.name.startswith(f"{SPILL_PREFIX}{_host()}-{os.getpid()}-")
    assert not temp.exists()  # created by DuckDB only when it spills, removed on close


def test_query_still_reads_partitions_and_unions_columns(world, tmp_path):
    """Hive columns typed as polars types them; a file without a column gives nulls."""
    duck = query("select * from trials order by segment", world["ds"])
    pol = sf.scan_trials(world["ds"]).collect().sort("segment")
    assert duck.select(COLUMNS).equals(pol.select(COLUMNS))
    assert duck.schema["cond"] == pl.Int64 and duck.schema["gender"] == pl.String
    d = tmp_path / "mixed"
    (d / "part=1").mkdir(parents=True)
    (d / "part=x").mkdir()
    pl.DataFrame({"score": [1.0], "extra": ["e"]}).write_parquet(d / "part=1" / "a.parquet")
    pl.DataFrame({"score": [2.0]}).write_parquet(d / "part=x" / "b.parquet")
    got = query("select score, extra, part from trials order by score", d)
    assert got.to_dicts() == [{"score": 1.0, "extra": "e", "part": "1"},
                              {"score": 2.0, "extra": None, "part": "x"}]


@pytest.mark.parametrize("sql", ["select count(*) as n from trials;",
                                 "-- counts\nwith t as (select * from trials) select count(*) "
                                 "as n from t; -- done",
                                 "from trials select count(*) as n"])
def test_one_query_with_comments_and_a_final_semicolon_runs(sql, world):
    assert query(sql, world["one"])["n"].to_list() == [60]


def test_query_syntax_error_names_the_file_on_one_line(world):
    sql_file = world["work"] / "broken.sql"
    sql_file.write_text("select from where\n;")
    code, out, err = _cli(["query", str(sql_file), str(world["ds"])])
    _assert_user_error(code, out, err, match="syntax error")
    assert "broken.sql" in err and str(world["ds"]) in err


@pytest.mark.parametrize("case", ["binary", "huge", "output-over-dataset",
                                  "output-over-sql"])
def test_query_files_and_outputs_are_checked_first(case, world):
    sql_file = world["work"] / f"{case}.sql"
    sql_file.write_bytes(b"select 1 as x")
    argv = ["query", str(sql_file), str(world["one"])]
    match = {"binary": "not UTF-8", "huge": "too large", "output-over-dataset": "input",
             "output-over-sql": "input"}[case]
    if case == "binary":
        sql_file.write_bytes(b"select \xff\xfe from trials")
    elif case == "huge":
        sql_file.write_bytes(b"select 1 as x -- " + b"x" * (2 << 20))
    elif case == "output-over-dataset":
        argv += ["-o", str(world["one"]), "--overwrite"]
    else:
        argv += ["-o", str(sql_file), "--format", "csv", "--overwrite"]
    with _unchanged(world["root"]):
        _assert_user_error(*_cli(argv), match=match)


def test_real_process_exits_2_without_traceback(world):
    """An escape through `python -m scoreframe`, as a user runs it (the rest run in-process)."""
    sql_file = world["work"] / "real.sql"
    sql_file.write_text(_fill("SELECT * FROM trials WHERE model IN "
                              "(SELECT content FROM read_text('{secret}'))", world))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with _unchanged(world["root"]):
        run = subprocess.run([sys.executable, "-m", "scoreframe", "query", str(sql_file),
                              str(world["ds"])], env=env, cwd=world["work"],
                             capture_output=True, text=True, timeout=300)
    _assert_user_error(run.returncode, run.stdout, run.stderr, match=OUTSIDE)


# --- the catalogue: --where on evaluate (CLI) and where= (library) ----------------------------
SUBQUERY, STATEMENT, ONE_EXPR = "subquery", "SQL statement", "one expression"
WHERE_ESCAPES = {
    "stacked-copy": ("score > 0; COPY (SELECT 1) TO '{root}/out.csv'", ONE_EXPR),
    "trailing-semicolon": ("score > 0 ;", ONE_EXPR),
    "comment-dash": ("score > 0 -- and the rest", "comment"),
    "comment-closes": ("score > 0 /* */ ) OR (1 = 1", "comment"),
    "comment-hides-quote": ("gender = 'f' --'", "comment"),
    "subquery-read_csv": ("model IN (SELECT * FROM read_csv('{csv}'))", SUBQUERY),
    "subquery-read_csv-column": ("model IN (SELECT nosuch FROM read_csv('{csv}'))", SUBQUERY),
    "subquery-read_parquet": ("model IN (SELECT model FROM read_parquet('{pq}'))", SUBQUERY),
    "subquery-read_text": ("segment IN (SELECT content FROM read_text('{secret}'))", SUBQUERY),
    "subquery-from-first": ("model IN (FROM read_csv('{csv}'))", SUBQUERY),
    "subquery-values": ("model IN (VALUES ('m1'))", SUBQUERY),
    "subquery-value": ("model IN (VALUE ('m1'))", SUBQUERY),
    "subquery-with": ("model IN (WITH q AS (SELECT 'm1' AS m) SELECT m FROM q)", SUBQUERY),
    "subquery-scalar": ("score > (SELECT max(score) FROM trials)", SUBQUERY),
    "exists": ("EXISTS (SELECT 1)", SUBQUERY),
    "table": ("model IN (TABLE trials)", SUBQUERY),
    "read_csv-function": ("read_csv('{csv}') IS NOT NULL", "not a valid SQL expression"),
    "read_text-function": ("read_text('{secret}') IS NOT NULL", "not a valid SQL expression"),
    "read_blob-function": ("read_blob('{secret}') IS NOT NULL", "not a valid SQL expression"),
    "glob-function": ("glob('{root}/*') IS NOT NULL", "not a valid SQL expression"),
    "copy": ("COPY trials TO '{root}/out.csv'", STATEMENT),
    "attach": ("ATTACH '{root}/x.db' AS x", STATEMENT),
    "export": ("EXPORT DATABASE '{root}/exported'", STATEMENT),
    "install": ("INSTALL httpfs", STATEMENT),
    "load": ("LOAD httpfs", STATEMENT),
    "pragma": ("PRAGMA version", STATEMENT),
    "set-temp-directory": ("SET temp_directory = '{root}/spill'", STATEMENT),
    "create": ("CREATE TABLE t (x INT)", STATEMENT),
    "create-as-select": ("CREATE TABLE t AS SELECT 1", SUBQUERY),
    "parenthesis-escape": ("score > 0) OR (1 = 1", "not a valid SQL expression"),
    "prefixed-string": ("gender = E'f'", "prefixed string"),
    "dollar-string": ("gender = $$f$$", "'$'"),
    "backquote": ("`gender` = 'f'", "'`'"),
    "unterminated": ("gender = 'f", "unterminated quote"),
    "escape-bytes": ("gender = 'f' \x1b[2J", "'\\x1b'"),
    "empty": ("   ", "is empty"),
    "not-boolean": ("score + 1", "not true/false"),
    "unknown-column": ("nosuchcolumn = 1", "nosuchcolumn"),
}


@pytest.mark.parametrize("case", sorted(WHERE_ESCAPES))
def test_where_escape_is_refused_by_evaluate(case, world):
    where, match = WHERE_ESCAPES[case]
    with _unchanged(world["root"]):
        code, out, err = _cli(["evaluate", str(world["ds"]), "--where", _fill(where, world)])
    if case == "empty":  # refused while the command line is parsed, before any input is read
        _assert_user_error(code, out, err, match="argument --where: expected an SQL predicate")
        return
    _assert_user_error(code, out, err, match=match)
    assert "--where" in err and str(world["ds"]) in err


@pytest.mark.parametrize("command", [["evaluate"],
                                     ["compare", "{csv}", "--systems", "sys1", "sys2"],
                                     ["calibrate", "train", "{csv}", "-o", "{out}"],
                                     ["fuse", "train", "{csv}", "-o", "{out}"],
                                     ["info"], ["convert", "{csv}", "-o", "{out}"]])
@pytest.mark.parametrize("where", ["score >", "score > 0; COPY trials TO 'x.csv'",
                                   "model IN (SELECT content FROM read_text('{secret}'))"])
def test_where_errors_name_a_text_input_on_one_line(command, where, world):
    """Text tables are loaded into frames by the CLI; the message still names the file."""
    csv = world["work"] / "trials.csv"
    if not csv.exists():
        _trials().with_columns(system=pl.lit("sys1")).write_csv(csv)
    out = world["work"] / "never_written.json"
    argv = [c.format(csv=csv, out=out) for c in command]
    if argv == command:  # the dataset is the first positional argument
        argv = [*command, str(csv)]
    with _unchanged(world["root"]):
        code, text_out, err = _cli([*argv, "--where", _fill(where, world)])
    _assert_user_error(code, text_out, err, match="`" + str(csv) + "`")
    assert "--where" in err


LIBRARY = {
    "scan_trials": lambda data, w: sf.scan_trials(data, where=w).collect(),
    "evaluate": lambda data, w: sf.evaluate(data, where=w),
    "evaluate-out-of-core": lambda data, w: sf.evaluate(data, where=w,
                                                        engine=Engine(memory_limit="2KiB")),
    "evaluate-frame": lambda data, w: sf.evaluate(pl.read_parquet(data), where=w),
    "calibration": lambda data, w: sf.LinearCalibration().fit(data, where=w),
}


@pytest.mark.parametrize("case", sorted(WHERE_ESCAPES))
@pytest.mark.parametrize("path", sorted(LIBRARY))
def test_where_escape_is_refused_by_the_library(path, case, world):
    where, match = WHERE_ESCAPES[case]
    with _unchanged(world["root"]), pytest.raises(ScoreframeError) as err:
        LIBRARY[path](world["one"], _fill(where, world))
    text = str(err.value)
    assert match in text and SECRET not in text and "where" in text
    assert len(text) < 1000 and "\n" not in text.split("\n\n")[0]


def test_where_messages_quote_a_bounded_part_of_the_predicate():
    lf = pl.LazyFrame({"score": [1.0]})
    unclosed = "score IN (" + ", ".join(str(i) for i in range(20_000))  # polars echoes it all
    for where in (unclosed, "nosuchcolumn IN (" + ", ".join(["'x'"] * 20_000) + ")"):
        with pytest.raises(ScoreframeError) as err:
            apply_where(lf, where, source="`x.parquet`")
        assert len(str(err.value)) < 1000 and "`x.parquet`" in str(err.value)
    with pytest.raises(ScoreframeError, match="over the limit"):
        where_expr("score > 0 OR " * (MAX_WHERE_CHARS // 10))


def test_operator_chains_are_bounded_before_polars_parses_them():
    """Polars' parser recurses per operator and crashes near a few thousand: refused first."""
    lf = pl.LazyFrame({"score": [0.5], "model": ["a"]})
    at_limit = "score > 0" + " AND score > 0" * (MAX_OPERATORS // 2 - 1)
    assert apply_where(lf, at_limit).collect().height == 1
    for chain in ("score > 0" + " AND score > 0" * 10_000, "model" + " || 'x'" * 5_000 + " = 'a'",
                  "score" + " + score" * 10_000 + " > 0"):
        with pytest.raises(ScoreframeError, match=f"over the limit of {MAX_OPERATORS}"):
            where_expr(chain)


@pytest.mark.parametrize("where", ["\"value\" = 'p'", "value = 'p'", "call = 'c'",
                                   "note = 'it''s; -- not a comment /* */'",
                                   "note LIKE '%SELECT%'", "extract(year FROM d) = 2020",
                                   "cast(n AS varchar) = '1'", "\"from\" = 1"])
def test_plain_predicates_with_tricky_words_still_work(where):
    """Keywords inside quotes, and columns named like keywords, are data, not SQL."""
    df = pl.DataFrame({"value": ["p", "q"], "call": ["c", "d"],
                       "note": ["it's; -- not a comment /* */", "SELECT * x"],
                       "d": [date(2020, 1, 1), date(2021, 1, 1)], "n": [1, 2],
                       "from": [1, 2]})
    assert apply_where(df.lazy(), where).collect().height == 1


# --- Hypothesis: valid predicates against a polars twin, corrupted ones must fail ---------
_SCORES = [-1.5, -0.25, 0.0, 0.13, 0.5, 1.0, 2.25]
_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "=": lambda a, b: a == b, "<>": lambda a, b: a != b}


def _atom() -> st.SearchStrategy[tuple[list[str], pl.Expr]]:
    """(SQL tokens, polars twin) of one comparison."""
    score = st.builds(lambda op, v: ([("score"), op, repr(v)], _OPS[op](pl.col("score"), v)),
                      st.sampled_from(sorted(_OPS)), st.sampled_from(_SCORES))
    gender = st.sampled_from([(["gender", "=", "'f'"], pl.col("gender") == "f"),
                              (["gender", "<>", "'f'"], pl.col("gender") != "f"),
                              (["gender", "IS", "NULL"], pl.col("gender").is_null()),
                              (["gender", "IS", "NOT", "NULL"], pl.col("gender").is_not_null())])
    cond = st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True).map(
        lambda vs: (["cond", "IN", "(", ",".join(map(str, vs)), ")"], pl.col("cond").is_in(vs)))
    between = st.tuples(st.sampled_from(_SCORES), st.sampled_from(_SCORES)).map(
        lambda ab: (["score", "BETWEEN", repr(min(ab)), "AND", repr(max(ab))],
                    pl.col("score").is_between(min(ab), max(ab))))
    label = st.sampled_from([(["label"], pl.col("label")),
                             (["NOT", "label"], ~pl.col("label"))])
    text = st.sampled_from([(["channel", "=", "'tel'"], pl.col("channel") == "tel"),
                            (["model", "IN", "(", "'m1'", ",", "'m3'", ")"],
                             pl.col("model").is_in(["m1", "m3"])),
                            (["channel", "LIKE", "'t%'"], pl.col("channel").str.starts_with("t"))])
    return st.one_of(score, gender, cond, between, label, text)


def _combine(children):
    def build(parts):
        op, (ta, ea), (tb, eb) = parts
        return (["(", *ta, op, *tb, ")"], (ea & eb) if op == "AND" else (ea | eb))
    negate = children.map(lambda c: (["NOT", "(", *c[0], ")"], ~c[1]))
    return st.one_of(st.tuples(st.sampled_from(["AND", "OR"]), children, children).map(build),
                     negate)


PREDICATES = st.recursive(_atom(), _combine, max_leaves=6)
HOSTILE = ["; COPY (SELECT 1) TO '{root}/out.csv'", ";", "-- ", "/* x */",
           "OR model IN (SELECT content FROM read_text('{secret}'))",
           "(SELECT * FROM read_csv('{csv}'))", "IN (FROM read_csv('{csv}'))",
           "AND EXISTS (SELECT 1)", "$$", "`", "[", "#", "E'x'", "\\", "?", "{{", "'"]


def _rows(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(COLUMNS).sort("segment")


def _check_valid_predicate(world, pred) -> None:
    tokens, twin = pred
    sql = " ".join(tokens)
    base = sf.scan_trials(world["ds"]).collect()
    expected = _rows(base.filter(twin))
    assert _rows(sf.scan_trials(world["ds"], where=sql).collect()).equals(expected), sql
    assert _rows(apply_where(base.lazy(), sql).collect()).equals(expected), sql
    duck = query(f"SELECT * FROM trials WHERE {sql}", world["ds"])
    assert _rows(duck).equals(expected), sql


def _check_corrupted_predicate(world, pred, hostile, at) -> None:
    tokens = list(pred[0])
    tokens.insert(at % (len(tokens) + 1), _fill(hostile, world))
    sql = " ".join(tokens)
    with _unchanged(world["root"]):
        with pytest.raises(ScoreframeError) as err:
            sf.scan_trials(world["one"], where=sql).collect()
        assert SECRET not in str(err.value) and len(str(err.value)) < 1000
        code, out, err_text = _cli(["evaluate", str(world["one"]), "--where", sql])
    _assert_user_error(code, out, err_text)


def _check_valid_query(world, pred, limit) -> None:
    tokens, twin = pred
    sql_file = world["work"] / "q.sql"
    sql_file.write_text(f"-- generated\nSELECT model, segment, score FROM trials\n"
                        f"WHERE {' '.join(tokens)}\nORDER BY segment\nLIMIT {limit};\n")
    out_file = world["work"] / "q.csv"
    code, out, err = _cli(["query", str(sql_file), str(world["ds"]), "-o", str(out_file),
                           "--overwrite"])
    assert code == 0, err
    got = pl.read_csv(out_file, schema={"model": pl.String, "segment": pl.String,
                                        "score": pl.Float64})
    expected = (sf.scan_trials(world["ds"]).collect().filter(twin)
                .select("model", "segment", "score").sort("segment").head(limit))
    assert got.equals(expected), sql_file.read_text()


QUERY_CORRUPTIONS = [
    "{q}; COPY (SELECT 1) TO '{root}/out.csv'",
    "ATTACH '{root}/x.db' AS x; {q}",
    "{q} UNION ALL SELECT content, content, 0.0 FROM read_text('{secret}')",
    "WITH s AS (SELECT content FROM read_text('{secret}')) {q} AND model IN (FROM s)",
    "SET temp_directory = '{root}'; {q}",
    "{q}; INSTALL httpfs",
    "{q}; PRAGMA version",
    "CREATE TABLE t AS {q}",
    "EXPORT DATABASE '{root}/exp'; {q}",
]


def _check_corrupted_query(world, pred, corruption) -> None:
    q = f"SELECT model, segment, score FROM trials WHERE {' '.join(pred[0])}"
    sql_file = world["work"] / "bad.sql"
    sql_file.write_text(_fill(corruption, world, q=q))
    with _unchanged(world["root"]):
        _assert_user_error(*_cli(["query", str(sql_file), str(world["ds"])]))


def _random_text_never_crashes(world, text) -> None:
    """Any text at all: a result, or one ScoreframeError without the secret; nothing written."""
    with _unchanged(world["root"]):
        try:
            sf.scan_trials(world["one"], where=text).collect()
        except ScoreframeError as exc:
            assert SECRET not in str(exc) and len(str(exc)) < 1000
        try:
            query(text, world["one"])
        except ScoreframeError as exc:
            assert SECRET not in str(exc) and len(str(exc)) < 1000


SHORT = settings(max_examples=15, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])
LONG = settings(max_examples=400, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
TEXT = st.lists(st.sampled_from(list("scoregndlab ='f;-*/()$`\"\\<>0123456789,.{}") +
                               ["SELECT", " FROM ", "read_text('@SECRET@')", "--", "/*",
                                "COPY", "\x1b", "\n"]), max_size=40).map("".join)


@SHORT
@given(pred=PREDICATES)
def test_fuzz_valid_predicates_match_the_polars_twin(world, pred):
    _check_valid_predicate(world, pred)


@SHORT
@given(pred=PREDICATES, hostile=st.sampled_from(HOSTILE), at=st.integers(0, 50))
def test_fuzz_corrupted_predicates_fail(world, pred, hostile, at):
    _check_corrupted_predicate(world, pred, hostile, at)


@SHORT
@given(pred=PREDICATES, limit=st.integers(1, 80))
def test_fuzz_valid_queries_match_the_polars_twin(world, pred, limit):
    _check_valid_query(world, pred, limit)


@SHORT
@given(pred=PREDICATES, corruption=st.sampled_from(QUERY_CORRUPTIONS))
def test_fuzz_corrupted_queries_fail(world, pred, corruption):
    _check_corrupted_query(world, pred, corruption)


@SHORT
@given(text=TEXT)
def test_fuzz_any_text_is_a_result_or_one_clean_error(world, text):
    _random_text_never_crashes(world, text.replace("@SECRET@", str(world["secret"])))


@pytest.mark.slow
@LONG
@given(pred=PREDICATES)
def test_fuzz_valid_predicates_long(world, pred):
    _check_valid_predicate(world, pred)


@pytest.mark.slow
@LONG
@given(pred=PREDICATES, hostile=st.sampled_from(HOSTILE), at=st.integers(0, 50))
def test_fuzz_corrupted_predicates_long(world, pred, hostile, at):
    _check_corrupted_predicate(world, pred, hostile, at)


@pytest.mark.slow
@LONG
@given(pred=PREDICATES, limit=st.integers(1, 80))
def test_fuzz_valid_queries_long(world, pred, limit):
    _check_valid_query(world, pred, limit)


@pytest.mark.slow
@LONG
@given(pred=PREDICATES, corruption=st.sampled_from(QUERY_CORRUPTIONS))
def test_fuzz_corrupted_queries_long(world, pred, corruption):
    _check_corrupted_query(world, pred, corruption)


@pytest.mark.slow
@LONG
@given(text=TEXT)
def test_fuzz_any_text_long(world, text):
    _random_text_never_crashes(world, text.replace("@SECRET@", str(world["secret"])))


def test_a_query_registers_duckdb_temp_directory(tmp_path, monkeypatch):
    """A killed query's DuckDB spill files are removed by the next command (issue 26 item 7)."""
    from scoreframe.frames import sql as sql_mod
    from scoreframe.io.atomic import clean_stale, host_tag

    monkeypatch.setenv("SCOREFRAME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SCOREFRAME_SPILL_DIR", str(tmp_path))
    f = tmp_path / "t.parquet"
    pl.DataFrame({"model": ["a"], "segment": ["x"], "score": [1.0],
                  "label": [True]}).write_parquet(f)
    seen: list[Path] = []
    real = sql_mod.registered_temp

    def spy(path):
        seen.append(Path(path))
        Path(path).mkdir()  # as DuckDB would when it spills
        (Path(path) / "duckdb_temp_block").write_bytes(b"x")
        return real(path)

    monkeypatch.setattr(sql_mod, "registered_temp", spy)
    assert sf.query("SELECT count(*) AS n FROM trials", f)["n"][0] == 1
    assert len(seen) == 1 and seen[0].parent == tmp_path and not seen[0].exists()
    # a record whose owner is gone (no lock held) goes with its entry at any command's start
    stale = Path(sql_mod._temp_directory())  # named as a query names it
    stale.mkdir()
    state = tmp_path / "state" / "temps"
    state.mkdir(parents=True, exist_ok=True)
    (state / f"{host_tag()}-999999-abc.json").write_text(
        json.dumps({"path": str(stale), "host": host_tag(), "pid": 999999}))
    assert stale in clean_stale() and not stale.exists()


# --- the catalogue: named tables (query --table, --sql --table, tables=) ----------------------
def _meta(world: dict[str, Path]) -> dict[str, Path]:
    """Metadata tables beside the world (a CSV, a Parquet file), with a secret next to them."""
    meta = world["root"] / "meta"
    if not meta.exists():
        meta.mkdir()
        models = pl.DataFrame({"model": [f"m{i}" for i in range(7)],
                               "age": ["young", "old"] * 3 + ["old"]})
        models.write_csv(meta / "models.csv")
        pl.DataFrame({"segment": [f"s{i}" for i in range(60)],
                      "mic": [i % 2 for i in range(60)]}).write_parquet(meta / "segs.parquet")
        (meta / "beside.txt").write_text(f"{SECRET}\n")
        pl.DataFrame({"x": [f"{SECRET}_META"]}).write_parquet(meta / "beside.parquet")
    return {"meta": meta, "models": meta / "models.csv", "segs": meta / "segs.parquet"}


#: (--table arguments, substring of the message); run with `select count(*) from trials`.
TABLE_ERRORS = {
    "shadows-trials": (["trials={models}"], "shadows the trials"),
    "shadows-trials-case": (["Trials={models}"], "shadows the trials"),
    "missing-file": (["models={meta}/nope.csv"], "no such file"),
    "missing-parquet": (["segs={meta}/nope.parquet"], "no such file"),
    "duplicate": (["models={models}", "models={segs}"], "given twice"),
    "duplicate-case": (["models={models}", "MODELS={segs}"], "given twice"),
    "not-identifier-digit": (["1models={models}"], "plain SQL identifier"),
    "not-identifier-dash": (["my-models={models}"], "plain SQL identifier"),
    "not-identifier-space": (["my models={models}"], "plain SQL identifier"),
    "not-identifier-quote": (['m"; COPY trials TO \'x.csv\'; --={models}'],
                             "plain SQL identifier"),
    "not-identifier-long": (["m" * 64 + "={models}"], "plain SQL identifier"),
    "no-name": (["={models}"], "expected NAME=PATH"),
    "no-path": (["models="], "expected NAME=PATH"),
    "no-equals": (["models"], "expected NAME=PATH"),
}
#: SQL that reaches beyond the dataset and the named tables (given models and segs).
TABLE_ESCAPES = {
    "csv-table-file-by-path": ("SELECT * FROM read_csv('{models}')", OUTSIDE),
    "neighbour-of-a-table": ("SELECT content FROM read_text('{meta}/beside.txt')", OUTSIDE),
    "parquet-neighbour": ("SELECT * FROM read_parquet('{meta}/beside.parquet')", OUTSIDE),
    "glob-beside-tables": ("SELECT * FROM read_parquet('{meta}/*.parquet')", OUTSIDE),
    "secret-with-tables": ("SELECT * FROM trials JOIN models USING (model) WHERE model IN "
                           "(SELECT content FROM read_text('{secret}'))", OUTSIDE),
    "copy-over-a-table": ("COPY (SELECT 1 AS x) TO '{segs}' (FORMAT parquet)", ONE_QUERY),
    "create-over-a-table": ("CREATE OR REPLACE TABLE models AS SELECT 1", ONE_QUERY),
}


def _table_args(tokens: list[str], paths: dict[str, Path]) -> list[str]:
    return [a for t in tokens for a in ("--table", _fill(t, paths))]


@pytest.mark.parametrize("command", ["query", "evaluate"])
@pytest.mark.parametrize("case", sorted(TABLE_ERRORS))
def test_bad_tables_are_refused_by_the_cli(case, command, world):
    paths = {**world, **_meta(world)}
    tokens, match = TABLE_ERRORS[case]
    sql_file = world["work"] / "count.sql"
    sql_file.write_text("select count(*) as n from trials")
    argv = (["query", str(sql_file), str(world["ds"])] if command == "query"
            else ["evaluate", str(world["ds"]), "--sql", str(sql_file)])
    with _unchanged(world["root"]):
        _assert_user_error(*_cli([*argv, *_table_args(tokens, paths), "-o",
                                  str(world["root"] / "out.csv")]), match=match)


@pytest.mark.parametrize("case", sorted(k for k, (t, _) in TABLE_ERRORS.items()
                                        if "=" in t[0] and not t[0].startswith("=")
                                        and not t[0].endswith("=") and "duplicate" not in k))
def test_bad_tables_are_refused_by_the_library(case, world):
    paths = {**world, **_meta(world)}
    tokens, match = TABLE_ERRORS[case]
    tables = dict(_fill(t, paths).split("=", 1) for t in tokens)
    for run in (query, sf.scan_query):
        with _unchanged(world["root"]), pytest.raises(ScoreframeError, match=match):
            run("select count(*) as n from trials", world["ds"], tables=tables)
    with pytest.raises(ScoreframeError, match=match):
        connect(world["ds"], tables=tables).close()


def test_names_that_differ_only_in_case_are_refused_by_the_library(world):
    paths = _meta(world)
    with pytest.raises(ScoreframeError, match="given twice"):
        query("select 1", world["ds"], tables={"models": paths["models"],
                                               "Models": paths["segs"]})
    with pytest.raises(ScoreframeError, match="given twice"):
        connect(world["ds"], name="meta", tables={"META": paths["models"]})


@pytest.mark.parametrize("case", sorted(TABLE_ESCAPES))
def test_tables_open_only_their_own_files(case, world):
    paths = {**world, **_meta(world)}
    sql, match = TABLE_ESCAPES[case]
    sql_file = world["work"] / f"{case}.sql"
    sql_file.write_text(_fill(sql, paths))
    tables = ["models={models}", "segs={segs}"]
    with _unchanged(world["root"]):
        for argv in (["query", str(sql_file), str(world["ds"])],
                     ["evaluate", str(world["ds"]), "--sql", str(sql_file)]):
            _assert_user_error(*_cli([*argv, *_table_args(tables, paths)]), match=match)
        with pytest.raises(ScoreframeError, match=match) as err:
            query(_fill(sql, paths), world["ds"], sql_name=f"{case}.sql",
                  tables={"models": paths["models"], "segs": paths["segs"]})
        assert SECRET not in str(err.value)


@pytest.mark.parametrize("case", sorted(QUERY_ESCAPES))
def test_query_escapes_stay_refused_with_tables(case, world):
    """Every escape of the catalogue above, with two named tables open."""
    paths = _meta(world)
    sql, match = QUERY_ESCAPES[case]
    ds = world["one"] if "other-dataset" in case else world["ds"]
    with _unchanged(world["root"]), pytest.raises(ScoreframeError, match=match) as err:
        query(_fill(sql, world), ds, sql_name=f"{case}.sql",
              tables={"models": paths["models"], "segs": paths["segs"]})
    assert SECRET not in str(err.value)


def test_a_connection_with_tables_has_no_file_access(world):
    paths = _meta(world)
    with _unchanged(world["root"]), contextlib.closing(
            connect(world["ds"], tables={"models": paths["models"], "segs": paths["segs"]})) as con:
        assert {r[0] for r in con.sql("show tables").fetchall()} == {"trials", "models", "segs"}
        for sql in (f"SELECT * FROM read_parquet('{paths['segs']}')",
                    f"COPY (SELECT 1 AS x) TO '{paths['segs']}' (FORMAT parquet)",
                    f"SELECT * FROM read_csv('{paths['models']}')"):
            with pytest.raises(duckdb.PermissionException):
                con.execute(sql)
