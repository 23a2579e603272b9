"""The 10^9-scale targets of issues 21, 22 and 23, one measured step at a time.

Every step runs in a fresh process under ``nice -n 10 /usr/bin/time -v`` (wall, user + system
CPU, peak resident memory of the process); steps run one after the other, never two at once
(the machine is shared). Each record is appended to ``--log`` (JSON lines); ``write`` turns
the log into the ``billion`` section of ``benchmarks/RESULTS.md``.

Data (under ``--root``, default ``/tmp/scale``; delete it afterwards)::

    python benchmarks/bench_billion.py gen                 # 10^9 trials, make_data.py --full
    python benchmarks/bench_billion.py gen-searches        # 10^6 probes x 10^3 gallery

``full_1e9`` is ``make_data.py --full`` (100 files of 10^7 trials: model, segment, group,
segment_group, condition, score, label, trial_type, system); ``sub_K`` is a directory of
symbolic links to its first ``K`` files (``K * 10^7`` trials), for the measurements that do
not fit at 10^9 (measured at two sizes and extrapolated, and the record says so).

Steps (``python benchmarks/bench_billion.py run STEP [--files K]``):

* ``plain``: ``scoreframe evaluate DS --by condition``;
* ``same-process``: in one process, ``sf.evaluate(DS, by="condition")`` (the CLI's call),
  then the floor of issue 22 in the same process state (warm file cache): Polars reads
  ``condition`` and ``score`` and sorts by both. At 10^9 that needs ~24 GB (condition strings
  and scores, and the sorted copy), so it is done file by file and the times summed (each
  file is 10^7 trials; one full sort would be ~10 % slower, ``log2`` 10^9 / ``log2`` 10^7);
* ``floor-whole``: the same floor on the whole of ``sub_K`` at once (a size that fits);
* ``biometric``: ``... --biometric --fmr 1e-3 1e-4 1e-5 1e-6``;
* ``bootstrap``: ``... --bootstrap 100 --resample model segment``;
* ``spoof``: ``... --spoof --forensic``;
* ``identify`` / ``identify-floor``: ``scoreframe identify SEARCHES --rank 1 5 10 100 --fpir
  0.01 0.001 0.0001`` and its floor (read the score column and sort it, file by file, summed);
* ``differentials``: ``scoreframe differentials DS --by group --pair-with segment_group --fmr
  1e-4`` (8 groups, no replicates); ``differentials-boot``: the same with ``--bootstrap 100
  --resample model segment`` (subject-level two-way intervals).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _results import write_section

HERE = Path(__file__).parent
PY = sys.executable
FILE_TRIALS = 10_000_000

FLOOR = r"""
import json, resource, sys, time
from pathlib import Path
import polars as pl
path, cols, per_file = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1"
out = {}
if len(sys.argv) > 4:  # the evaluation first, in this process
    import warnings
    import scoreframe as sf
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sf.evaluate(path, by="condition")
    out["evaluate_seconds"] = time.perf_counter() - t
    out["evaluate_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["rows"] = res.height
files = sorted(Path(path).glob("*.parquet")) if per_file else [path]
t = time.perf_counter()
n = 0
for f in files:
    s = pl.scan_parquet(f).select(cols).sort(cols).collect()
    n += s.height
    del s
out["floor_seconds"] = time.perf_counter() - t
out["floor_rows"] = n
out["floor_files"] = len(files)
print(json.dumps(out))
"""


DUP = r"""
import json, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import numpy as np
from scoreframe.stats.outofcore import duplicate_task
root, n, k = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(k):  # k hash ranges of n hashes each, as the partition phase spills them
    d = root / f"h{i:05d}"
    d.mkdir(parents=True)
    np.random.default_rng(i).integers(0, 2**63, n, dtype=np.uint64).tofile(d / "t0.bin")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
with ThreadPoolExecutor(k) as pool:
    found = sum(x.shape[0] for x in pool.map(duplicate_task, [(str(root), i) for i in range(k)]))
print(json.dumps({"seconds": time.perf_counter() - t, "peak_before_mb": base,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "repeated": found}))
"""


def time_v(cmd: list[str]) -> dict:
    """Run ``cmd`` under ``nice -n 10 /usr/bin/time -v``; its wall, CPU, peak RSS and output."""
    t = time.perf_counter()
    p = subprocess.run(["nice", "-n", "10", "/usr/bin/time", "-v", *cmd],
                       capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    err = p.stderr

    def field(name: str) -> str:
        m = re.search(rf"{re.escape(name)}: (.+)", err)
        return m.group(1).strip() if m else "0"
    return {"wall": wall, "cpu": float(field("User time (seconds)"))
            + float(field("System time (seconds)")),
            "peak_mb": int(field("Maximum resident set size (kbytes)")) / 1024,
            "rc": p.returncode, "stdout": p.stdout[-4000:],
            "stderr": err[:err.rfind("\tCommand being timed:")].strip()[-2000:]}


def subset(root: Path, k: int, name: str = "full_1e9") -> Path:
    """``sub_K``: symbolic links to the first ``k`` files of ``name`` (the whole at 100)."""
    full = root / name
    files = sorted(full.glob("*.parquet"))
    if k >= len(files):
        return full
    d = root / (f"sub_{k}" if name == "full_1e9" else f"{name}_sub_{k}")
    if not d.is_dir():
        d.mkdir()
        for f in files[:k]:
            (d / f.name).symlink_to(f)
    return d


def cli(*args: str) -> list[str]:
    return [PY, "-m", "scoreframe", *args, "--format", "json"]


def step(name: str, root: Path, files: int) -> tuple[str, list[str]]:
    """The description and command of one step."""
    ds = str(subset(root, files))
    ev = ("evaluate", ds, "--by", "condition")
    searches = str(subset(root, files, "searches_1e6x1e3")) if name.startswith("identify") \
        else ""
    if name == "plain":
        return "evaluate DS --by condition", cli(*ev)
    if name == "biometric":
        return ("evaluate DS --by condition --biometric --fmr 1e-3 1e-4 1e-5 1e-6",
                cli(*ev, "--biometric", "--fmr", "1e-3", "1e-4", "1e-5", "1e-6"))
    if name == "bootstrap":
        return ("evaluate DS --by condition --bootstrap 100 --resample model segment",
                cli(*ev, "--bootstrap", "100", "--resample", "model", "segment"))
    if name == "spoof":
        return "evaluate DS --by condition --spoof --forensic", cli(*ev, "--spoof", "--forensic")
    if name == "same-process":
        return ("sf.evaluate(DS, by='condition'), then the floor (condition, score) file by "
                "file, same process",
                [PY, "-c", FLOOR, ds, json.dumps(["condition", "score"]), "1", "evaluate"])
    if name == "floor-whole":
        return ("floor: read (condition, score), sort by both, whole dataset at once",
                [PY, "-c", FLOOR, ds, json.dumps(["condition", "score"]), "0"])
    if name == "floor-files":
        return ("floor: read (condition, score), sort by both, file by file, summed",
                [PY, "-c", FLOOR, ds, json.dumps(["condition", "score"]), "1"])
    if name == "dup-phase":
        n = 10**9 // 16  # 10^9 trials, 1 GiB, 2 workers: 16 hash ranges, two at a time
        shutil.rmtree(root / "dup", ignore_errors=True)
        return ("the duplicate check's phase at 10^9 (1 GiB, 2 workers): two hash ranges of "
                "6.25e7 hashes through duplicate_task at once",
                [PY, "-c", DUP, str(root / "dup"), str(n), "2"])
    if name == "identify":
        return ("identify SEARCHES --rank 1 5 10 100 --fpir 0.01 0.001 0.0001",
                cli("identify", searches, "--rank", "1", "5", "10", "100",
                    "--fpir", "0.01", "0.001", "0.0001"))
    if name == "identify-floor":
        return ("floor: read score, sort, file by file, summed",
                [PY, "-c", FLOOR, searches, json.dumps(["score"]), "1"])
    if name == "differentials":
        return ("differentials DS --by group --pair-with segment_group --fmr 1e-4",
                cli("differentials", ds, "--by", "group", "--pair-with", "segment_group",
                    "--fmr", "1e-4"))
    if name == "differentials-boot":
        return ("differentials DS --by group --pair-with segment_group --fmr 1e-4 --bootstrap "
                "100 --resample model segment",
                cli("differentials", ds, "--by", "group", "--pair-with", "segment_group",
                    "--fmr", "1e-4", "--bootstrap", "100", "--resample", "model", "segment"))
    raise SystemExit(f"unknown step {name!r}")


def searches_file(path: Path, f: int, first: int, n: int, gallery: int) -> None:
    """Candidate rows of probes ``first .. first + n - 1`` (seeded by the file number)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(f)
    mate = np.where(rng.random(n) < 0.3, -1, rng.integers(0, gallery, n))
    g = np.tile(np.arange(gallery, dtype=np.int32), n)
    p = np.repeat(np.arange(first, first + n), gallery)
    is_mate = g == np.repeat(mate, gallery)
    score = np.round(rng.standard_normal(n * gallery) + 2.5 * is_mate, 2)
    pl.DataFrame({"probe": pl.Series(p).cast(pl.String), "candidate": g, "score": score,
                  "mate": is_mate}).write_parquet(path, row_group_size=1_000_000)


def make_searches(path: Path, probes: int, gallery: int, per_file: int = 10_000) -> float:
    """Long-form 1:N searches as ``bench_biometrics.make_searches`` lays them out (probe ids
    as strings, 30 % non-mated, scores rounded to 0.01), ``per_file`` probes a file, on two
    threads. Returns the seconds taken."""
    t = time.perf_counter()
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with ThreadPoolExecutor(2) as pool:
        for fut in [pool.submit(searches_file, tmp / f"part-{f:05d}.parquet", f, s,
                                min(per_file, probes - s), gallery)
                    for f, s in enumerate(range(0, probes, per_file))]:
            fut.result()
    tmp.rename(path)
    return time.perf_counter() - t


def append(log: Path, rec: dict) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["gen", "gen-searches", "run", "write"])
    ap.add_argument("step", nargs="?")
    ap.add_argument("--files", type=int, default=100, help="files of 10^7 trials (100: 10^9)")
    ap.add_argument("--root", type=Path, default=Path("/tmp/scale"))
    ap.add_argument("--log", type=Path, default=HERE / "data" / "billion.jsonl")
    ap.add_argument("--note", default="")
    ap.add_argument("--section", default="billion",
                    help="the RESULTS.md section that `write` replaces")
    ap.add_argument("--memory-limit", help="passed to the CLI steps")
    a = ap.parse_args(argv)
    a.root.mkdir(parents=True, exist_ok=True)
    if a.what == "gen":
        cmd = [PY, str(HERE / "make_data.py"), str(a.root / "full_1e9"), "--trials", "1e9",
               "--full", "--threads", "2"]
        r = time_v(cmd)
        side = json.loads((a.root / "full_1e9.json").read_text())
        append(a.log, {"step": "gen", "what": "make_data.py --full --trials 1e9 --threads 2",
                       "trials": 10**9, "bytes": side["bytes"], **r, "when": time.time()})
        print(r)
        return r["rc"]
    if a.what == "gen-searches":
        cmd = [PY, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import bench_billion as b;"
               " from pathlib import Path; b.make_searches(Path(sys.argv[2]), 10**6, 10**3)",
               str(HERE), str(a.root / "searches_1e6x1e3")]
        r = time_v(cmd)
        size = sum(f.stat().st_size for f in (a.root / "searches_1e6x1e3").glob("*.parquet"))
        append(a.log, {"step": "gen-searches", "what": "10^6 probes x 10^3 gallery, long form",
                       "trials": 10**9, "bytes": size, **r, "when": time.time(),
                       "note": f"{size / 1e9:.2f} GB on disk; {a.note}"})
        print(r)
        return r["rc"]
    if a.what == "run":
        what, cmd = step(a.step, a.root, a.files)
        if a.memory_limit:
            cmd += ["--memory-limit", a.memory_limit]
            what += f" --memory-limit {a.memory_limit}"
        trials = a.files * FILE_TRIALS  # a searches file is 10^4 probes x 10^3 = 10^7 rows
        print(f"{a.step} at {trials:.0e}: {' '.join(cmd[:3])} ...", flush=True)
        r = time_v(cmd)
        rec = {"step": a.step, "what": what, "trials": trials, "files": a.files, **r,
               "load": os.getloadavg()[0], "when": time.time(), "note": a.note,
               "code": os.environ.get("PYTHONPATH", "")}
        if a.step in ("same-process", "floor-whole", "floor-files", "identify-floor",
                      "dup-phase") \
                and r["rc"] == 0:
            rec["child"] = json.loads(r["stdout"].strip().splitlines()[-1])
            rec["stdout"] = ""
        append(a.log, rec)
        print({k: v for k, v in rec.items() if k != "stdout"}, flush=True)
        return r["rc"]
    return write(a.log, a.section)


