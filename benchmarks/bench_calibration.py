"""Speed of linear calibration and 3-system fusion, side by side with scikit-learn.

Run: ``make bench`` (or ``python benchmarks/bench_calibration.py [--quick]``). Writes the
``calibration`` section of ``benchmarks/RESULTS.md``. In one run, on the same data (1 target :
10 non-targets, three correlated Gaussian systems):

* scoreframe's trust-region fit of the prior-weighted objective (numpy kernel, and the full
  ``LinearCalibration`` / ``LinearFusion`` path from a polars frame, which includes the column
  extraction and for fusion the join of the three systems on model/segment);
* scikit-learn's ``LogisticRegression(penalty=None)`` (lbfgs) with per-trial ``sample_weight``
  making it optimize the same prior-weighted objective, so both reach the same optimum; the
  table shows the normalized objective each one ends at.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl
from _results import write_section
from bench_evaluate import machine

from scoreframe.estimators.calibration import LinearCalibration
from scoreframe.estimators.fusion import LinearFusion
from scoreframe.kernels.logreg import fit_linear
from scoreframe.kernels.psr import psr_beta

HERE = Path(__file__).parent
P_TARGET = 0.01


def make(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 1 / 11
    common = rng.normal(0, 1, n)
    scores = np.empty((n, 3))
    for k, (d, noise) in enumerate(((2.5, 0.6), (2.0, 0.8), (1.5, 1.0))):
        scores[:, k] = np.where(label, d, 0.0) + 0.7 * common + noise * rng.normal(0, 1, n) - 1
    return scores, label


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def sklearn_fit(x: np.ndarray, label: np.ndarray) -> tuple[float, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    n_tar = label.sum()
    n_non = label.size - n_tar
    weight = np.where(label, P_TARGET / n_tar, (1 - P_TARGET) / n_non) * label.size
    tau = math.log(P_TARGET / (1 - P_TARGET))
    model = LogisticRegression(penalty=None, tol=1e-10, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, _ = timed(lambda: model.fit(x, label, sample_weight=weight))
    # sklearn's intercept includes the prior log-odds; the llr offset is intercept - tau
    params = np.r_[model.coef_.ravel(), model.intercept_[0] - tau]
    return seconds, params


def objective(x: np.ndarray, label: np.ndarray, params: np.ndarray) -> float:
    from scoreframe.kernels.psr import psr_objective

    llr = x @ params[:-1] + params[-1]
    return psr_objective(llr[label], llr[~label], P_TARGET, psr_beta("log"), normalize=True)


def run(n: int) -> list[dict]:
    scores, label = make(n)
    rows = []
    for task, k in (("calibration", 1), ("fusion (3 systems)", 3)):
        x = scores[:, :k]
        xa = np.column_stack([x, np.ones(n)])
        w0 = np.r_[np.full(k, 1 / k if k > 1 else 0.0), 0.0]
        t_kernel, fit = timed(lambda xa=xa, w0=w0: fit_linear(
            xa[label], xa[~label], p_target=P_TARGET, rule=psr_beta("log"), w0=w0))
        if k == 1:
            df = pl.DataFrame({"score": x[:, 0], "label": label})
            t_api, _ = timed(lambda df=df: LinearCalibration(p_target=P_TARGET).fit(df))
        else:
            ids = pl.Series("segment", np.arange(n)).cast(pl.String)
            df = pl.concat([pl.DataFrame({"model": "m", "segment": ids, "label": label,
                                          "score": x[:, j], "system": f"sys{j + 1}"})
                            for j in range(k)])
            t_api, _ = timed(lambda df=df: LinearFusion(p_target=P_TARGET).fit(df))
        t_sk, sk_params = sklearn_fit(x, label)
        rows.append({"n": n, "task": task, "kernel": t_kernel, "api": t_api, "sklearn": t_sk,
                     "obj_sf": fit.objective, "obj_sk": objective(x, label, sk_params),
                     "iters": fit.n_iter, "converged": fit.converged})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--output", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    sizes = [10**4, 10**5] if a.quick else [10**6, 10**7]
    rows = [r for n in sizes for r in run(n)]
    lines = [
        "## Calibration and fusion (logistic regression)", "",
        f"Machine: {machine()}.", "",
        f"Produced by `python benchmarks/bench_calibration.py{' --quick' if a.quick else ''}` "
        f"({time.strftime('%Y-%m-%d')}), one run each, seconds. Prior-weighted objective at "
        f"p_target = {P_TARGET}; scikit-learn gets per-trial weights so it minimizes the same "
        "objective (it has no prior weighting of its own).", "",
        "| trials | task | scoreframe kernel | scoreframe API (from polars) | scikit-learn "
        "LogisticRegression | sklearn / kernel | objective scoreframe | objective sklearn | "
        "iterations |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:.0e} | {r['task']} | {r['kernel']:.3f} | {r['api']:.3f} | "
            f"{r['sklearn']:.3f} | {r['sklearn'] / r['kernel']:.1f}x | {r['obj_sf']:.10f} | "
            f"{r['obj_sk']:.10f} | {r['iters']}{'' if r['converged'] else ' (not converged)'} |")
    slowest = max(r["kernel"] / r["sklearn"] for r in rows)
    lines += ["", "Target (issue: calibration and fusion): no slower than scikit-learn: "
              f"slowest kernel/sklearn ratio {slowest:.2f} -> "
              f"{'met' if slowest <= 1 else 'NOT met'}. The API column adds the polars "
              "extraction (and, for fusion, the join on model/segment).", ""]
    write_section(a.output, "calibration", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
