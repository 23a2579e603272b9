"""Estimators: the base and its registry, import graph, exact optima on real data, systems, inputs.

Independent optima: scikit-learn's ``LogisticRegression`` (unpenalized, exact Newton solver,
``tol=1e-14``; prior weighting as sample weights) for binary calibration and fusion, and a
Newton iteration in long double with its own formulas (explicit per-trial Jacobian) for the
multiclass affine model, which scikit-learn cannot express (one scale shared by all classes).
Real sets: ``tests/data/real`` (provenance in each set's README.md).
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import DATA, assert_close

from scoreframe.errors import NotFittedError, ScoreframeError
from scoreframe.estimators import Estimator
from scoreframe.estimators.base import ESTIMATORS, estimator_class
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration
from scoreframe.estimators.fusion import LinearFusion
from scoreframe.estimators.models import load_model
from scoreframe.multiclass.calibration import MulticlassCalibration, MulticlassFusion
from scoreframe.multiclass.data import read_scores, read_truth, score_matrices

REAL = DATA / "real"
MODULES = ["scoreframe.estimators.models", "scoreframe.estimators.calibration",
           "scoreframe.estimators.fusion", "scoreframe.multiclass.calibration",
           "scoreframe.estimators", "scoreframe.estimators.base", "scoreframe.estimators.modelfile",
           "scoreframe.estimators.multiclass", "scoreframe.kernels.logreg"]


def binary_trials(n: int = 400, seed: int = 0, **extra) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.3
    return pl.DataFrame({"model": "m", "segment": [f"s{i}" for i in range(n)],
                         "score": np.where(label, 1.5, -0.5) + rng.normal(0, 1, n),
                         "label": label, **extra})


# --- the registry and the import graph ----------------------------------------------------------
def test_registry_is_filled_by_the_classes():
    want = {"linear": LinearCalibration, "pav": PavCalibration, "linear_fusion": LinearFusion,
            "multiclass_affine": MulticlassCalibration, "multiclass_fusion": MulticlassFusion}
    for method, cls in want.items():
        assert ESTIMATORS[method] is cls
        assert estimator_class(method) is cls
        assert issubclass(cls, Estimator)
    with pytest.raises(TypeError, match="registered twice"):
        type("Impostor", (Estimator,), {"method": "linear"})
    assert ESTIMATORS["linear"] is LinearCalibration
    with pytest.raises(ScoreframeError, match="unknown model method"):
        estimator_class("svm")


# the import graph of the whole package: tests/test_import_graph.py
FIRST = {"scoreframe.estimators.models", "scoreframe.estimators.multiclass",
         "scoreframe.estimators.calibration"}


@pytest.mark.parametrize("module", [m if m in FIRST else pytest.param(m, marks=pytest.mark.slow)
                                    for m in MODULES])
def test_each_module_imports_first_in_a_fresh_interpreter(module):
    code = (f"import {module}\n"
            "from scoreframe.estimators.models import load_model\n"
            "m = load_model({'format': 'scoreframe-model', 'version': 1, "
            "'method': 'multiclass_affine', 'alpha': 2.0, 'classes': ['a', 'b'], "
            "'beta': {'a': 0.5, 'b': 0.0}, 'prior': None, 'training': {}})\n"
            "print(type(m).__name__, m.scale_)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MulticlassCalibration", "2.0"]


# --- the base: parameters, repr, fitted state -----------------------------------------------------
def test_repr_get_params_and_not_fitted():
    cal = LinearCalibration(p_target=0.2, objective="brier", max_iter=50)
    assert cal.get_params() == {"p_target": 0.2, "objective": "brier", "max_iter": 50}
    assert repr(cal) == ("LinearCalibration(p_target=0.2, objective='brier', max_iter=50)"
                         "  # not fitted")
    for est, call in ((cal, lambda e: e.transform(binary_trials())),
                      (cal, lambda e: e.save("never.json")),
                      (PavCalibration(), lambda e: e([0.0])),
                      (LinearFusion(), lambda e: e.to_expr()),
                      (MulticlassCalibration(), lambda e: e.to_dict()),
                      (MulticlassFusion(), lambda e: e.to_expr())):
        with pytest.raises(NotFittedError, match="not fitted"):
            call(est)
    assert not Path("never.json").exists()
    cal.fit(binary_trials(system="sysA"))
    text = repr(cal)
    assert text.startswith("LinearCalibration(p_target=0.2, objective='brier', max_iter=50)")
    assert f"scale_={cal.scale_:.6g}" in text and "converged" in text
    assert "trained on system 'sysA'" in text
    assert (cal.scale, cal.offset, cal.training) == (cal.scale_, cal.offset_, cal.training_)
    mc = MulticlassCalibration()
    assert "prior=None" in repr(mc) and "max_iter=100" in repr(mc)
    with pytest.raises(AttributeError):
        _ = cal.no_such_thing


@pytest.mark.parametrize(("make", "match"), [
    (lambda: LinearCalibration(p_target=0.0), "p_target"),
    (lambda: LinearCalibration(p_target=float("nan")), "p_target"),
    (lambda: LinearCalibration(max_iter=0), "max_iter"),
    (lambda: LinearCalibration(max_iter=2.5), "max_iter"),
    (lambda: LinearCalibration(objective="hinge"), "objective"),
    (lambda: PavCalibration(variant="sklearn"), "variant"),
    (lambda: PavCalibration(eps=-1e-3), "eps"),
    (lambda: LinearFusion(missing="zero"), "missing"),
    (lambda: LinearFusion(missing=float("inf")), "missing"),
    (lambda: MulticlassCalibration(prior=[0.5, 0.6]), "prior"),
    (lambda: MulticlassCalibration(prior=[1.5, -0.5]), "prior"),
    (lambda: MulticlassFusion(max_iter=-1), "max_iter"),
])
def test_bad_arguments_are_scoreframe_errors(make, match):
    with pytest.raises(ScoreframeError, match=match):
        make()


# --- exact optima ---------------------------------------------------------------------------------
def sklearn_optimum(x: np.ndarray, label: np.ndarray, p_target: float) -> np.ndarray:
    """Prior-weighted logistic regression by scikit-learn: weights, then the llr offset."""
    from sklearn.linear_model import LogisticRegression

    n_tar, n_non = label.sum(), (~label).sum()
    w = np.where(label, p_target / n_tar, (1 - p_target) / n_non)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(C=np.inf, tol=1e-14, max_iter=1000, solver="newton-cholesky")
        m.fit(x, label, sample_weight=w / w.mean())
    return np.r_[m.coef_[0], m.intercept_[0] - math.log(p_target / (1 - p_target))]


def asvspoof_systems() -> dict[str, pl.DataFrame]:
    """ASV and CM scores of the same trials, labelled for SASV (target bona fide vs the rest)."""
    df = pl.read_parquet(REAL / "asvspoof5_fusion_dev" / "asvspoof5_fusion_dev.parquet")
    df = df.with_columns(label=pl.col("condition") == "target")
    return {s: df.filter(pl.col("system") == s).drop("system") for s in ("asv", "cm")}


@pytest.mark.parametrize("p_target", [0.5, 0.01])
@pytest.mark.parametrize("name", ["fvcaus_plda", "ru2009_evalita", "asv", "cm"])
def test_binary_calibration_reaches_the_exact_optimum(name, p_target):
    if name in ("asv", "cm"):
        df = asvspoof_systems()[name]
    else:
        df = pl.read_parquet(REAL / name / f"{name}.parquet")
    cal = LinearCalibration(p_target=p_target).fit(df)
    ref = sklearn_optimum(df["score"].to_numpy()[:, None], df["label"].to_numpy(), p_target)
    assert cal.training_["converged"], cal.training_["message"]
    assert cal.training_["gradient_norm"] < 1e-14
    assert_close([cal.scale_, cal.offset_], ref, rtol=1e-10, atol=1e-12, what=name)


@pytest.mark.parametrize("p_target", [0.5, 0.01])
def test_binary_fusion_reaches_the_exact_optimum(p_target):
    systems = asvspoof_systems()
    fuser = LinearFusion(p_target=p_target).fit(systems)
    assert fuser.systems == ["asv", "cm"]
    x = np.column_stack([systems["asv"]["score"].to_numpy(), systems["cm"]["score"].to_numpy()])
    ref = sklearn_optimum(x, systems["asv"]["label"].to_numpy(), p_target)
    assert fuser.training_["converged"], fuser.training_["message"]
    assert fuser.training_["gradient_norm"] < 1e-14
    assert_close([*fuser.weights_.values(), fuser.offset_], ref, rtol=1e-10, atol=1e-12)


def long_double_optimum(ws: list[np.ndarray], y: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Minimum of the prior-weighted (flat prior) multiclass cross-entropy, Newton in long double.

    ``z_t = sum_m theta_m w_m[t] + (theta_M.., 0)``; gradient ``J' v (p - e_y)`` and Hessian
    ``sum_t v_t J_t' (diag p_t - p_t p_t') J_t`` from the explicit Jacobian ``J``; backtracking
    on the objective; the solve refined once in long double.
    """
    ld = np.longdouble
    n, k = ws[0].shape
    m = len(ws)
    jac = np.zeros((n, k, m + k - 1), dtype=ld)
    for i, w in enumerate(ws):
        jac[:, :, i] = w
    for j in range(k - 1):
        jac[:, j, m + j] = 1
    counts = np.bincount(y, minlength=k).astype(ld)
    v = (ld(1) / k / counts)[y]
    rows = np.arange(n)

    def parts(th: np.ndarray) -> tuple[ld, np.ndarray, np.ndarray]:
        z = jac @ th
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        p = np.exp(logp)
        e = p.copy()
        e[rows, y] -= 1
        g = np.einsum("t,tj,tjd->d", v, e, jac)
        jp = np.einsum("tj,tjd->td", p, jac)
        h = np.einsum("t,tj,tjd,tje->de", v, p, jac, jac) - np.einsum("t,td,te->de", v, jp, jp)
        return -(v * logp[rows, y]).sum(), g, h

    th = np.asarray(start, dtype=ld)
    for _ in range(50):
        f, g, h = parts(th)
        h64 = h.astype(np.float64)
        step = np.linalg.solve(h64, -g.astype(np.float64)).astype(ld)
        step += np.linalg.solve(h64, (-g - h @ step).astype(np.float64)).astype(ld)
        t = ld(1)
        while parts(th + t * step)[0] > f + ld(1e-4) * t * (g @ step) and t > 1e-8:
            t /= 2
        th = th + t * step
        if np.abs(t * step).max() <= 1e-16 * (1 + np.abs(th).max()):
            break
    return th.astype(np.float64)


