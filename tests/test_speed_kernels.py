"""The fast paths of the in-memory point path (issue 22) against their plain definitions.

Exact sums of ascending terms against exact rational sums; threaded softplus and the split
merge of sorted runs bit for bit against the one-thread computations; base-group statistics
the same with one core and with several.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from scoreframe import _cores
from scoreframe.kernels import elementary as el
from scoreframe.kernels import sort_scores
from scoreframe.kernels.sorted_scores import SortedScores
from scoreframe.stats import reduce as red
from scoreframe.stats.groups import Unit
from scoreframe.stats.summary import Request


def exact(x: np.ndarray) -> int:
    """The sum in units of 2**-EXACT_SCALE, in Python integers (slow, obviously right)."""
    vals, counts = np.unique(x, return_counts=True)
    total = 0
    for v, c in zip(vals.tolist(), counts.tolist(), strict=True):
        m, e = math.frexp(v)  # v = m * 2**e exactly, 0.5 <= m < 1: m * 2**53 is an integer
        total += c * (int(m * 2.0**53) << (e - 53 + el.EXACT_SCALE))
    return total


def test_reference_sum_is_the_rational_sum() -> None:
    x = np.array([5e-324, 0.1, 0.1, 3.0, 1e300])
    assert Fraction(exact(x), 1 << el.EXACT_SCALE) == sum(map(Fraction, x.tolist()))


@pytest.mark.parametrize("case", ["one_value_long_run", "max_mantissa", "subnormals",
                                  "zeros_and_tiny", "wide_range", "softplus_terms"])
def test_ascending_exact_sum_equals_rational_sum(case: str) -> None:
    rng = np.random.default_rng(11)
    x = {
        # bit patterns near 2**62: their sum wraps uint64 many times over
        "one_value_long_run": np.full(1 << 22, 3.0),
        "max_mantissa": np.full(300_001, 2.0 - 2.0**-52),
        "subnormals": np.sort(rng.integers(1, 1 << 52, 50_000) * 5e-324),
        "zeros_and_tiny": np.concatenate([np.zeros(1000), np.full(1000, 5e-324),
                                          np.full(1000, 2.2250738585072014e-308)]),
        "wide_range": np.sort(np.abs(rng.standard_normal(20_000))
                              * 10.0 ** rng.integers(-300, 300, 20_000)),
        "softplus_terms": np.sort(el.softplus(rng.standard_normal(200_000) * 4)),
    }[case]
    want = exact(x)
    assert el.exact_sum(x, ascending=True) == want
    assert el.exact_sum(x) == want  # the general path agrees


def test_ascending_exact_sum_whose_float_sum_overflows() -> None:
    x = np.full(1000, 1.7e308)  # the float sum of the run is inf: the halves path takes over
    assert el.exact_sum(x, ascending=True) == exact(x) == el.exact_sum(x)


def test_threaded_softplus_is_bitwise_the_single_thread_one() -> None:
    rng = np.random.default_rng(12)
    n = el.PARALLEL_MIN * 3 + 77
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 4, n)
    x[::101], x[::103] = np.inf, -np.inf
    one = np.empty(n)
    for a in range(0, n, 1 << 16):  # small slices: each on the single-thread path
        one[a:a + (1 << 16)] = el.softplus(x[a:a + (1 << 16)])
    pairs = ((x, one), (x[::-1], one[::-1]), (x[:-1].reshape(-1, 2), one[:-1].reshape(-1, 2)))
    for arr, ref in pairs:
        got = el.softplus(arr)
        assert got.shape == ref.shape
        assert np.array_equal(got.view(np.int64), np.ascontiguousarray(ref).view(np.int64))


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (el.SOFTPLUS_BLOCK + 1,),
                                   (3 * el.SOFTPLUS_BLOCK - 7,), (7, el.SOFTPLUS_BLOCK + 3)])
def test_blocked_softplus_is_bitwise_the_whole_array_formula(shape: tuple[int, ...]) -> None:
    """Computed block by block in cache, the five elementwise passes give the bits of the
    same passes over the whole array (the formula written out below)."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 4, shape)
    if x.size > 2:
        x.flat[0], x.flat[1] = np.inf, -np.inf
    flat = np.atleast_1d(x)
    ref = np.exp(-np.abs(flat))
    np.log1p(ref, out=ref)
    ref += np.maximum(flat, 0.0)
    got = np.atleast_1d(el.softplus(x))
    assert got.shape == flat.shape
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))
    strided = x.reshape(-1)[::3] if x.size > 3 else flat
    assert np.array_equal(el.softplus(strided), np.ascontiguousarray(ref.reshape(-1)[::3])
                          if x.size > 3 else ref)


