"""The in-memory full suite side by side with its floor, one sort (issue 22, target 1).

Run: ``python benchmarks/bench_floor.py [--n 10000000] [--repeat 3] [--out FILE]``. Writes a
section of ``benchmarks/RESULTS.md`` (or ``--out``). In ONE process and run, on the same
data (``n`` trials, 1 target : 10 non-targets, Gaussian scores), median of ``repeat`` runs:

* the floor: ``pl.Series(scores).sort()`` (Polars, multi-threaded), ``np.sort(scores)``, and
  sorting the (condition, score) keys of the 20-condition table with Polars;
* ``scoreframe.evaluate(df, operating_points=[0.01, 0.1, 0.5])`` (ROCCH-EER, Cllr, minCllr, PRBEP,
  actual and minimum DCF) with the default memory limit (the route a user gets) and with the
  in-memory route forced (``engine="memory"``), on one group and on 20 conditions
  (``by="condition"``, with the pooled row);
* a per-phase breakdown of the in-memory route: cProfile's own time of each function, summed
  into phases (the Polars grouped sort, conversion to numpy, the kernels, Python overhead).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from _results import write_section

import scoreframe

HERE = Path(__file__).parent
PRIORS = [0.01, 0.1, 0.5]

#: Phase of a profiled function, by (file suffix, function name); the first match wins.
PHASES: list[tuple[str, str, str]] = [
    ("", "collect", "Polars grouped sort (collect)"),
    ("", "to_numpy", "conversion to numpy"),
    ("", "to_dicts", "conversion to numpy"),
    ("elementary.py", "exact_sum", "Cllr: exact sums"),
    ("elementary.py", "softplus", "Cllr: softplus"),
    ("sorted_scores.py", "label_runs", "PAV: label runs, target positions"),
    ("sorted_scores.py", "tar_positions", "PAV: label runs, target positions"),
    ("sorted_scores.py", "pav_blocks", "PAV: blocks (isotonic regression, position sums)"),
    ("sorted_scores.py", "strictly_increasing", "PAV: blocks (isotonic regression, position sums)"),
    ("sorted_scores.py", "score_at", "PAV: blocks (isotonic regression, position sums)"),
    ("_isotonic.py", "", "PAV: blocks (isotonic regression, position sums)"),
    ("", "pava", "PAV: blocks (isotonic regression, position sums)"),
    ("reduce.py", "merge_sorted", "pooled row: merge of the groups' sorted runs"),
    ("reduce.py", "_merge_runs", "pooled row: merge of the groups' sorted runs"),
    ("", "sort", "pooled row: merge of the groups' sorted runs"),
    ("", "concatenate", "pooled row: merge of the groups' sorted runs"),
    ("", "searchsorted", "actual DCF, ROCCH, minDCF (searchsorted, scans)"),
    ("rocch.py", "", "actual DCF, ROCCH, minDCF (searchsorted, scans)"),
    ("cllr.py", "", "actual DCF, ROCCH, minDCF (searchsorted, scans)"),
    ("dcf.py", "", "actual DCF, ROCCH, minDCF (searchsorted, scans)"),
]
NUMPY_PHASE = "other numpy passes in the kernels (cumsum, diff, astype, reduceat)"


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def phase_of(file: str, name: str) -> str:
    for suffix, fname, phase in PHASES:
        if (not suffix or file.endswith(suffix)) and (not fname or name == fname
                                                       or f"'{fname}'" in name):
            return phase
    if file.startswith("~") or "numpy" in file:
        return NUMPY_PHASE
    return "Python overhead (planning, result frame, checks)"


def breakdown(fn: Callable[[], Any]) -> tuple[float, dict[str, float]]:
    """Wall time of one profiled run and its own time summed per phase."""
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    fn()
    pr.disable()
    wall = time.perf_counter() - t
    out: dict[str, float] = {}
    for (file, _line, name), row in pstats.Stats(pr).stats.items():  # type: ignore[attr-defined]
        # cProfile sees the main thread only: its wait for the kernels' worker threads
        ph = ("kernels in worker threads (main thread waiting)"
              if "acquire" in name and "lock" in name else phase_of(file, name))
        out[ph] = out.get(ph, 0.0) + row[2]
    return wall, out


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, pl.DataFrame, pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 1 / 11
    scores = rng.standard_normal(n) + 2.5 * labels
    df = pl.DataFrame({"score": scores, "label": labels})
    codes = rng.integers(0, 20, n).astype(np.uint32)
    names = pl.Series([f"c{i:02d}" for i in range(20)])
    df20 = df.with_columns(condition=names.gather(codes))
    return scores, df, df20, codes


def run(n: int, repeat: int, skip: frozenset[str] = frozenset(), profile: bool = True) -> str:
    scores, df, df20, codes = make_data(n)
    keys = pl.DataFrame({"condition": df20["condition"], "score": scores})
    keys_u32 = pl.DataFrame({"condition": codes, "score": scores})
    scoreframe.evaluate(df.head(1000), operating_points=PRIORS)  # imports and first-call costs
    t: dict[str, float] = {}
    jobs: list[tuple[str, Callable[[], Any]]] = [
        ("pl_sort", lambda: pl.Series(scores).sort()),
        ("np_sort", lambda: np.sort(scores)),
        ("pl_sort_keys_str", lambda: keys.sort(["condition", "score"])),
        ("pl_sort_keys_u32", lambda: keys_u32.sort(["condition", "score"])),
        ("eval_default", lambda: scoreframe.evaluate(df, operating_points=PRIORS)),
        ("eval_memory", lambda: scoreframe.evaluate(df, operating_points=PRIORS,
                                                    engine="memory")),
        ("eval20_default", lambda: scoreframe.evaluate(df20, operating_points=PRIORS,
                                                       by="condition")),
        ("eval20_memory", lambda: scoreframe.evaluate(df20, operating_points=PRIORS,
                                                      engine="memory",
                                                      by="condition")),
    ]
    # round by round, every job once per round: each sees the same process state (a job run
    # right after the large key sorts found the allocator's arenas in another state)
    times: dict[str, list[float]] = {name: [] for name, _ in jobs if name not in skip}
    for _ in range(repeat):
        for name, fn in jobs:
            if name == "eval_default":  # untimed: each evaluation follows another one, not
                # the large key sorts (whose freed memory made the next call 10 % slower)
                scoreframe.evaluate(df, operating_points=PRIORS, engine="memory")
            if name in times:
                times[name].append(median_time(fn, 1))
    for name, _ in jobs:
        t[name] = statistics.median(times[name]) if name in times else float("nan")
        print(f"{name:20s} {t[name]:.3f} s", flush=True)
    floor20 = min(t[k] for k in ("pl_sort_keys_str", "pl_sort_keys_u32") if k not in skip)
    load = os.getloadavg()[0]
    profs = [] if not profile else [
        ("1 group", breakdown(lambda: scoreframe.evaluate(df, operating_points=PRIORS,
                                                          engine="memory"))),
        ("20 conditions + pooled row", breakdown(lambda: scoreframe.evaluate(
            df20, operating_points=PRIORS, engine="memory", by="condition")))]

    def row(target: str, measured: float, floor: float, floor_name: str, bound: float) -> str:
        r = measured / floor
        return (f"| {target} | {measured:.3f} s | {floor_name} {floor:.3f} s | {r:.2f}x | "
                f"{'met' if r <= bound else 'not met'} (<= {bound}x) |")

    lines = [
        f"{n:.0e} trials (1 target : 10 non-targets), full suite at p_target {PRIORS}; "
        f"median of {repeat} in one process, the jobs alternated round by round; "
        f"{platform.machine()}, {os.cpu_count()} cores, "
        f"load average at the end of the timings {load:.1f} (shared machine: absolute times "
        f"vary between runs, the ratios much less), polars {pl.__version__}, numpy "
        f"{np.__version__}.",
        "",
        "| target | measured | floor | ratio | met? |",
        "|---|---:|---:|---:|---|",
        row("1 group, in memory", t["eval_memory"], t["pl_sort"], "`pl.Series(scores).sort()`",
            1.5),
        row("1 group, in memory", t["eval_memory"], t["np_sort"], "`np.sort(scores)`", 0.7),
        row("1 group, default memory limit", t["eval_default"], t["pl_sort"],
            "`pl.Series(scores).sort()`", 1.5),
        row("20 conditions + pooled, in memory", t["eval20_memory"], floor20,
            "Polars sort of (condition, score)", 1.5),
        row("20 conditions + pooled, default memory limit", t["eval20_default"], floor20,
            "Polars sort of (condition, score)", 1.5),
        "",
        f"Floors: `pl.Series(scores).sort()` {t['pl_sort']:.3f} s, `np.sort` {t['np_sort']:.3f} s, "
        f"`sort(['condition', 'score'])` with text conditions {t['pl_sort_keys_str']:.3f} s, "
        f"with UInt32 condition codes {t['pl_sort_keys_u32']:.3f} s (the faster is the floor).",
        "",
    ]
    lines = [ln for ln in lines if not (ln.startswith("| ") and "nan" in ln)]  # skipped
    for title, (wall, ph) in profs:
        lines += [f"Breakdown, in memory, {title} (one profiled run, {wall:.3f} s wall; "
                  "cProfile own time per phase, Polars' and numpy's threads inside their call):",
                  "", "| phase | seconds | share |", "|---|---:|---:|"]
        total = sum(ph.values())
        for k, v in sorted(ph.items(), key=lambda kv: -kv[1]):
            if v >= 0.0005:
                lines.append(f"| {k} | {v:.3f} | {100 * v / total:.0f}% |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=float, default=1e7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--section", default="floor")
    ap.add_argument("--skip", nargs="*", default=[],
                    help="timings to leave out, e.g. pl_sort_keys_str eval_default")
    ap.add_argument("--no-profile", action="store_true")
    a = ap.parse_args()
    text = run(int(a.n), a.repeat, frozenset(a.skip), not a.no_profile)
    print(text)
    write_section(a.out, f"speed_{a.section}",
                  f"## In memory against the sort floor ({a.section})\n\n"
                  f"Written by `benchmarks/bench_floor.py`.\n\n{text}")


if __name__ == "__main__":
    main()