def multiclass_sets() -> list:
    """(set, system) of every real multiclass set; the 10-class cifar10 ones (4 s each) slow."""
    out = []
    for d in sorted((REAL / "multiclass").iterdir()):
        systems = pl.read_parquet(d / f"{d.name}_scores.parquet", columns=["system"])
        marks = [pytest.mark.slow] if d.name == "cifar10" else []
        out += [pytest.param(d.name, s, marks=marks)
                for s in sorted(systems["system"].unique().to_list())]
    return out


@pytest.mark.parametrize(("name", "system"), multiclass_sets())
def test_multiclass_calibration_reaches_the_exact_optimum(name, system):
    d = REAL / "multiclass" / name
    scores, truth = d / f"{name}_scores.parquet", d / f"{name}_truth.parquet"
    cal = MulticlassCalibration().fit(scores, truth, system=system)
    assert cal.system_ == system
    assert cal.training_["converged"], cal.training_["message"]
    assert cal.training_["gradient_norm"] < 1e-14
    sc = read_scores(scores).filter(pl.col("system") == system).drop("system")
    tr = read_truth(truth)
    if "system" in tr.columns:
        tr = tr.filter(pl.col("system") == system).drop("system")
    g = score_matrices(sc, tr)[0]
    got = np.r_[cal.scale_, list(cal.offset_.values())[:-1]]
    ref = long_double_optimum([g.w], g.y, got + 1e-3)  # started away from the answer
    assert_close(got, ref, rtol=1e-10, atol=1e-11, what=f"{name}/{system}")


