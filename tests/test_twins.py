"""Brute-force twins of the kernels that had none (issue 16.7): ROCCH-DET, the PAV map, error
counts and minimum DCF.

Each twin computes the quantity from its definition, by a different route than the kernel:
a threshold scan over every decision ``accept iff score >= t`` (plus "reject all"), SciPy's
convex hull of the resulting ROC points, SciPy's isotonic regression of the labels in score
order, and per-score loops. Data: small integer scores (heavy ties) and, where the kernel
accepts them, +-inf scores. ROCCH-EER, PRBEP and the NIST/Kaldi EER twins live in
``tests/test_stats.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression
from scipy.spatial import ConvexHull

from scoreframe.kernels import curves as kc
from scoreframe.kernels import dcf as kd
from scoreframe.kernels import rocch as kr
from scoreframe.kernels.elementary import operating_points
from scoreframe.kernels.pav_map import DUMMY_SCORE, apply_pav_map, pav_map
from scoreframe.kernels.sorted_scores import sort_scores

INF = math.inf
finite_score = st.integers(-4, 4).map(float)
any_score = st.one_of(finite_score, finite_score, finite_score, st.sampled_from([-INF, INF]))
finite_scores = st.lists(finite_score, min_size=1, max_size=30)
any_scores = st.lists(any_score, min_size=1, max_size=30)


# --- threshold scan: the operating points of every decision rule ------------------------------

def scan_counts(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(#miss, #fa) for ``accept iff score >= t`` at every distinct score, then reject-all."""
    thr = np.unique(np.r_[tar, non])
    n_miss = [int(np.sum(tar < t)) for t in thr] + [tar.shape[0]]
    n_fa = [int(np.sum(non >= t)) for t in thr] + [0]
    return np.array(n_miss), np.array(n_fa)


def brute_hull(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower-left convex hull of the ROC points ``(pfa, pmiss)``, from pfa = 1 to pfa = 0.

    Returned as ``(pmiss, pfa)`` like :func:`scoreframe.kernels.rocch.rocch`. ``(1, 1)`` closes
    the hull above the ROC; Qhull drops collinear points.
    """
    n_miss, n_fa = scan_counts(tar, non)
    pts = np.unique(np.r_[np.c_[n_fa / non.shape[0], n_miss / tar.shape[0]], [[1.0, 1.0]]],
                    axis=0)
    v = np.array([i for i in ConvexHull(pts).vertices if not np.all(pts[i] == 1.0)])
    v = v[np.lexsort((pts[v, 1], -pts[v, 0]))]  # pfa descending, then pmiss ascending
    return pts[v, 1], pts[v, 0]


def clip_piece(a: np.ndarray, b: np.ndarray, box, tol: float = 1e-12):
    """Visible part ``[ta, tb]`` of the segment a -> b in the box, by enumerating candidates.

    The box is convex, so the visible part is the interval spanned by the candidate parameters
    (the ends and every crossing of a box line) whose point lies in the box.
    """
    lo = np.array([box[0], box[2]])
    hi = np.array([box[1], box[3]])
    cands = [0.0, 1.0]
    for k in range(2):
        if b[k] != a[k]:
            cands += [(v - a[k]) / (b[k] - a[k]) for v in (lo[k], hi[k])]
        elif not lo[k] <= a[k] <= hi[k]:  # parallel to this side and outside: exact test
            return None
    ok = [t for t in cands if 0.0 <= t <= 1.0
          and np.all(a + t * (b - a) >= lo - tol) and np.all(a + t * (b - a) <= hi + tol)]
    return (min(ok), max(ok)) if ok else None


def brute_rocch_det(tar, non, box, pps: int) -> list[np.ndarray]:
    """Visible hull pieces, each sampled at ``pps + 1`` equally spaced points ((pfa, pmiss))."""
    pm, pf = brute_hull(tar, non)
    pieces = []
    for i in range(pm.shape[0] - 1):
        a, b = np.array([pf[i], pm[i]]), np.array([pf[i + 1], pm[i + 1]])
        vis = clip_piece(a, b, box)
        if vis is None:
            continue
        pa, pb = a + vis[0] * (b - a), a + vis[1] * (b - a)
        pieces.append(np.array([pa + u * (pb - pa) for u in np.linspace(0, 1, pps + 1)]))
    return pieces


def on_polyline(px: np.ndarray, py: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Distance of each point to the polyline through the vertices."""
    p = np.c_[px, py][:, None, :]
    a = np.c_[vx[:-1], vy[:-1]][None, :, :]
    d = np.c_[vx[1:], vy[1:]][None, :, :] - a
    len2 = np.sum(d * d, axis=2)
    t = np.clip(np.sum((p - a) * d, axis=2) / np.where(len2 > 0, len2, 1.0), 0.0, 1.0)
    return np.min(np.linalg.norm(a + t[..., None] * d - p, axis=2), axis=1)


boxes = st.one_of(
    st.sampled_from([(0.0005, 0.5, 0.0005, 0.5), (0.0, 1.0, 0.0, 1.0), (0.1, 0.6, 0.2, 0.75),
                     (0.25, 0.5, 0.25, 0.5), (0.0, 0.5, 0.5, 1.0), (0.3, 0.31, 0.3, 0.31)]),
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)).map(
        lambda b: (min(b[0], b[1]), max(b[0], b[1]), min(b[2], b[3]), max(b[2], b[3]))))


