"""compare's pairing of the two systems in bounded memory: the same frame and errors as the old
in-memory join, in one bucket or several; McNemar counts against a brute-force count."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import scoreframe.results.compare as cmp
from scoreframe.errors import AlignmentError, ScoreframeError, message
from scoreframe.frames.lazy import scan_raw
from scoreframe.metrics import Intervals
from scoreframe.metrics._options import as_operating_points
from scoreframe.results import _pairs
from scoreframe.results.evaluate import group_statistics
from scoreframe.stats import Engine
from scoreframe.stats.groups import POOLED

P_TARGETS = (0.5, 0.1, 0.01)  # thresholds 0, ~2.197, ~4.595: scores rounded to 0.5 tie at 0
#: A memory limit that splits the few thousand rows of these tests into several buckets.
SMALL = Engine("streaming", memory_limit=200_000)


# --- the implementation before the bounded pairing, kept as the reference twin -------------

def _old_aligned(lf: pl.LazyFrame, a: str, b: str, by: list[str]) -> pl.DataFrame:
    key = ["model", "segment"]
    cols = [*key, "score", "label", *by]
    base = lf.select(pl.col("system").cast(pl.String), *[pl.col(c).cast(pl.String)
                                                         for c in (*key, *by)],
                     pl.col("score").cast(pl.Float64), "label")
    fa = base.filter(pl.col("system") == a).select(cols).collect()
    fb = base.filter(pl.col("system") == b).select(cols).collect()
    for name, f in ((a, fa), (b, fb)):
        if f.height == 0:
            raise ScoreframeError(message(f"system `{name}` has no trials",
                                          hint="Check the system names (and `where`)."))
        dup = f.height - f.select(key).unique().height
        if dup:
            raise AlignmentError(message(f"system `{name}` scores some trials more than once",
                                         got=f"{dup} duplicate (model, segment) trial(s)"))
    only_a = fa.join(fb, on=key, how="anti").height
    only_b = fb.join(fa, on=key, how="anti").height
    if only_a or only_b:
        raise AlignmentError(message(
            f"systems `{a}` and `{b}` do not score the same trials",
            expected="the same (model, segment) trials in both",
            got=f"{only_a} trial(s) only in `{a}`, {only_b} only in `{b}` "
                f"({fa.height} and {fb.height} in all)",
            hint="Restrict both to the common trials (`where=`) or align the score files "
                 "first (scoreframe.align)."))
    joined = fa.join(fb.select(*key, pl.col("score").alias("score_b"),
                               pl.col("label").alias("label_b")), on=key)
    bad = joined.filter(pl.col("label") != pl.col("label_b")).height
    if bad:
        raise AlignmentError(message("the two systems disagree on trial labels",
                                     got=f"{bad} trial(s) with different labels"))
    return joined.rename({"score": "score_a"}).drop("label_b")


def _old_mcnemar(data: Any, a: str, b: str, by: list[str], where: str | None, pooled: bool,
                 ops: Any, engine: Any, **_: Any) -> list[dict[str, object]]:
    both = cmp._checked_pair(data, a, b, by, where)
    schema = scan_raw(data, where=where).collect_schema()
    aligned = _old_aligned(scan_raw(data, where=both).with_columns(
        cmp._label_expr(schema)).filter(pl.col("label").is_not_null()), a, b, by)
    lab = pl.col("label")
    aggs = []
    for k, t in enumerate(ops.threshold.tolist()):
        acc_a, acc_b = pl.col("score_a") >= t, pl.col("score_b") >= t
        aggs += [(lab & ~acc_a).sum().alias(f"miss_a{k}"), (lab & ~acc_b).sum().alias(f"miss_b{k}"),
                 (lab & ~acc_a & acc_b).sum().alias(f"miss_ao{k}"),
                 (lab & acc_a & ~acc_b).sum().alias(f"miss_bo{k}"),
                 (~lab & acc_a).sum().alias(f"fa_a{k}"), (~lab & acc_b).sum().alias(f"fa_b{k}"),
                 (~lab & acc_a & ~acc_b).sum().alias(f"fa_ao{k}"),
                 (~lab & ~acc_a & acc_b).sum().alias(f"fa_bo{k}")]
    tables = []
    if by:
        tables.append(aligned.group_by(by).agg(aggs))
        if pooled:
            tables.append(aligned.select(aggs).with_columns([pl.lit(POOLED).alias(c)
                                                             for c in by]))
    else:
        tables.append(aligned.select(aggs))
    return cmp._mcnemar_rows(tables, by, ops)


# --- data ----------------------------------------------------------------------------------

def _pair(n: int = 3000, seed: int = 0, *, int_ids: bool = False) -> pl.DataFrame:
    """Two systems on the same trials; scores rounded to 0.5 (ties, some at a threshold)."""
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.3
    sa = np.round(np.where(label, rng.normal(1.5, 2, n), rng.normal(-1.5, 2, n)) * 2) / 2
    sb = np.round((sa + rng.normal(0, 1.5, n)) * 2) / 2
    model = rng.integers(0, 50, n)
    seg = np.arange(n)
    ids: dict[str, Any] = ({"model": model, "segment": seg} if int_ids else
                           {"model": [f"m{m}" for m in model], "segment": [f"s{s}" for s in seg]})
    cond = {"cond": rng.choice(["x", "y", "z"], n), "band": rng.choice(["lo", "hi"], n)}
    a = pl.DataFrame(ids | cond | {"label": label, "system": "A", "score": sa})
    b = pl.DataFrame(ids | cond | {"label": label, "system": "B", "score": sb})
    return pl.concat([b, a]).sample(fraction=1.0, shuffle=True, seed=seed)  # rows mixed


def _buckets(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the bucket counts the pairing uses."""
    seen: list[int] = []
    real = _pairs.id_buckets

    def spy(rows: int, limit: int, **kw: int) -> int:
        seen.append(real(rows, limit, **kw))
        return seen[-1]

    monkeypatch.setattr(cmp, "id_buckets", spy)
    return seen


