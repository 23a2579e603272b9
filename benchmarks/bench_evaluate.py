"""Speed and memory of the binary evaluation engine, side by side with the floor and a peer.

Run: ``make bench`` (or ``python benchmarks/bench_evaluate.py [--quick]``). Writes
``benchmarks/RESULTS.md``. In one run, on the same data:

* in memory, at 10^6, 10^7 and 3*10^7 trials (1 target : 10 non-targets, Gaussian scores):
  ``numpy.sort`` of the float64 scores (the floor); scikit-learn's ``roc_curve`` EER (the peer
  most users have); scoreframe's full suite (EER, Cllr, minCllr, PRBEP, act/min DCF at 3 priors)
  through ``scoreframe.evaluate`` on a polars frame and through the numpy kernels;
* from disk: a 5*10^7-trial hive-partitioned dataset with 20 conditions, evaluated per condition
  (plus the pooled row) in a fresh process, with its peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from _results import write_section

HERE = Path(__file__).parent
PRIORS = [0.01, 0.1, 0.5]


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def sklearn_eer(labels: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(labels, scores)
    fnr = 1 - tpr
    i = int(np.nanargmin(np.abs(fnr - fpr)))
    return float((fpr[i] + fnr[i]) / 2)


def in_memory(n: int, repeat: int) -> dict:
    from scoreframe import evaluate
    from scoreframe.kernels import sort_scores
    from scoreframe.kernels.elementary import operating_points
    from scoreframe.kernels.summary import binary_summary

    rng = np.random.default_rng(0)
    labels = rng.random(n) < 1 / 11
    scores = rng.standard_normal(n) + 2.5 * labels
    df = pl.DataFrame({"score": scores, "label": labels})
    p, q, thr = operating_points(p_target=np.array(PRIORS))

    def numpy_suite() -> None:
        s = sort_scores(scores[labels], scores[~labels])
        binary_summary(s, p, q, thr)

    row = {"n": n,
           "floor_np_sort": best_of(lambda: np.sort(scores), repeat),
           "scoreframe_evaluate": best_of(lambda: evaluate(df, operating_points=PRIORS), repeat),
           "scoreframe_numpy_kernels": best_of(numpy_suite, repeat),
           "sklearn_roc_curve_eer": best_of(lambda: sklearn_eer(labels, scores), 1)}
    res = evaluate(df, operating_points=PRIORS)
    row["eer_scoreframe"] = res["eer"][0]
    row["eer_sklearn"] = sklearn_eer(labels, scores)
    return row


def make_dataset(path: Path, n: int) -> float:
    from scoreframe import synth_chunks, write_trials

    t = time.perf_counter()
    write_trials(synth_chunks(n, n_systems=1, n_conditions=20, seed=1, chunk_trials=2_000_000),
                 path, partition_by=["condition"], overwrite=True)
    return time.perf_counter() - t


CHILD = """
import json, resource, sys, time
from scoreframe import evaluate
t = time.perf_counter()
res = evaluate(sys.argv[1], by=["condition"], operating_points=[0.01, 0.1, 0.5])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "groups": res.height,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "pooled_eer": res.filter(condition="all")["eer"][0]}))
"""


def from_disk(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import scipy
    import sklearn

    return (f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
            f"{mem:.0f} GiB RAM; Python {platform.python_version()}, numpy {np.__version__}, "
            f"scipy {scipy.__version__}, polars {pl.__version__}, scikit-learn "
            f"{sklearn.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--disk-trials", type=int, default=50_000_000)
    ap.add_argument("--output", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    sizes = [10**5, 10**6] if a.quick else [10**6, 10**7, 3 * 10**7]
    disk_n = 10**6 if a.quick else a.disk_trials
    rows = []
    for n in sizes:
        rows.append(in_memory(n, repeat=3 if n <= 10**7 else 1))
        print(rows[-1], flush=True)
    data = HERE / "data" / f"synth_{disk_n}"
    gen = make_dataset(data, disk_n)
    disk = from_disk(data)
    disk.update({"trials": disk_n, "generate_seconds": gen})
    print(disk, flush=True)
    lines = [
        "## Binary evaluation engine", "",
        f"Machine: {machine()}.", "",
        f"Produced by `python benchmarks/bench_evaluate.py{' --quick' if a.quick else ''}` "
        f"({time.strftime('%Y-%m-%d')}). Times are the best of 3 runs (1 for 3*10^7 and for "
        "scikit-learn), in seconds.", "",
        "### In memory (1 target : 10 non-targets)", "",
        "| trials | floor: np.sort | scoreframe.evaluate (full suite) | numpy kernels (full suite)"
        " | scikit-learn roc_curve EER | evaluate / floor | sklearn / evaluate |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:.0e} | {r['floor_np_sort']:.3f} | {r['scoreframe_evaluate']:.3f} | "
            f"{r['scoreframe_numpy_kernels']:.3f} | {r['sklearn_roc_curve_eer']:.3f} | "
            f"{r['scoreframe_evaluate'] / r['floor_np_sort']:.2f}x | "
            f"{r['sklearn_roc_curve_eer'] / r['scoreframe_evaluate']:.1f}x |")
    lines += [
        "", "Full suite = ROCCH-EER, Cllr, minCllr, PRBEP, actual and minimum DCF at "
        "p_target 0.01, 0.1, 0.5. `scoreframe.evaluate` sorts with polars (multi-threaded); the "
        "numpy-kernel column sorts with `np.sort`. scikit-learn computes only the EER (nearest "
        "ROC point, its usual recipe).", "",
        "EER check (same data): " + "; ".join(
            f"{r['n']:.0e}: scoreframe {r['eer_scoreframe']:.6f}, sklearn {r['eer_sklearn']:.6f}"
            for r in rows), "",
        "### From disk, per condition", "",
        f"{disk['trials']:.0e} trials, hive-partitioned by 20 conditions (synthetic, 1 system), "
        f"evaluated by condition plus the pooled row ({disk['groups']} groups) in a fresh "
        "process: "
        f"**{disk['seconds']:.1f} s**, peak resident memory **{disk['peak_rss_mb']:.0f} MB** "
        f"(generating the dataset took {disk['generate_seconds']:.0f} s). Only `score`, "
        "`label` and `condition` are read; model/segment strings never leave the files.", "",
        "### Targets (issue: binary evaluation engine)", "",
    ]
    r7 = next((r for r in rows if r["n"] == 10**7), rows[-1])
    ratio = r7["scoreframe_evaluate"] / r7["floor_np_sort"]
    speed = r7["sklearn_roc_curve_eer"] / r7["scoreframe_evaluate"]
    lines += [
        f"* 10^7 suite within 4x the floor: {ratio:.2f}x -> {'met' if ratio <= 4 else 'NOT met'}",
        f"* at least 5x faster than scikit-learn's EER alone: {speed:.1f}x -> "
        f"{'met' if speed >= 5 else 'NOT met'}",
        f"* 5*10^7 per condition within 60 s and 4 GB: {disk['seconds']:.1f} s, "
        f"{disk['peak_rss_mb']:.0f} MB -> "
        f"{'met' if disk['seconds'] <= 60 and disk['peak_rss_mb'] <= 4096 else 'NOT met'}"
        + ("" if disk["trials"] >= 5 * 10**7 else " (quick run: smaller dataset)"),
        "",
    ]
    write_section(a.output, "evaluate", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
