"""Metrics on stacks of replicates (``Metric.compute_stack``) against one replicate at a time.

Intervals compute the declared metrics on every replicate of a group at once
(:class:`~scoreframe.metrics.GroupStack`, the kernels' ``*_stack`` forms); each value must be
the bits ``compute`` gives on that replicate's own :class:`~scoreframe.metrics.GroupStats`.
The kernels are also checked against brute-force twins written from their definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scoreframe.metrics._intervals as intervals
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.cllr import min_cllr, min_cllr_stack
from scoreframe.kernels.sorted_scores import Blocks, BlockStack, pav_blocks, sort_scores
from scoreframe.metrics import GroupStack, GroupStats, OperatingPoints, declared
from scoreframe.stats import Request, reduce_sorted
from scoreframe.stats.summary import ScoreStats


def _scores(rng: np.random.Generator, n: int, shift: float, *, ties: bool) -> np.ndarray:
    x = rng.normal(shift, 1.5, n)
    if ties:
        x = np.round(x, 1)
    if n and rng.random() < 0.2:  # an infinite llr now and then
        x[int(rng.integers(0, n))] = rng.choice([-np.inf, np.inf])
    return x


def _group(rng: np.random.Generator, ops: OperatingPoints) -> ScoreStats:
    """One replicate's statistics: a random group, sometimes all tied or tiny."""
    n_t, n_n = int(rng.integers(1, 60)), int(rng.integers(1, 200))
    if rng.random() < 0.1:
        tar, non = np.zeros(n_t), np.zeros(n_n)  # no information: one block
    else:
        ties = bool(rng.random() < 0.5)
        tar = _scores(rng, n_t, float(rng.normal(2, 1)), ties=ties)
        non = _scores(rng, n_n, 0.0, ties=ties)
    return reduce_sorted(sort_scores(tar, non), Request(thresholds=ops.threshold))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bits (NaN equal to NaN)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12),
       st.lists(st.floats(0.001, 0.999), min_size=1, max_size=12), st.floats(0.5, 5.0))
def test_every_stacked_declaration_equals_compute_on_each_replicate(
        seed: int, r: int, p_target: list[float], c_miss: float) -> None:
    """All declarations with ``compute_stack``, up to 12 operating points, any costs.

    (Beyond 8 points numpy sums a vector pairwise: the means over points must keep it.)
    """
    rng = np.random.default_rng(seed)
    ops = OperatingPoints(tuple(p_target), c_miss=c_miss)
    reps = tuple(_group(rng, ops) for _ in range(r))
    stack = GroupStack(reps, ops)
    metrics = [m for m in declared(family=None) if m.compute_stack is not None]
    assert {"eer", "cllr", "min_cllr", "min_dcf_norm", "act_dcf_norm"} <= \
        {m.name for m in metrics}
    for m in metrics:
        assert m.compute_stack is not None
        got = np.asarray(m.compute_stack(stack))
        want = np.array([np.asarray(m.compute(GroupStats(s, ops)), dtype=np.float64)
                         for s in reps])
        assert _same(got, want), m.name


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_stacked_kernels_equal_brute_force_definitions(seed: int, r: int) -> None:
    """ROCCH vertices, min DCF (first minimizing vertex), EER crossing, minCllr by hand."""
    rng = np.random.default_rng(seed)
    blocks: list[Blocks] = []
    for _ in range(r):
        n_t, n_n = int(rng.integers(1, 40)), int(rng.integers(1, 80))
        blocks.append(pav_blocks(sort_scores(np.round(rng.normal(1, 1, n_t), 1),
                                             np.round(rng.normal(0, 1, n_n), 1))))
    stack = BlockStack.of(blocks)
    p = np.array([0.01, 0.3, 0.5])
    cost, miss, fa = kr.min_dcf_stack(stack, p, 1 - p)
    eer = kr.rocch_eer_stack(stack)
    mc = min_cllr_stack(stack)
    for i, b in enumerate(blocks):
        t, n = int(b.n_tar.sum()), int(b.n_non.sum())
        m_v = np.concatenate(([0], np.cumsum(b.n_tar)))
        f_v = n - np.concatenate(([0], np.cumsum(b.n_non)))
        for k, pk in enumerate(p):
            c = pk * (m_v / t) + (1 - pk) * (f_v / n)
            j = int(np.argmin(c))
            assert cost[i, k] == c[j] and miss[i, k] == m_v[j] and fa[i, k] == f_v[j]
        # the EER: pmiss = pfa on the segment where pfa - pmiss changes sign
        d = f_v / n - m_v / t
        j = int(np.flatnonzero(d >= 0)[-1])
        if d[j] == 0 or j == d.shape[0] - 1:
            want = m_v[j] / t
        else:
            u = d[j] / (d[j] - d[j + 1])
            want = m_v[j] / t + u * (m_v[j + 1] / t - m_v[j] / t)
        assert eer[i] == want
        assert eer[i] == kr.rocch_eer(b)
        # minCllr: the PAV llrs' cost, block by block
        with np.errstate(divide="ignore", invalid="ignore"):
            llr = np.log(b.n_tar / b.n_non) - math.log(t / n)
            terms = (b.n_tar * np.logaddexp(0, -llr)) / t + (b.n_non * np.logaddexp(0, llr)) / n
        assert mc[i] == pytest.approx(float(np.nansum(terms)) / (2 * math.log(2)), rel=1e-12)
        assert mc[i] == min_cllr(b)