def _statistics(df: pl.DataFrame, by: list[str], ops: Any) -> Any:
    stats, _ = group_statistics(df, by=["system", *by], p_target=ops.p_target,
                                c_miss=ops.c_miss, c_fa=ops.c_fa, engine="memory",
                                intervals=Intervals(bootstrap=20))
    return stats


@pytest.mark.parametrize(("by", "pooled", "int_ids"), [
    ([], True, False), (["cond"], True, False), (["cond", "band"], False, True),
    (["cond", "band"], True, False)])
def test_same_frame_as_the_in_memory_join_in_one_or_many_buckets(
        monkeypatch: pytest.MonkeyPatch, by: list[str], pooled: bool, int_ids: bool) -> None:
    df = _pair(seed=len(by) + 3 * int_ids, int_ids=int_ids)
    ops = as_operating_points(P_TARGETS)
    stats = _statistics(df, by, ops)
    kw: dict[str, Any] = {"by": by, "where": None, "operating_points": ops,
                          "intervals": Intervals(bootstrap=20), "pooled": pooled}
    with monkeypatch.context() as m:
        m.setattr(cmp, "_mcnemar", _old_mcnemar)
        want = cmp.compare_statistics(df, stats, "A", "B", **kw)
    groups = int(np.prod([df[c].n_unique() for c in by])) + (1 if by and pooled else 0)
    assert want.filter(pl.col("test") == "mcnemar exact").height == 2 * len(P_TARGETS) * groups
    seen = _buckets(monkeypatch)
    for engine in ("memory", "auto", "streaming", SMALL, Engine(memory_limit=200_000)):
        got = cmp.compare_statistics(df, stats, "A", "B", engine=engine, **kw)
        assert_frame_equal(got, want)
    assert seen[-1] > 3 and seen[-2] > 3  # the small limits split the trials into buckets


def test_compare_bounds_the_pairing_with_its_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    df = _pair(2000, seed=9)
    seen = _buckets(monkeypatch)
    small = cmp.compare(df, "A", "B", by="cond", operating_points=P_TARGETS,
                        intervals=Intervals(bootstrap=10), engine=Engine(memory_limit=100_000))
    assert seen and seen[-1] > 3
    whole = cmp.compare(df, "A", "B", by="cond", operating_points=P_TARGETS,
                        intervals=Intervals(bootstrap=10), engine="memory")
    assert_frame_equal(small, whole)