def write(log: Path, section: str = "billion") -> int:
    """The ``billion`` section from the records (hand-checked targets are in the text)."""
    recs = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    rows = []
    for r in recs:
        ok = "ok" if r["rc"] == 0 else "killed" if r["rc"] in (143, -15) else f"exit {r['rc']}"
        extra = ""
        if "child" in r and "floor_seconds" not in r["child"]:
            c = r["child"]
            extra = (f"phase {c['seconds']:.1f} s, peak {c['peak_mb']:.0f} MB "
                     f"({c['peak_before_mb']:.0f} MB before it)")
        elif "child" in r:
            c = r["child"]
            extra = f"floor {c['floor_seconds']:.1f} s over {c['floor_files']} file(s)"
            if "evaluate_seconds" in c:
                extra = (f"evaluate {c['evaluate_seconds']:.1f} s (peak "
                         f"{c['evaluate_peak_mb']:.0f} MB), then " + extra)
        rows.append(f"| {r['step']} | {r['trials']:.0e} | `{r['what']}` | {r['wall']:.1f} | "
                    f"{r['cpu']:.1f} | {r['peak_mb']:.0f} | {ok} | "
                    f"{'; '.join(x for x in (extra, r.get('note', '')) if x)} |")
    table = "\n".join(rows)
    notes = (HERE / "data" / "billion_notes.md")
    text = f"""## billion (`benchmarks/bench_billion.py`; issues 21, 22, 23 at 10^9)

Machine: Linux {platform.machine()}, 2 cores, 24 GiB, shared with other helpers' jobs;
Python {platform.python_version()}. Every row is one fresh process under `nice -n 10
/usr/bin/time -v` (wall, user + system CPU, peak RSS of the process); rows without a
"concurrent" note ran alone among these steps (the other helpers' load aside).

| step | trials | command | wall (s) | CPU (s) | peak RSS (MB) | exit | detail |
| --- | ---: | --- | ---: | ---: | ---: | --- | --- |
{table}

{notes.read_text() if notes.exists() else ""}
"""
    write_section(HERE / "RESULTS.md", section, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
