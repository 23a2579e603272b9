"""Peak bytes per trial of the in-memory reduction: the constants of ``engine="auto"``.

``engine="auto"`` reduces in memory when ``trials x BYTES_PER_TRIAL`` (plus
``REPLICATE_BYTES_PER_COLUMN`` per resampling column with intervals) fits the memory limit
(:mod:`scoreframe.stats.engine`). This measures, in a fresh process per case, the peak
resident memory of ``evaluate(data, engine="memory")`` above the process's resident memory
just before the call (package imported), divided by the number of trials: a Parquet path
(reading included) or a DataFrame already in memory (its own memory not counted), 1 and 20
conditions, without and with replicates
(``Intervals(bootstrap=100, resample=["model", "segment"])``).

Run: ``PYTHONPATH=. python benchmarks/bench_engine_auto.py [N ...]`` (default 10^6 and 3*10^6
trials); results go to the ``engine-auto`` section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import write_section

CASE = r"""
import json, resource, sys
import scoreframe as sf
from scoreframe.metrics import Intervals
path, by, reps, frame = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1"
import polars as pl
n = pl.scan_parquet(path).select(pl.len()).collect().item()
data = pl.read_parquet(path) if frame else path  # a frame: its own memory is not counted
import os
base = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
iv = Intervals(bootstrap=100, resample=["model", "segment"]) if reps else None
sf.evaluate(data, by=by or None, intervals=iv, engine="memory")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"n": n, "bytes_per_trial": (peak - base) / n, "peak_mb": peak / 1e6}))
"""


#: How the constants follow from the table (kept with it in RESULTS.md).
NOTE = (
    'Constants of `engine="auto"` set from this table (the largest value of each case, rounded '
    'up; `scoreframe/stats/engine.py`): 64 B/trial for one group and 128 with condition columns '
    'when the trials are already in memory, +48 when the reduction reads them (a path, a '
    'LazyFrame), +80 (one group) or +224 (conditions) per resampling column. Before: 128 (+128 '
    'per column) for every case, which sent a 10^7-trial one-group DataFrame out of core under '
    'the 1 GiB default; now it stays in memory (10^7 x 64 B). Reduced scale (10^6 and 3x10^6; '
    'bytes per trial fall with size); measured on the shared 2-core machine at load 20-30 '
    '(memory, not time, is measured).'
)


def make(n: int, root: Path) -> Path:
    """``n`` trials with 20 conditions, model and segment ids (one Parquet file)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    lab = rng.random(n) < 0.1
    path = root / f"t{n}.parquet"
    pl.DataFrame({"score": rng.normal(size=n) + 2 * lab, "label": lab,
                  "condition": pl.Series((np.arange(n) % 20).astype(str)),
                  "model": pl.Series(np.arange(n) % 5000).cast(pl.String),
                  "segment": pl.Series(np.arange(n) // 5000).cast(pl.String)}
                 ).write_parquet(path)
    return path


def main(sizes: list[int]) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = make(n, Path(tmp))
            for frame in (False, True):
                for by in ("", "condition"):
                    for reps in (False, True):
                        out = subprocess.run([sys.executable, "-c", CASE, str(path), by,
                                              "1" if reps else "0", "1" if frame else "0"],
                                             check=True, capture_output=True, text=True).stdout
                        r = json.loads(out.strip().splitlines()[-1])
                        rows.append((n, "DataFrame" if frame else "path", 20 if by else 1,
                                     reps, r["bytes_per_trial"], r["peak_mb"]))
                        print(rows[-1], flush=True)
    lines = ["## engine=\"auto\": peak bytes per trial of the in-memory reduction", "",
             "`python benchmarks/bench_engine_auto.py` (fresh process per case, peak RSS above "
             "the resident memory just before the call, a Parquet path or a DataFrame read "
             "before, `engine=\"memory\"`, duplicate check on; "
             "replicates: `Intervals(bootstrap=100, resample=[\"model\", \"segment\"])`).", "",
             "| trials | input | groups | replicates | bytes/trial | peak MB |",
             "|---:|:--|---:|:--|---:|---:|"]
    lines += [f"| {n:.0e} | {i} | {g} | {'yes' if r else 'no'} | {b:.0f} | {p:.0f} |"
              for n, i, g, r, b, p in rows]
    lines += ["", NOTE]
    write_section(Path(__file__).with_name("RESULTS.md"), "engine-auto", "\n".join(lines))


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or [1_000_000, 3_000_000])