def test_mcnemar_counts_equal_a_brute_force_count() -> None:
    df = _pair(2500, seed=11)
    ops = as_operating_points(P_TARGETS)
    thr = [float(t) for t in ops.threshold]
    a = df.filter(pl.col("system") == "A").sort("segment")
    b = df.filter(pl.col("system") == "B").sort("segment")
    assert a["segment"].to_list() == b["segment"].to_list()
    for engine in ("memory", SMALL):
        sums = cmp._pair_counts(df, "A", "B", ["cond"], None, thr, engine)
        for cond in ("x", "y", "z"):
            row = sums.filter(pl.col("cond") == cond).row(0, named=True)
            m = (a["cond"] == cond).to_numpy()
            lab, sa, sb = a["label"].to_numpy()[m], a["score"].to_numpy()[m], \
                b["score"].to_numpy()[m]
            assert row["rows_a"] == row["rows_b"] == m.sum()
            assert row["dup_a"] == row["only_a"] == row["only_b"] == row["bad_label"] == 0
            for k, t in enumerate(thr):
                acc_a, acc_b = sa >= t, sb >= t
                want = {"miss_a": lab & ~acc_a, "miss_b": lab & ~acc_b,
                        "miss_ao": lab & ~acc_a & acc_b, "miss_bo": lab & acc_a & ~acc_b,
                        "fa_a": ~lab & acc_a, "fa_b": ~lab & acc_b,
                        "fa_ao": ~lab & acc_a & ~acc_b, "fa_bo": ~lab & ~acc_a & acc_b}
                for name, mask in want.items():
                    assert row[f"{name}{k}"] == np.count_nonzero(mask), (engine, cond, name, t)
    assert np.any(a["score"].to_numpy() == 0.0)  # ties at the threshold of p_target 0.5


def _misaligned() -> dict[str, pl.DataFrame]:
    df = _pair(600, seed=5)
    is_b = pl.col("system") == "B"
    cases = {
        "only": df.filter(~(is_b & pl.col("segment").is_in(["s1", "s2", "s3"]))),
        "both_sides": pl.concat([
            df.filter(~(is_b & pl.col("segment").is_in(["s1", "s2"]))),
            pl.DataFrame({"model": ["mx"], "segment": ["sx"], "cond": ["x"], "band": ["lo"],
                          "label": [True], "system": ["B"], "score": [1.0]})]),
        "labels": df.with_columns(pl.when(is_b & pl.col("segment").is_in(["s4", "s9"]))
                                  .then(~pl.col("label")).otherwise(pl.col("label"))),
        "dup_a": pl.concat([df, df.filter((pl.col("system") == "A")
                                          & pl.col("segment").is_in(["s7", "s8"]))]),
        "dup_b_only": pl.concat([df, df.filter(is_b & (pl.col("segment") == "s7"))]),
        "no_b": df.filter(~is_b),
    }
    return cases


@pytest.mark.parametrize("case", list(_misaligned()))
def test_alignment_errors_keep_their_messages(case: str) -> None:
    df = _misaligned()[case]
    ops = as_operating_points(P_TARGETS)
    args = (df, "A", "B", ["cond"], None, True, ops)
    with pytest.raises(ScoreframeError) as old:
        _old_mcnemar(*args, "memory")
    for engine in ("memory", SMALL):
        with pytest.raises(type(old.value)) as new:
            cmp._mcnemar(*args, engine)
        assert str(new.value) == str(old.value)
    expected = {"only": "3 trial(s) only in `A`, 0 only in `B`",
                "both_sides": "2 trial(s) only in `A`, 1 only in `B`",
                "labels": "2 trial(s) with different labels",
                "dup_a": "system `A` scores some trials more than once",
                "dup_b_only": "1 duplicate (model, segment) trial(s)",
                "no_b": "system `B` has no trials"}[case]
    assert expected in str(old.value)
    if case != "no_b":  # through compare (duplicates: only without the pass's own check)
        with pytest.raises(AlignmentError, match=expected.replace("(", r"\(")
                           .replace(")", r"\)")):
            cmp.compare(df, "A", "B", by="cond", intervals=Intervals(bootstrap=5),
                        engine=SMALL, validate=not case.startswith("dup"))


# --- pairing in the rows' order (both systems list the same trials in the same order) -------

def _in_order(df: pl.DataFrame) -> pl.DataFrame:
    """The two systems one after the other, each in the trials' order (as score files are)."""
    n = pl.col("segment").cast(pl.String).str.strip_prefix("s").cast(pl.Int64, strict=False)
    return df.with_columns(n.alias("__n")).sort("system", "__n").drop("__n")