@settings(max_examples=300, deadline=None)
@given(any_scores, any_scores)
def test_rocch_vertices_are_the_convex_hull_of_the_threshold_scan(tar, non):
    tar, non = np.array(tar), np.array(non)
    pm, pf = kr.rocch(sort_scores(tar, non).blocks)
    bm, bf = brute_hull(tar, non)
    np.testing.assert_allclose(pm, bm, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pf, bf, rtol=0, atol=1e-12)


@settings(max_examples=300, deadline=None)
@given(any_scores, any_scores, boxes, st.integers(1, 6))
def test_rocch_det_equals_clipped_brute_hull(tar, non, box, pps):
    tar, non = np.array(tar), np.array(non)
    x, y = kc.rocch_det(sort_scores(tar, non), box=box, points_per_segment=pps)
    assert x.shape == y.shape and x.shape[0] % (pps + 1) == 0
    got = np.c_[x, y].reshape(-1, pps + 1, 2)
    exp = brute_rocch_det(tar, non, box, pps)

    def solid(pieces):  # a piece that touches the box in one point draws nothing
        return [p for p in pieces if np.linalg.norm(p[-1] - p[0]) > 1e-9]

    g, e = solid(list(got)), solid(exp)
    assert len(g) == len(e)
    for gp, ep in zip(g, e, strict=True):
        np.testing.assert_allclose(gp, ep, rtol=0, atol=1e-12)
    # every point inside the box and on the hull
    tol = 1e-12
    assert np.all((x >= box[0] - tol) & (x <= box[1] + tol))
    assert np.all((y >= box[2] - tol) & (y <= box[3] + tol))
    hm, hf = brute_hull(tar, non)
    if x.shape[0]:
        assert np.max(on_polyline(x, y, hf, hm)) < 1e-12
    # every hull vertex strictly inside the box is drawn
    inside = (hf > box[0] + 1e-9) & (hf < box[1] - 1e-9) & (hm > box[2] + 1e-9) & (
        hm < box[3] - 1e-9)
    for vx, vy in zip(hf[inside], hm[inside], strict=True):
        assert np.min(np.hypot(x - vx, y - vy)) < 1e-12


def test_rocch_det_whole_square_is_the_hull():
    """With the unit box and one interval per segment the output is the hull, vertex for vertex."""
    tar, non = np.array([-3.0, 1, 2, 5, 7]), np.array([-7.0, -5, -2, -1, 3, 4])
    x, y = kc.rocch_det(sort_scores(tar, non), box=(0, 1, 0, 1), points_per_segment=1)
    # docs/math.md example B: blocks (0t,2n) (1t,2n) (2t,2n) (2t,0n)
    pm = np.array([0, 0, 1, 3, 5]) / 5
    pf = np.array([6, 4, 2, 0, 0]) / 6
    np.testing.assert_allclose(x, np.repeat(pf, 2)[1:-1], atol=1e-15)
    np.testing.assert_allclose(y, np.repeat(pm, 2)[1:-1], atol=1e-15)


# --- PAV map --------------------------------------------------------------------------------