def test_multiclass_fusion_reaches_the_exact_optimum():
    rng = np.random.default_rng(3)
    n, k = 600, 4
    y = rng.integers(0, k, n)
    base = rng.normal(0, 1, (n, k)) + 2.0 * np.eye(k)[y]
    a, b = base + rng.normal(0, 1, (n, k)), 0.5 * base + rng.normal(0, 1.5, (n, k))
    classes = [f"c{j}" for j in range(k)]

    def long(w: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame({"segment": np.repeat([f"s{i:04d}" for i in range(n)], k),
                             "class": classes * n, "score": w.ravel()})

    truth = pl.DataFrame({"segment": [f"s{i:04d}" for i in range(n)],
                          "class": [classes[j] for j in y]})
    fus = MulticlassFusion().fit({"a": long(a), "b": long(b)}, truth)
    got = np.r_[list(fus.weights_.values()), list(fus.offset_.values())[:-1]]
    ref = long_double_optimum([a, b], y, got + 1e-3)
    assert fus.training_["converged"]
    assert_close(got, ref, rtol=1e-10, atol=1e-11)


# --- systems: recorded, checked, named ----------------------------------------------------------
def test_calibration_records_and_checks_its_system(tmp_path):
    two = pl.concat([binary_trials(seed=1, system="sysA"), binary_trials(seed=2, system="sysB")])
    with pytest.raises(ScoreframeError, match=r"one system at a time.*'sysA', 'sysB'"):
        LinearCalibration().fit(two)
    for cls in (LinearCalibration, PavCalibration):
        by_kw = cls().fit(two, system="sysA")
        by_where = cls().fit(two, where="system = 'sysA'")
        assert by_kw.system_ == by_where.system_ == "sysA"
        assert by_kw.where_ is None and by_where.where_ == "system = 'sysA'"
        with pytest.raises(ScoreframeError, match="allow_other_system=True"):
            by_kw.transform(two)
        with pytest.raises(ScoreframeError, match=r"trained on system 'sysA'.*\['sysB'\]"):
            by_kw.transform(two, where="system = 'sysB'")
        out = by_kw.transform(two, allow_other_system=True).collect()
        assert out.height == two.height
        assert by_kw.transform(two, where="system = 'sysA'").collect().height == two.height // 2
        assert by_kw.transform(two.drop("system")).collect().height == two.height  # unknowable
        back = load_model(by_where.save(tmp_path / f"{cls.method}.json"))
        assert (back.system_, back.where_) == ("sysA", "system = 'sysA'")
        with pytest.raises(ScoreframeError, match="allow_other_system"):
            back.transform(two)
    with pytest.raises(ScoreframeError, match="no trials of system 'sysC'"):
        LinearCalibration().fit(two, system="sysC")
    assert LinearCalibration().fit(two.filter(pl.col("system") == "sysB")).system_ == "sysB"
    assert LinearCalibration().fit(binary_trials()).system_ is None


def test_multiclass_calibration_records_and_checks_its_system():
    d = REAL / "multiclass" / "cifar10"
    scores, truth = d / "cifar10_scores.parquet", d / "cifar10_truth.parquet"
    with pytest.raises(ScoreframeError, match="one system at a time.*'repvgg_a2', 'resnet-20'"):
        MulticlassCalibration().fit(scores, truth)
    cal = MulticlassCalibration().fit(scores, truth, system="vgg19_bn")
    with pytest.raises(ScoreframeError, match="trained on system 'vgg19_bn'"):
        cal.transform(scores)
    sc = read_scores(scores)
    out = cal.transform(sc, allow_other_system=True).collect()
    assert out.height == sc.height
    mine = sc.filter(pl.col("system") == "vgg19_bn")
    got = cal.transform(mine).collect()
    assert_close(got["score"].to_numpy(),
                 cal.scale_ * mine["score"].to_numpy()
                 + np.array([cal.offset_[c] for c in mine["class"].to_list()]), rtol=1e-15)
    assert load_model(cal.to_dict()).system_ == "vgg19_bn"


def test_fusion_systems_named_explicitly(tmp_path):
    """README case: train on a_dev/b_dev, apply to a_eval/b_eval, by name; any frame kind."""
    dev, ev = binary_trials(seed=4), binary_trials(seed=5)
    paths = {}
    for split, df in (("dev", dev), ("eval", ev)):
        for s, f in (("a", lambda x: x), ("b", lambda x: 0.5 * x + 1.0)):
            p = tmp_path / f"{s}_{split}.parquet"
            df.with_columns(score=f(pl.col("score")) + 0.1 * pl.col("score") ** 2).write_parquet(p)
            paths[s, split] = p
    fuser = LinearFusion().fit({"a": paths["a", "dev"], "b": paths["b", "dev"]})
    assert fuser.systems == ["a", "b"]
    by_name = fuser.transform({"a": paths["a", "eval"], "b": str(paths["b", "eval"])}).collect()
    from_frames = fuser.transform({"b": pl.read_parquet(paths["b", "eval"]).to_arrow(),
                                   "a": pl.scan_parquet(paths["a", "eval"])}).collect()
    assert_close(by_name.sort("segment")["score"].to_numpy(),
                 from_frames.sort("segment")["score"].to_numpy(), rtol=1e-15)
    # without names, the file stems (a_eval, b_eval) do not match the model's systems
    with pytest.raises(ScoreframeError, match="lack systems the model fuses"):
        fuser.transform([paths["a", "eval"], paths["b", "eval"]])
    stems = LinearFusion().fit([paths["a", "dev"], paths["b", "dev"]])
    assert stems.systems == ["a_dev", "b_dev"]
    with pytest.raises(ScoreframeError, match="bad system name"):
        LinearFusion().fit({"": paths["a", "dev"], "b": paths["b", "dev"]})


@pytest.mark.parametrize("kind", ["pyarrow", "pandas"])
def test_calibration_accepts_pandas_and_pyarrow(kind):
    df = binary_trials(seed=6)
    ref = LinearCalibration().fit(df)
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        other = pd.DataFrame(df.to_dict(as_series=False))
    else:
        other = df.to_arrow()
    cal = LinearCalibration().fit(other)
    assert (cal.scale_, cal.offset_) == (ref.scale_, ref.offset_)
    assert cal.transform(other).collect()["score"].to_list() == \
        ref.transform(df).collect()["score"].to_list()