def test_min_dcf_stack_keeps_argmin_choice_with_nan() -> None:
    """A member without targets: NaN cost, counts at the first vertex (np.argmin's)."""
    b = pav_blocks(sort_scores(np.zeros(0), np.array([0.0, 1.0])))
    with np.errstate(invalid="ignore"):  # 0 / 0 targets, as one group at a time
        cost, miss, fa = kr.min_dcf_stack(BlockStack.of([b, b]), np.array([0.5]),
                                          np.array([0.5]))
    assert np.isnan(cost).all() and miss.tolist() == [[0], [0]] and fa.tolist() == [[2], [2]]


def test_replicate_values_do_not_depend_on_the_stack_size(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Stacks cut every few blocks give the same values as one stack; undefined rows NaN."""
    rng = np.random.default_rng(7)
    ops = OperatingPoints((0.01, 0.5))
    reps = [_group(rng, ops) for _ in range(30)]
    empty = reduce_sorted(sort_scores(np.zeros(0), np.ones(3)), Request(thresholds=ops.threshold))
    reps.insert(4, empty)
    point = reps[0]
    stats = ScoreStats(point.n_tar, point.n_non, point.blocks, point.cllr_tar, point.cllr_non,
                       point.cllr_inf, point.n_miss, point.n_fa, replicates=tuple(reps))
    metrics = [m for m in declared() if m.has_intervals]
    whole = intervals.replicate_values(stats, ops, metrics)
    monkeypatch.setattr(intervals, "STACK_BLOCKS", 5)
    assert len(intervals._stacks(reps, range(len(reps)))) > 5
    cut = intervals.replicate_values(stats, ops, metrics)
    for key, v in whole.items():
        assert _same(v, cut[key]), key
        assert np.isnan(v[4]).all()
        one = [m for m in metrics if (m.name, m.per_operating_point) == key][0]
        assert _same(v[0], np.asarray(one.compute(GroupStats(point, ops)), dtype=np.float64))


def _base(rng: np.random.Generator, n: int):
    from scoreframe.kernels.bootstrap import splitmix64
    from scoreframe.stats._resampling import SortedUnits

    lab = rng.random(n) < 0.3
    x = rng.normal(0, 1, n) + lab
    t, nn = np.sort(x[lab]), np.sort(x[~lab])
    h = splitmix64(rng.integers(0, 50, n).astype(np.uint64))
    return sort_scores(t, nn), SortedUnits((h[:t.shape[0]],), (h[t.shape[0]:],))


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize(("sizes", "pooled"), [((400, 380, 420), True),  # one unit a thread
                                               ((3000, 100, 120), False)])  # a dominant unit
def test_units_on_threads_equal_one_thread_and_report_progress_in_order(sizes, pooled,
                                                                        workers) -> None:
    """One unit per thread (or all threads for a dominant unit): one thread's replicates.

    Progress is called from the calling thread, up to ``(n, n)``.
    """
    import threading

    from scoreframe.stats._resampling import Replicates
    from scoreframe.stats.groups import Unit
    from scoreframe.stats.reduce import unit_statistics

    rng = np.random.default_rng(3)
    parts = [_base(rng, n) for n in sizes]
    base, units_of = [p[0] for p in parts], [p[1] for p in parts]
    units = [Unit({"c": str(i)}, (i,)) for i in range(len(sizes))] + \
        ([Unit({"c": "all"}, tuple(range(len(sizes))), pooled=True)] if pooled else [])
    req = Request(thresholds=np.array([0.0]), replicates=Replicates(("model",), 1, 30, False, ()))
    calls: list[tuple[int, int, bool]] = []
    main = threading.current_thread()
    one = unit_statistics(units, base, req, base_units=units_of, workers=1)
    two = unit_statistics(units, base, req, base_units=units_of, workers=workers,
                          progress=lambda d, t: calls.append(
                              (d, t, threading.current_thread() is main)))
    for a, b in zip(one, two, strict=True):
        assert len(a.stats.replicates) == len(b.stats.replicates) == 30
        for ra, rb in zip(a.stats.replicates, b.stats.replicates, strict=True):
            assert (ra.n_tar, ra.n_non, ra.cllr_tar, ra.cllr_non) == \
                (rb.n_tar, rb.n_non, rb.cllr_tar, rb.cllr_non)
            assert np.array_equal(ra.blocks.n_tar, rb.blocks.n_tar)
            assert np.array_equal(ra.n_miss, rb.n_miss) and np.array_equal(ra.n_fa, rb.n_fa)
    assert [c[0] for c in calls] == list(range(1, len(units) + 1))
    assert all(t == len(units) and on_main for _, t, on_main in calls)


def test_an_error_in_one_unit_cancels_the_units_not_started(monkeypatch) -> None:
    """The first failing unit's error surfaces; queued units are not computed."""
    import scoreframe.stats.reduce as reduce_module
    from scoreframe.stats._resampling import Replicates
    from scoreframe.stats.groups import Unit

    rng = np.random.default_rng(4)
    parts = [_base(rng, 200) for _ in range(8)]
    base, units_of = [p[0] for p in parts], [p[1] for p in parts]
    units = [Unit({"c": str(i)}, (i,)) for i in range(8)]
    seen: list[int] = []

    def failing(stats, s, *args, **kwargs):
        seen.append(s.n_tar + s.n_non)
        raise RuntimeError("boom")

    monkeypatch.setattr(reduce_module, "with_replicates", failing)
    req = Request(thresholds=np.array([0.0]), replicates=Replicates(("model",), 1, 5, False, ()))
    with pytest.raises(RuntimeError, match="boom"):
        reduce_module.unit_statistics(units, base, req, base_units=units_of, workers=2)
    assert len(seen) < len(units)


def test_a_compute_stack_of_the_wrong_shape_is_a_clear_error() -> None:
    """A user declaration whose compute_stack forgets the replicate axis: named, not broadcast."""
    from dataclasses import replace as dc_replace

    from scoreframe.errors import ScoreframeError
    from scoreframe.metrics import lookup

    rng = np.random.default_rng(9)
    ops = OperatingPoints((0.01,))
    reps = tuple(_group(rng, ops) for _ in range(4))
    p = reps[0]
    stats = ScoreStats(p.n_tar, p.n_non, p.blocks, p.cllr_tar, p.cllr_non, p.cllr_inf,
                       p.n_miss, p.n_fa, replicates=reps)
    bad = dc_replace(lookup("min_cllr"), name="my_metric",
                     compute_stack=lambda g: float(g.min_cllr.mean()))
    with pytest.raises(ScoreframeError, match="my_metric.*wrong shape.*got \\(\\)"):
        intervals.replicate_values(stats, ops, [bad])


@pytest.mark.parametrize("points", [1, 2, 3, 7, 8, 13])
@pytest.mark.parametrize("order", ["C", "F"])
def test_mean_over_points_of_a_stack_is_each_rows_mean(points: int, order: str) -> None:
    """The mean over the operating points of every replicate at once has the bits of
    ``np.mean`` of that replicate's own vector, in either memory order."""
    from scoreframe.metrics.binary import _mean_over_points

    rng = np.random.default_rng(points)
    x = rng.random((500, points)) * rng.choice([1e-9, 1.0, 1e9], (500, points))
    x = np.asarray(x, order=order)
    got = _mean_over_points(x)
    want = np.array([np.mean(row) for row in np.ascontiguousarray(x)])
    assert got.tobytes() == want.tobytes()


def test_min_cllr_of_a_stack_is_each_members_min_cllr() -> None:
    """minCllr of a stack of replicates (member sums of the PAV cost terms in one pass) has
    the bits of each member alone."""
    rng = np.random.default_rng(3)
    members = []
    for _ in range(12):
        n_t, n_n = int(rng.integers(1, 300)), int(rng.integers(1, 300))
        members.append(pav_blocks(sort_scores(rng.normal(1.0, 1.0, n_t),
                                              rng.normal(-1.0, 1.0, n_n))))
    got = min_cllr_stack(BlockStack.of(members))
    assert got.tobytes() == np.array([min_cllr(m) for m in members]).tobytes()
    for value, b in zip(got.tolist(), members, strict=True):  # the definition, summed apart
        t, n = b.n_tar.astype(float), b.n_non.astype(float)
        with np.errstate(divide="ignore"):  # blocks of one class: llr -inf or inf
            llr = np.log(t) - np.log(n) - (math.log(t.sum()) - math.log(n.sum()))
        cost = math.fsum((t[t > 0] * np.logaddexp(0.0, -llr[t > 0])).tolist()) / t.sum() + \
            math.fsum((n[n > 0] * np.logaddexp(0.0, llr[n > 0])).tolist()) / n.sum()
        assert value == pytest.approx(cost / (2 * math.log(2)), rel=1e-13)