def brute_trial_llrs(tar: np.ndarray, non: np.ndarray, variant: str):
    """Scores (ascending, targets first on ties) and the PAV llr of every training trial.

    ``bosaris``: one dummy target at -1e6 and one dummy non-target at +1e6 join the trials and
    the prior is ``(T+1)/(N+1)``; ``raw``: no dummies, prior ``T/N``.
    """
    if variant == "bosaris":
        tar = np.r_[-DUMMY_SCORE, tar]
        non = np.r_[non, DUMMY_SCORE]
    sc = np.r_[tar, non]
    lab = np.r_[np.ones(tar.shape[0]), np.zeros(non.shape[0])]
    order = np.lexsort((-lab, sc))
    p = isotonic_regression(lab[order]).x
    with np.errstate(divide="ignore"):
        llr = np.log(p) - np.log1p(-p) - (np.log(tar.shape[0]) - np.log(non.shape[0]))
    return sc[order], llr


def brute_map_at(s: float, xs: np.ndarray, ls: np.ndarray) -> float:
    """The map at one score, read off the training trials (module notes of kernels.pav_map)."""
    same = ls[xs == s]
    if same.size:
        return float(same[0])
    below, above = np.flatnonzero(xs < s), np.flatnonzero(xs > s)
    if not below.size:
        return float(ls[above[0]])
    if not above.size:
        return float(ls[below[-1]])
    a, b, la, lb = xs[below[-1]], xs[above[0]], ls[below[-1]], ls[above[0]]
    if la == -INF and lb == INF:
        return 0.0
    if la == -INF:  # next to an infinite block: an unseen score never gets infinite evidence
        return float(lb)
    if lb == INF:
        return float(la)
    if a == -INF:  # a ramp of infinite width: the finite end's value
        return float(lb)
    if b == INF:
        return float(la)
    return float(la + (s - a) / (b - a) * (lb - la))


@settings(max_examples=300, deadline=None)
@given(finite_scores, finite_scores)
def test_bosaris_pav_map_equals_isotonic_regression_with_dummies(tar, non):
    tar, non = np.array(tar), np.array(non)
    x, y = pav_map(sort_scores(tar, non), variant="bosaris")
    xs, ls = brute_trial_llrs(tar, non, "bosaris")
    # at the training scores (dummies included): the isotonic llrs
    np.testing.assert_allclose(apply_pav_map(xs, x, y), ls, rtol=1e-12, atol=1e-12)
    # anywhere else: linear between neighbouring training scores, constant beyond the dummies
    probe = np.r_[np.arange(-5.5, 5.6, 0.5), -2e6, -DUMMY_SCORE, 1e5, DUMMY_SCORE, 3e6]
    exp = [brute_map_at(v, xs, ls) for v in probe]
    np.testing.assert_allclose(apply_pav_map(probe, x, y), exp, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(y))


@settings(max_examples=300, deadline=None)
@given(any_scores, any_scores)
def test_raw_pav_map_equals_isotonic_regression(tar, non):
    tar, non = np.array(tar), np.array(non)
    assume(np.isfinite(np.r_[tar, non]).any())  # see the xfail test below
    x, y = pav_map(sort_scores(tar, non), variant="raw")
    xs, ls = brute_trial_llrs(tar, non, "raw")
    got = apply_pav_map(xs, x, y)
    np.testing.assert_allclose(got, ls, rtol=1e-12, atol=1e-12)  # +-inf compare equal
    probe = np.r_[-INF, np.arange(-5.5, 5.6, 0.5), INF]
    exp = [brute_map_at(v, xs, ls) for v in probe]
    np.testing.assert_allclose(apply_pav_map(probe, x, y), exp, rtol=1e-12, atol=1e-12)


def test_raw_pav_map_with_only_infinite_training_scores():
    # sorted: -inf: t n n | +inf: t n -> blocks 1/3 and 1/2, both finite llrs
    x, y = pav_map(sort_scores([-INF, INF], [-INF, -INF, INF]), variant="raw")
    assert np.all(np.isfinite(y))
    out = apply_pav_map([-INF, -1.0, 0.0, 1.0, INF], x, y)
    prior = np.log(2 / 3)  # log(T/N)
    low, high = np.log(1 / 2) - prior, np.log(1 / 1) - prior
    # scores at +-inf take their block's llr; a finite score lies in the gap between the two
    # infinite blocks, which takes the mean of its ends (module docstring of pav_map)
    np.testing.assert_allclose(out, [low, *(3 * [(low + high) / 2]), high], rtol=1e-15)