@pytest.mark.parametrize("kind", ["gauss", "ties", "signed_zeros", "infinities", "empty_runs"])
def test_split_merge_of_sorted_runs_is_one_stable_sort(kind: str) -> None:
    rng = np.random.default_rng(13)
    runs = []
    for i in range(17):
        m = 0 if kind == "empty_runs" and i % 3 == 0 else int(rng.integers(50_000, 150_000))
        if kind == "ties":
            x = rng.integers(-3, 3, m).astype(np.float64)
        elif kind == "signed_zeros":
            x = np.zeros(m) * rng.choice([-1.0, 1.0], m)
        elif kind == "infinities":
            x = np.where(rng.random(m) < 0.05, np.inf, rng.standard_normal(m))
            x *= rng.choice([-1.0, 1.0], m)
        else:
            x = rng.standard_normal(m)
        runs.append(np.sort(x, kind="stable"))
    assert sum(r.shape[0] for r in runs) >= 1 << 20  # the split path
    want = np.sort(np.concatenate(runs), kind="stable")
    got = red._merge_runs(runs)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))  # signs of zeros too


def test_unit_statistics_do_not_depend_on_the_number_of_cores(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    rng = np.random.default_rng(14)
    base = []
    for _ in range(5):
        lab = rng.random(400_000) < 0.3
        sc = np.round(rng.standard_normal(lab.shape[0]) + 1.5 * lab, 1)
        base.append(sort_scores(sc[lab], sc[~lab]))
    units = [Unit({"c": str(i)}, (i,)) for i in range(5)] + [Unit({"c": None}, tuple(range(5)),
                                                                  pooled=True)]
    request = Request(np.array([-1.0, 0.0, 2.0]))

    def run(cores: int) -> list[red.UnitStats]:
        monkeypatch.setattr(_cores.os, "sched_getaffinity", lambda _pid: set(range(cores)),
                            raising=False)
        return red.unit_statistics(units, base, request)

    one, two = run(1), run(2)
    for a, b in zip(one, two, strict=True):
        for f in ("n_tar", "n_non", "cllr_tar", "cllr_non", "cllr_inf"):
            assert getattr(a.stats, f) == getattr(b.stats, f)
        for f in ("n_miss", "n_fa"):
            assert np.array_equal(getattr(a.stats, f), getattr(b.stats, f))
        for f in ("n_tar", "n_non", "start", "lo", "hi", "tar_pos_sum", "tar_pos_sq"):
            assert np.array_equal(getattr(a.stats.blocks, f), getattr(b.stats.blocks, f))


def test_cllr_sums_in_a_second_thread_are_the_same_bits(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from scoreframe.stats import summary

    rng = np.random.default_rng(15)
    lab = rng.random(300_000) < 0.2
    sc = np.round(rng.standard_normal(lab.shape[0]) + 2.0 * lab, 2)
    sc[::997] = -np.inf
    sc[::1009] = np.inf
    s = sort_scores(sc[lab], sc[~lab])
    request = Request(np.array([-1.0, 0.0, 2.0]))

    def run(parallel_min: int) -> summary.ScoreStats:
        monkeypatch.setattr(summary, "PARALLEL_MIN", parallel_min)
        return summary.reduce_sorted(SortedScores(s.tar, s.non), request)  # nothing cached

    one, two = run(1 << 62), run(1)  # the Cllr sums on this thread / in a second one
    assert one.cllr_inf > 0 and one.cllr_tar > 0
    for f in ("n_tar", "n_non", "cllr_tar", "cllr_non", "cllr_inf"):
        assert getattr(one, f) == getattr(two, f)
    for f in ("n_miss", "n_fa"):
        assert np.array_equal(getattr(one, f), getattr(two, f))
    for f in ("n_tar", "n_non", "start", "lo", "hi", "tar_pos_sum", "tar_pos_sq"):
        assert np.array_equal(getattr(one.blocks, f), getattr(two.blocks, f))


@pytest.mark.parametrize("kind", ["normal", "ties", "skewed", "one_class"])
def test_classes_sorted_on_two_cores_are_the_sorted_classes(monkeypatch: pytest.MonkeyPatch,
                                                            kind: str) -> None:
    """The one-group in-memory route sorts the classes in threads: the same sorted arrays.

    Its pivot split is checked against a plain sort of each class, with ties, infinities,
    NaN scores (in neither class) and trials in neither class (unknown labels).
    """
    monkeypatch.setattr(red, "PARALLEL_MIN", 1000)
    monkeypatch.setattr(red, "usable_cores", lambda: 2)
    rng = np.random.default_rng(len(kind))
    n = 200_000
    score = rng.standard_normal(n)
    if kind == "ties":
        score = np.round(score, 1)
    elif kind == "skewed":
        score = np.where(rng.random(n) < 0.99, 5.0, score)  # the pivot is a tie value
    score[::101], score[::103], score[::107] = np.inf, -np.inf, np.nan
    lab = rng.random(n) < (0.0 if kind == "one_class" else 0.1)
    known = rng.random(n) > 0.01
    is_tar, is_non = lab & known & ~np.isnan(score), ~lab & known & ~np.isnan(score)
    got = red.sort_classes(score, is_tar, is_non)
    assert np.array_equal(got.tar, np.sort(score[is_tar]))
    assert np.array_equal(got.non, np.sort(score[is_non]))
    assert got.non.shape[0] == np.count_nonzero(is_non)
    # the Cllr sums of the pieces, seeded with the sort, are those of the whole arrays
    assert "cllr_sums" in vars(got)
    assert got.cllr_sums == SortedScores(got.tar.copy(), got.non.copy()).cllr_sums
    # the targets' merged positions, located piece by piece in the threads, are those of a
    # search of the whole sorted non-targets (targets first at equal scores)
    assert "tar_positions" in vars(got)
    fresh = SortedScores(got.tar.copy(), got.non.copy()).tar_positions
    assert got.tar_positions.dtype == fresh.dtype and np.array_equal(got.tar_positions, fresh)


def test_one_group_route_counts_the_checks_and_matches_the_grouped_route() -> None:
    """Without grouping columns the in-memory route sorts with numpy: same groups, same counts."""
    import polars as pl

    rng = np.random.default_rng(3)
    n = 5000
    df = pl.DataFrame({"score": np.round(rng.standard_normal(n), 1),
                       "label": rng.choice(["target", "nontarget", "bad", None], n,
                                           p=[0.2, 0.7, 0.05, 0.05]),
                       "g": ["x"] * n})
    df = df.with_columns(pl.when(pl.int_range(n) % 97 == 0).then(None)
                         .otherwise(pl.col("score")).alias("score"))
    df = df.with_columns(pl.when(pl.int_range(n) % 89 == 0).then(float("nan"))
                         .otherwise(pl.col("score")).alias("score"))
    keys, groups, units, checks = red.sorted_unit_groups(df.lazy(), [], None)
    gkeys, ggroups, _, gchecks = red.sorted_unit_groups(df.lazy(), ["g"], None)
    assert keys == [{}] and units is None and gkeys == [{"g": "x"}]
    assert vars(checks) == vars(gchecks)
    assert checks.null_score > 0 and checks.nan_score > 0 and checks.bad_label > 0
    assert np.array_equal(groups[0].tar, ggroups[0].tar)
    assert np.array_equal(groups[0].non, ggroups[0].non)
    empty = red.sorted_unit_groups(df.lazy().filter(pl.col("g") == "none"), [], None)
    assert empty[:2] == ([], []) and empty[3].rows == 0


@pytest.mark.parametrize("holes", [False, True])
def test_one_group_route_with_boolean_labels_matches_the_grouped_route(holes: bool) -> None:
    """Boolean labels (read by numpy, no bad-label column), with and without null labels,
    null and NaN scores: the same sorted classes and counts as the grouped route."""
    import polars as pl

    rng = np.random.default_rng(5)
    n = 6000
    score = np.round(rng.standard_normal(n), 1)
    lab = pl.Series("label", rng.random(n) < 0.2)
    if holes:
        score[::89] = np.nan
        lab = pl.select(pl.when(pl.int_range(n) % 53 == 0).then(None).otherwise(lab)
                        .alias("label")).to_series()
    df = pl.DataFrame({"score": score, "g": ["x"] * n}).with_columns(lab)
    if holes:
        df = df.with_columns(pl.when(pl.int_range(n) % 97 == 0).then(None)
                             .otherwise(pl.col("score")).alias("score"))
    _, groups, _, checks = red.sorted_unit_groups(df.lazy(), [], None)
    _, ggroups, _, gchecks = red.sorted_unit_groups(df.lazy(), ["g"], None)
    assert vars(checks) == vars(gchecks)
    assert (checks.null_score > 0 and checks.nan_score > 0 and checks.unknown_label > 0) == holes
    assert np.array_equal(groups[0].tar, ggroups[0].tar)
    assert np.array_equal(groups[0].non, ggroups[0].non)
    assert groups[0].n_tar + groups[0].n_non < n if holes else groups[0].n_non > 0


@pytest.mark.parametrize("case", ["normal", "wide", "with_minus_inf", "one_side", "huge_shift"])
def test_softplus_sums_are_the_softplus_terms_summed_exactly(case: str) -> None:
    """One exp per trial (softplus_sums) against one softplus per trial and shift: the exact
    rational sums of the two sets of terms agree to a few units of the last place per term."""
    rng = np.random.default_rng(7)
    x = {"normal": rng.normal(-2.0, 3.0, 20_000),
         "wide": rng.normal(0.0, 300.0, 20_000),
         "with_minus_inf": np.r_[np.full(5, -np.inf), rng.normal(0.0, 5.0, 3_000)],
         "one_side": rng.uniform(50.0, 60.0, 1_000),
         "huge_shift": rng.normal(0.0, 5.0, 1_000)}[case]
    x = np.sort(x)
    shifts = np.linspace(-7.0, 7.0, 57) if case != "huge_shift" else np.array([-600.0, 0.0, 700.0])
    got = el.softplus_sums(x, shifts)
    assert len(got) == shifts.size
    for total, shift in zip(got, shifts.tolist(), strict=True):
        want = el.exact_sum(el.softplus(x + shift))  # exact (tested above), in any order
        # each term within 4 units of its last place: |error| <= 4 * 2**-52 * sum
        assert abs(total - want) * (1 << 52) <= 4 * want + 1
    assert el.softplus_sums(np.zeros(0), [0.0, 1.0]) == [0, 0]
    assert el.softplus_sums(x, []) == []


def test_softplus_sums_at_a_power_of_two_and_beyond_the_normal_exponentials() -> None:
    """Two llrs one unit apart whose shifted terms straddle 2.0 (a review's counterexample:
    the terms of one formula fell by a unit there and the ascending sum came out 0), llrs
    whose exp(x) or exp(-x) leave the normal range, and additivity over every split."""
    x = np.array([0.2609712537478465, 0.2609712537478466])
    shift = 0.28035360086507133
    (got,) = el.softplus_sums(x, [shift])
    want = el.exact_sum(el.softplus(x + shift))
    assert abs(got - want) * (1 << 52) <= 4 * want
    for xs, sh in (([-800.0], 400.0), ([-740.0], 7.0), ([800.0], -400.0), ([705.0], -7.0)):
        (g,) = el.softplus_sums(np.array(xs), [sh])
        w = el.exact_sum(el.softplus(np.array(xs) + sh))
        assert abs(g - w) * (1 << 52) <= 4 * w + (1 << (el.EXACT_SCALE - 1074))
    rng = np.random.default_rng(4)
    xs = np.sort(np.r_[rng.normal(0.0, 3.0, 300), -750.0, -701.0, 702.0, 0.25, 0.25 + 2e-16])
    shifts = np.linspace(-7.0, 7.0, 9)
    whole = el.softplus_sums(xs, shifts)
    for k in (1, 150, 301, 303):
        parts = [a + b for a, b in zip(el.softplus_sums(xs[:k], shifts),
                                       el.softplus_sums(xs[k:], shifts), strict=True)]
        assert parts == whole


def test_ascending_exact_sum_of_terms_out_of_order_at_a_power_of_two() -> None:
    """An 'ascending' array whose exponent falls back once (2.0 then its predecessor) is
    summed exactly, by the general path, not grouped wrongly (it once gave 0)."""
    below = np.nextafter(2.0, 0.0)
    for x in (np.array([2.0, below]), np.r_[np.linspace(1.0, below, 100), 2.0, below, 3.0]):
        assert el.exact_sum(x, ascending=True) == el.exact_sum(x)
        assert el.exact_to_float(el.exact_sum(x, ascending=True)) == math.fsum(x.tolist())


def test_softplus_sums_of_few_trials_are_those_of_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """A range small enough for every term at once gets the same terms as a large one: the
    sums are the same bits either way, and a split across the two sizes adds up exactly."""
    rng = np.random.default_rng(8)
    x = np.sort(rng.normal(-1.0, 3.0, 6000))
    shifts = np.linspace(-7.0, 7.0, 57)
    whole = el.softplus_sums(x, shifts)  # 342,000 terms: one shift at a time
    assert x.size * shifts.size > el._SMALL_TERMS >= 100 * shifts.size
    for k in (1, 100, 3000):
        parts = [a + b for a, b in zip(el.softplus_sums(x[:k], shifts),  # at once
                                       el.softplus_sums(x[k:], shifts), strict=True)]
        assert parts == whole
    small = el.softplus_sums(x[:2000], shifts)
    monkeypatch.setattr(el, "_SMALL_TERMS", 0)
    assert el.softplus_sums(x[:2000], shifts) == small


def compiled_exact(x: np.ndarray) -> int:
    """The exact sum by the compiled pass (a fresh table)."""
    from scoreframe.kernels.compiled import jit

    table = np.zeros((2048, 2), dtype=np.int64)
    span = np.array([2048, 0], dtype=np.int64)
    assert jit(el._exact_table_body)(np.ascontiguousarray(x, dtype=np.float64), table, span)
    return el._table_total(table, int(span[0]), int(span[1]))


@pytest.mark.parametrize("case", ["sorted", "signed_wide", "subnormals", "mixed_specials",
                                  "runs_across_blocks", "one_long_run", "max_mantissa"])
def test_compiled_exact_sum_is_the_rational_sum(case: str) -> None:
    """The compiled pass (runs of one sign and exponent, a vector block where a run goes
    on) against the slow reference, in any order, with runs starting and ending anywhere
    around its blocks of 256."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(11)
    block = el._EXACT_BLOCK
    x = {"sorted": np.log1p(np.exp(np.sort(rng.normal(0.0, 4.0, 5000)))),
         "signed_wide": rng.normal(size=3000) * 10.0 ** rng.integers(-320, 300, 3000),
         "subnormals": np.abs(rng.normal(size=2000)) * 1e-310,
         "mixed_specials": rng.choice([0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0,
                                       2.0**1023, -(2.0**1023)], 1000),
         "runs_across_blocks": np.repeat([1.5, -3.0, 0.75, 1.5],
                                         [block - 1, block + 2, 3 * block, 1]),
         "one_long_run": np.full(4 * block + 5, 1.0 + 2.0**-52),
         "max_mantissa": np.full(2 * block + 3, np.nextafter(2.0, 0.0))}[case]
    assert compiled_exact(x) == exact(x)
    assert compiled_exact(x[::-1]) == exact(x)
    for k in (0, 1, block - 1, block, block + 1):
        if k <= x.size:
            assert compiled_exact(x[:k]) + compiled_exact(x[k:]) == exact(x)


def test_compiled_exact_sum_refuses_infinities_and_nan() -> None:
    pytest.importorskip("numba")
    from scoreframe.kernels.compiled import jit

    for bad in (np.inf, -np.inf, np.nan):
        x = np.r_[np.ones(300), bad, np.ones(3)]
        span = np.array([2048, 0], dtype=np.int64)
        assert not jit(el._exact_table_body)(x, np.zeros((2048, 2), np.int64), span)
    with pytest.raises(ValueError, match="finite"):
        el._blocked_log_sums(np.array([0.0, np.nan]), np.array([0.0]), [1], 0, 2)


@pytest.mark.parametrize("block", [5, 64, 1 << 16])
def test_softplus_sums_compiled_are_the_numpy_sums(monkeypatch: pytest.MonkeyPatch,
                                                   block: int) -> None:
    """The compiled, blocked path gives the numpy path's sums bit for bit (the same terms,
    summed exactly in another order), with cuts inside, at and beyond the blocks' edges and
    trials beyond the normal exponentials."""
    pytest.importorskip("numba")
    from scoreframe.kernels import compiled

    rng = np.random.default_rng(12)
    x = np.sort(np.r_[rng.normal(-1.0, 4.0, 3000), -np.inf, -750.0, -701.0, 702.0, 800.0,
                      -7.0, 7.0, 0.0])
    shifts = np.r_[np.linspace(-7.0, 7.0, 57), -300.0, 450.0]
    monkeypatch.setattr(el, "_SMALL_TERMS", 0)
    monkeypatch.setattr(el, "_LOG_BLOCK", block)
    assert compiled.compiled_available()
    fast = el.softplus_sums(x, shifts)
    monkeypatch.setattr(el, "compiled_available", lambda: False)
    assert el.softplus_sums(x, shifts) == fast
    for part in (x[:1], x[:7], x[5:9], x[-3:]):
        slow = el.softplus_sums(part, shifts)
        monkeypatch.setattr(el, "compiled_available", compiled.compiled_available)
        assert el.softplus_sums(part, shifts) == slow
        monkeypatch.setattr(el, "compiled_available", lambda: False)


def test_warm_up_sets_numba_up_once() -> None:
    from scoreframe.kernels import compiled

    first = compiled.warm_up()
    first.join(timeout=120)
    assert not first.is_alive()
    assert compiled.warm_up() is first  # once per process


def test_jit_compiles_without_a_cache_where_numba_cannot_write_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only install and home: numba refuses ``cache=True`` ("no locator available");
    the loop is then compiled without a cache instead of failing."""
    numba = pytest.importorskip("numba")
    from scoreframe.kernels import compiled

    real = numba.njit
    asked: list[bool] = []

    def njit(**kw: object) -> object:
        asked.append(bool(kw.get("cache")))
        if kw.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f'")
        return real(**kw)

    def add_one(x: int) -> int:
        return x + 1

    monkeypatch.setattr(numba, "njit", njit)
    assert compiled.jit.__wrapped__(add_one)(41) == 42  # type: ignore[attr-defined]
    assert asked == [True, False]


def test_warm_up_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The set-up ahead of time swallows its errors (the kernel's own call reports them)."""
    from scoreframe.kernels import compiled

    def broken() -> bool:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(compiled, "compiled_available", broken)
    compiled._warm()  # returns quietly


def test_engines_set_numba_up_only_for_compiled_statistics_of_enough_trials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import polars as pl

    from scoreframe.results.curves import ForensicCurves
    from scoreframe.results.evaluate import group_statistics
    from scoreframe.stats import engine

    calls: list[int] = []
    monkeypatch.setattr(engine, "warm_up", lambda: calls.append(1))
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"score": rng.normal(size=400), "label": rng.random(400) < 0.3})
    curves = ForensicCurves(0)
    group_statistics(df, thresholds=curves.thresholds, statistics=(curves.ece,))
    group_statistics(df)
    assert calls == []  # 400 trials: below WARM_UP_ROWS
    monkeypatch.setattr(engine, "WARM_UP_ROWS", 100)
    group_statistics(df)  # no compiled statistic
    assert calls == []
    group_statistics(df, thresholds=curves.thresholds, statistics=(curves.ece,))
    assert calls == [1]


