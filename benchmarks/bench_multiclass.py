"""Speed of the multiclass evaluation and of the Cavg sweep, before and after one-sort min Cavg.

Run: ``python benchmarks/bench_multiclass.py [--before DIR] [--quick]``. Writes the
``multiclass`` section of ``benchmarks/RESULTS.md``.

Each measurement runs in a fresh subprocess that imports ``scoreframe`` from a given root: this
checkout ("after") and, with ``--before DIR``, an older copy of the package (e.g. made with
``git archive <commit> scoreframe | tar -x -C DIR``), so both are timed in one run on the same
data:

* ``cifar10`` (tests/data/real/multiclass: 3 systems x 10 000 images x 10 classes),
* ``cifar100_resnet20`` (``../shared/data/real``, 10 000 images x 100 classes; skipped when the
  shared data folder is absent),
* a synthetic LRE-sized set: 10^5 segments x 14 classes with unbalanced class counts.

Times are the best of a few runs (one run when a call takes over 5 s), in seconds, of
``evaluate_multiclass(scores, truth)`` (primary ``p_target`` 0.5) and ``cavg_sweep(scores,
truth)`` (81 priors) on polars frames already in memory.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
REAL = ROOT / "tests" / "data" / "real" / "multiclass"
SHARED = ROOT.parent / "shared" / "data" / "real"


def load_sets(quick: bool) -> dict:  # noqa: ANN401 - returns polars frames
    import numpy as np
    import polars as pl

    sets = {}

    def real(name: str, folder: Path) -> None:
        sc = folder / f"{name}_scores.parquet"
        tr = folder / f"{name}_truth.parquet"
        if sc.exists() and tr.exists():
            sets[name] = (pl.read_parquet(sc).drop("log_posterior", strict=False),
                          pl.read_parquet(tr))

    real("cifar10", REAL / "cifar10")
    if not quick:
        real("cifar100_resnet20", SHARED / "cifar100_resnet20")
    n, k = (10_000, 14) if quick else (100_000, 14)
    rng = np.random.default_rng(0)
    weights = np.linspace(1.0, 4.0, k)
    y = rng.choice(k, size=n, p=weights / weights.sum())
    w = rng.normal(0.0, 1.0, (n, k))
    w[np.arange(n), y] += 1.5
    seg = np.array([f"seg{i:07d}" for i in range(n)])
    names = [f"l{j:02d}" for j in range(k)]
    sc = pl.DataFrame({"segment": np.repeat(seg, k), "class": names * n, "score": w.ravel()})
    tr = pl.DataFrame({"segment": seg, "class": np.array(names)[y]})
    sets[f"synthetic_{n}x{k}"] = (sc, tr)
    return sets


def best(fn, repeats: int = 3) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if times[-1] > 5.0:
            break
    return min(times)


def worker(root: str, quick: bool) -> dict:
    """Time one copy of scoreframe (imported from ``root``) on every set."""
    sys.path.insert(0, root)
    import numpy as np

    from scoreframe.kernels import multiclass as km
    from scoreframe.multiclass import cavg_sweep, evaluate_multiclass, read_scores, read_truth
    from scoreframe.multiclass.data import score_matrices

    priors = 1.0 / (1.0 + np.exp(-np.linspace(-5.0, 5.0, 81)))

    def kernel(s: np.ndarray, y: np.ndarray) -> None:
        if hasattr(km, "cavg_curve"):
            km.cavg_curve(s, y, priors)
        else:  # the old kernels: one call (and one sort for the minimum) per prior
            for p in priors:
                km.cavg(s, y, p)
                km.min_cavg(s, y, p)

    out = {}
    for name, (sc, tr) in load_sets(quick).items():
        res = evaluate_multiclass(sc, tr)
        cols = [c for c in ("system",) if c in res.columns]
        g = score_matrices(read_scores(sc), read_truth(tr))[0]
        s = km.detection_llrs(g.w)
        out[name] = {
            "rows": sc.height,
            "kernel": best(lambda s=s, y=g.y: kernel(s, y), repeats=2),
            "evaluate": best(lambda sc=sc, tr=tr: evaluate_multiclass(sc, tr)),
            "sweep": best(lambda sc=sc, tr=tr: cavg_sweep(sc, tr), repeats=2),
            "min_cavg": {"/".join(map(str, r[:-1])) or "all": r[-1] for r in
                         res.select(*cols, "min_cavg").iter_rows()},
        }
    return out


def run(root: Path, quick: bool) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(root)] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(after: dict, before: dict | None) -> str:
    head = ("| set | score rows | Cavg kernel, 81 priors | evaluate_multiclass | "
            "cavg_sweep (81 priors) |")
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if before:
        head = ("| set | score rows | Cavg kernel, 81 priors: before | after | "
                "evaluate before | after | cavg_sweep before | after |")
        rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    lines = [head, rule]
    for name, a in after.items():
        if before and name in before:
            b = before[name]
            lines.append(f"| {name} | {a['rows']:,} | {b['kernel']:.3f} | {a['kernel']:.3f} | "
                         f"{b['evaluate']:.3f} | {a['evaluate']:.3f} | {b['sweep']:.3f} | "
                         f"{a['sweep']:.3f} |")
        else:
            lines.append(f"| {name} | {a['rows']:,} | {a['kernel']:.3f} | {a['evaluate']:.3f} "
                         f"| {a['sweep']:.3f} |")
    return "\n".join(lines)


def values(after: dict, before: dict | None) -> str:
    lines = ["| set | group | min Cavg (p_target 0.5) before | after |",
             "| --- | --- | ---: | ---: |"]
    for name, a in after.items():
        for g, v in a["min_cavg"].items():
            b = before[name]["min_cavg"].get(g) if before and name in before else None
            lines.append(f"| {name} | {g} | {'' if b is None else repr(b)} | {v!r} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="directory holding an older `scoreframe` package")
    ap.add_argument("--after", default=str(ROOT),
                    help="directory holding the `scoreframe` package to time (default: this "
                         "checkout)")
    ap.add_argument("--quick", action="store_true", help="small sets, no cifar100")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.quick)))
        return
    load = [os.getloadavg()[0]]
    after = run(Path(a.after), a.quick)
    before = run(Path(a.before), a.quick) if a.before else None
    load.append(os.getloadavg()[0])
    from bench_evaluate import machine

    text = "\n".join([
        "## Multiclass evaluation and Cavg sweep",
        "",
        f"Machine: {machine()}.",
        "",
        f"Produced by `python benchmarks/bench_multiclass.py"
        f"{' --before DIR' if before else ''}{' --quick' if a.quick else ''}` "
        f"({datetime.date.today()}). Times in seconds, best of up to 3 runs, each copy of the "
        "package in its own process on the same frames in memory."
        + f" Load average (1 min) at the start and end of the run: {load[0]:.1f}, "
        f"{load[1]:.1f} on {os.cpu_count()} cores: with other jobs running, absolute times are "
        "inflated; before and after ran in the same run and compare."
        + (" *Before* = the package as of commit 18d1e6e (min Cavg re-sorted the N*K detection "
           "llrs once per prior, the pivot sorted three times per group); *after* = one sort of "
           "the detection llrs per group for every prior (actual and minimum Cavg from integer "
           "counts), one sort per group in the pivot." if before else ""),
        "",
        table(after, before),
        "",
        "*Cavg kernel*: actual and minimum Cavg at the 81 priors of `cavg_sweep` from the "
        "detection llrs of the first group (before: `cavg` + `min_cavg` per prior; after: one "
        "`cavg_curve`). `evaluate_multiclass` includes reading and checking the frames, the "
        "pivot, Cmxe, Bayes decisions and Cavg at p_target 0.5. `cavg_sweep` also trains the "
        "oracle affine calibration of each group (its `calibrated` column): most of its time "
        "after, and that trainer changed too between the two copies.",
        "",
        "Minimum Cavg at p_target 0.5 (unnormalized): after = the exact value of the integer "
        "counts, correctly rounded (issue 16.5).",
        "",
        values(after, before),
    ])
    if a.no_write:
        print(text)
        return
    from _results import write_section

    write_section(HERE / "RESULTS.md", "multiclass", text)
    print(text)


if __name__ == "__main__":
    main()