@settings(max_examples=100, deadline=None)
@given(finite_scores, finite_scores, st.sampled_from(["bosaris", "raw"]),
       st.floats(0.0, 0.5))
def test_pav_map_is_monotone_and_eps_widens_each_block(tar, non, variant, eps):
    if variant == "raw" and not (tar and non):
        return
    s = sort_scores(tar, non)
    x0, y0 = pav_map(s, variant=variant)
    x, y = pav_map(s, variant=variant, eps=eps)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_allclose(y[0::2], y0[0::2] - eps, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y[1::2], y0[1::2] + eps, rtol=0, atol=1e-12)
    grid = np.linspace(-6, 6, 241)
    v = apply_pav_map(grid, x0, y0)
    assert np.all(v[1:] >= v[:-1])
    # block llrs strictly increase (PAV), knots ascend
    assert np.all(np.diff(y0[0::2]) > 0) and np.all(np.diff(x0) >= 0)


# --- error counts and minimum DCF ------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(any_scores, any_scores, st.lists(st.floats(-6, 6), max_size=8))
def test_error_counts_and_act_dcf_equal_direct_counts(tar, non, extra):
    tar, non = np.array(tar), np.array(non)
    sc = np.unique(np.r_[tar, non])
    fin = sc[np.isfinite(sc)]
    thr = np.r_[sc, np.nextafter(fin, -INF), np.nextafter(fin, INF), fin + 0.5, -INF, INF,
                extra]
    s = sort_scores(tar, non)
    n_miss, n_fa = kd.error_counts(s, thr)
    assert n_miss.tolist() == [int(np.sum(tar < t)) for t in thr]
    assert n_fa.tolist() == [int(np.sum(non >= t)) for t in thr]
    p = np.full(thr.shape[0], 0.3)
    dcf, _, _ = kd.act_dcf(s, p, 1.0 - p, thr)
    exp = [0.3 * np.mean(tar < t) + 0.7 * np.mean(non >= t) for t in thr]
    np.testing.assert_allclose(dcf, exp, rtol=1e-14, atol=1e-16)


@settings(max_examples=300, deadline=None)
@given(any_scores, any_scores,
       st.lists(st.floats(-8, 8), min_size=1, max_size=6),
       st.sampled_from([1.0, 10.0, 100.0]))
def test_min_dcf_and_its_counts_equal_a_threshold_scan(tar, non, plo, c_miss):
    tar, non = np.array(tar), np.array(non)
    p, q, _ = operating_points(prior_log_odds=np.r_[plo, 0.0, -2.0, 2.0])
    p = p * c_miss / (p * c_miss + q)  # effective priors of C_miss = c_miss, C_fa = 1
    q = 1.0 - p
    mn, k_miss, k_fa = kr.min_dcf(sort_scores(tar, non).blocks, p, q)
    n_miss, n_fa = scan_counts(tar, non)
    pm, pf = n_miss / tar.shape[0], n_fa / non.shape[0]
    for i in range(p.shape[0]):
        cost = p[i] * pm + q[i] * pf
        best = cost.min()
        assert mn[i] == pytest.approx(best, rel=1e-12, abs=1e-15)
        # the kernel's counts are an operating point of the scan that attains the minimum.
        # On exact ties the kernel (like BOSARIS) takes the first vertex of least *rounded*
        # cost, not always the fewest misses: tar [0 0 1], non [-1 0 0 0 0 1], p = 0.5 ties
        # (0, 5) and (2, 1) at 5/12 and returns (2, 1); so any tying point is accepted.
        ties = np.flatnonzero(cost <= best + 1e-12)
        pairs = set(zip(n_miss[ties].tolist(), n_fa[ties].tolist(), strict=True))
        assert (int(k_miss[i]), int(k_fa[i])) in pairs
        if ties.shape[0] == 1:
            assert (k_miss[i], k_fa[i]) == (n_miss[ties[0]], n_fa[ties[0]])