@pytest.mark.parametrize("seed", range(6))
def test_end_labels_and_block_corners_are_their_brute_force_twins(seed: int) -> None:
    """end_labels: the first and last run labels of label_runs; the DET corners kept at PAV
    block ends by a binary search are those np.isin keeps (ties between classes included)."""
    from scoreframe.kernels.sorted_scores import end_labels, label_runs
    from scoreframe.stats._statistics import Context
    from scoreframe.stats.summary import _det_corners

    rng = np.random.default_rng(seed)
    for _ in range(40):
        t = np.sort(rng.integers(-4, 5, rng.integers(0, 12)).astype(float))
        n = np.sort(rng.integers(-4, 5, rng.integers(0, 12)).astype(float))
        if t.size + n.size == 0:
            continue
        s = SortedScores(t, n)
        lab = label_runs(s)[1]
        assert end_labels(s) == (bool(lab[0]), bool(lab[-1]))
        if t.size and n.size:
            run_len, run_lab = label_runs(s)
            cum_tar = np.cumsum(np.where(run_lab, run_len, 0))
            cum_non = np.cumsum(np.where(run_lab, 0, run_len))
            hull = np.cumsum(s.blocks.n_tar)
            miss, fa = _det_corners(cum_tar, cum_non, Context(t.size, n.size), 0.5, hull)
            # the rule with np.isin, written out
            x = np.floor(np.clip(el.probit((n.size - cum_non) / n.size), -1e6, 1e6) / 0.5)
            y = np.floor(np.clip(el.probit(cum_tar / t.size), -1e6, 1e6) / 0.5)
            keep = np.ones(x.shape[0], dtype=bool)
            if x.shape[0] > 2:
                same = (x[1:] == x[:-1]) & (y[1:] == y[:-1])
                keep[1:] = ~same
                keep[:-1] |= ~same
                keep[-1:] = True
                keep |= np.isin(cum_tar, hull)
            assert miss.tolist() == cum_tar[keep].tolist() and fa.tolist() == cum_non[keep].tolist()