def _hash_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the hash pairings (:func:`_pair_sums` calls) the pairing makes."""
    calls: list[int] = []
    real = cmp._pair_sums

    def spy(*args: Any) -> pl.LazyFrame:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(cmp, "_pair_sums", spy)
    return calls


@pytest.mark.parametrize("by", [[], ["cond"], ["cond", "band"]])
def test_rows_in_order_are_paired_without_a_hash_and_give_the_same_sums(
        monkeypatch: pytest.MonkeyPatch, by: list[str]) -> None:
    ops = as_operating_points(P_TARGETS)
    thr = [float(t) for t in ops.threshold]
    mixed = _pair(seed=20 + len(by))
    ordered = _in_order(mixed)
    key = by or None
    want = cmp._pair_counts(mixed, "A", "B", by, None, thr, "memory")
    calls = _hash_passes(monkeypatch)
    for engine in ("memory", "auto", Engine("streaming", memory_limit="1GiB")):
        got = cmp._pair_counts(ordered, "A", "B", by, None, thr, engine, unique=True)
        assert_frame_equal(got, want, check_row_order=key is None, check_column_order=True)
    assert calls == []  # in order: no hash pairing
    # a limit below what the rows of one system may take while buffered: by hash, in buckets
    assert ordered.height * cmp.IN_ORDER_BYTES_PER_ROW > SMALL.limit
    got = cmp._pair_counts(ordered, "A", "B", by, None, thr, SMALL, unique=True)
    assert_frame_equal(got, want, check_row_order=key is None, check_column_order=True)
    assert len(calls) > 1
    calls.clear()
    got = cmp._pair_counts(mixed, "A", "B", by, None, thr, "memory", unique=True)
    assert calls == [1]  # rows mixed: paired by hash after the ordered attempt
    assert_frame_equal(got, want, check_row_order=key is None)


def test_rows_in_order_over_many_files_and_a_selection(tmp_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ordered = _in_order(_pair(4000, seed=31))
    for k, i in enumerate(range(0, ordered.height, 700)):  # files cut across the systems
        ordered.slice(i, 700).write_parquet(tmp_path / f"part-{k:03d}.parquet")
    ops = as_operating_points(P_TARGETS)
    thr = [float(t) for t in ops.threshold]
    where = "band = 'lo'"
    want = cmp._pair_counts(ordered, "A", "B", ["cond"], where, thr, "memory")
    calls = _hash_passes(monkeypatch)
    got = cmp._pair_counts(str(tmp_path), "A", "B", ["cond"], where, thr, "auto", unique=True)
    assert calls == []
    assert_frame_equal(got, want, check_row_order=False)


@pytest.mark.parametrize("case", ["only", "both_sides", "labels", "no_b"])
def test_rows_in_order_keep_the_alignment_errors(case: str) -> None:
    df = _in_order(_misaligned()[case])
    ops = as_operating_points(P_TARGETS)
    args = (df, "A", "B", ["cond"], None, True, ops)
    with pytest.raises(ScoreframeError) as old:
        _old_mcnemar(*args, "memory")
    with pytest.raises(type(old.value)) as new:
        cmp._mcnemar(*args, "memory", unique=True)
    assert str(new.value) == str(old.value)


def test_compare_pairs_in_order_when_its_pass_checked_the_trials(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ordered = _in_order(_pair(2000, seed=41))
    kw: dict[str, Any] = {"by": "cond", "operating_points": P_TARGETS,
                          "intervals": Intervals(bootstrap=10)}
    unchecked = cmp.compare(ordered, "A", "B", validate=False, **kw)  # hash pairing
    calls = _hash_passes(monkeypatch)
    assert_frame_equal(cmp.compare(ordered, "A", "B", **kw), unchecked)
    assert calls == []
    with_session = ordered.with_columns(pl.lit("x").alias("session"))
    assert_frame_equal(cmp.compare(with_session, "A", "B", validate=["segment", "session"],
                                   **kw), unchecked)
    assert calls == [1]  # unique on (segment, session) says nothing of (model, segment)


def test_unique_trials_follows_the_validation_and_the_write_mark(tmp_path: Any) -> None:
    from scoreframe.io.parquet import write_trials

    df = _in_order(_pair(300, seed=3))
    assert cmp.unique_trials(df, True) and cmp.unique_trials(df, ["segment"])
    assert not cmp.unique_trials(df, False)
    assert not cmp.unique_trials(df, ["segment", "band"])
    write_trials(df, tmp_path / "ok.parquet")
    assert cmp.unique_trials(tmp_path / "ok.parquet", True)
    assert not cmp.unique_trials(tmp_path / "ok.parquet", False)
    wide = df.with_columns(pl.lit("x").alias("session"))
    write_trials(wide, tmp_path / "wide.parquet", trial_id=["system", "model", "segment",
                                                           "session"])
    assert not cmp.unique_trials(tmp_path / "wide.parquet", True)
