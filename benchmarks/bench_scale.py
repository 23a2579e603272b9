"""Scale benchmark (issue 11, "Speed and memory"): out-of-core evaluation beside the floor.

Run: ``python benchmarks/bench_scale.py [--parts a,b,c,d] [--quick]``. Every measurement runs
in a fresh Python process; its wall time, CPU time (user + sys, its own and its reaped
children's) and peak resident memory (``getrusage``: ``RUSAGE_SELF`` for the process,
``RUSAGE_CHILDREN`` for the largest of its worker processes) are recorded. The floor is Polars
reading the ``score`` column and sorting it in memory, measured the same way in the same run.

Parts (datasets written by ``make_data.py``: a plain directory of Parquet files, ``condition``
an ordinary column with 20 values, one system):

* ``a``: 1.5*10^8 trials by condition, pooled row included, and the same at 3*10^7 (for the
  memory growth): time vs the floor (target within 4x), peak (<= 1.5 GB and <= 1.25x the
  peak at 3*10^7);
* ``b``: 10^9 trials: exact (per-condition counts equal the generator's, and one condition's
  metrics equal the in-memory evaluation of that condition's 5*10^7 trials to 1e-12), peak
  <= 4 GB, time beside the floor (which does not fit in memory at 10^9: it is measured at
  3*10^8, on the first 30 files, and scaled linearly);
* ``c``: the Dask engine on a 2-worker LocalCluster at 10^8 beside the local engine (identical
  results);
* ``d``: ``scoreframe synth`` of 10^8 trials (3 systems, 20 conditions, partitioned by
  condition), target under 3 minutes.

Results are kept in ``benchmarks/data/scale.json`` as they come (so parts can be run
separately) and written to the ``scale`` section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import make_data
from _results import write_section

HERE = Path(__file__).parent
DATA = HERE / "data"
STATE = DATA / "scale.json"
GB = 1024**3

# One measurement in a fresh process: prints one JSON line.
CHILD = r"""
import json, resource, sys, time
kind, args = sys.argv[1], json.loads(sys.argv[2])
t0 = time.perf_counter()
out = {}
if kind == "floor":
    import polars as pl
    s = pl.scan_parquet(args["files"]).select(pl.col("score").sort()).collect()
    out["rows"] = s.height
elif kind == "evaluate":
    import scoreframe as sf
    res = sf.evaluate(args["path"], by="condition", operating_points=[0.01, 0.1, 0.5],
                      engine=sf.Engine(args["engine"], memory_limit=args.get("memory_limit"),
                                       workers=args.get("workers")))
    out["rows"] = res.to_dicts()
elif kind == "reference":  # one condition, eager in memory
    import polars as pl
    import scoreframe as sf
    df = pl.scan_parquet(args["files"]).filter(pl.col("condition") == args["condition"]) \
        .select("system", "condition", "score", "label").collect()
    out["load_seconds"] = time.perf_counter() - t0
    res = sf.evaluate(df, by="condition", pooled=False, engine="memory",
                      operating_points=[0.01, 0.1, 0.5])
    out["rows"] = res.to_dicts()
elif kind == "synth":
    from scoreframe.cli import main
    out["status"] = main(args["argv"])
elif kind == "synth_lib":  # the generator and the writer, without write-time validation
    import inspect
    from scoreframe.io import write_trials
    from scoreframe.frames.synth import synth_chunks
    kw = {"validate": False} if "validate" in inspect.signature(write_trials).parameters else {}
    write_trials(synth_chunks(args["trials"], n_conditions=20), args["out"],
                 partition_by=["condition"], **kw)
out["seconds"] = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
out["peak_rss_mb"] = me.ru_maxrss / 1024
out["children_peak_rss_mb"] = kids.ru_maxrss / 1024
out["cpu_seconds"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
print(json.dumps(out, default=str))
"""


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and its descendants (0 once it is gone)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(kind: str, *, max_gb: float = 12.0, **args: object) -> dict:
    """Run one measurement in a fresh process; its JSON record (``error`` on failure).

    The machine is shared: a measurement whose process tree exceeds ``max_gb`` resident is
    killed (and recorded as such) rather than pushing everyone into swapless OOM.
    """
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, kind, json.dumps(args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    res: dict[str, str] = {}
    reader = threading.Thread(target=lambda: res.update(
        zip(("out", "err"), p.communicate(), strict=True)))
    reader.start()
    killed = None
    while reader.is_alive():
        reader.join(0.5)
        if reader.is_alive() and tree_rss(p.pid) > max_gb * GB:
            killed = f"killed: process tree above {max_gb:g} GB resident"
            os.killpg(p.pid, signal.SIGKILL)
    reader.join()
    wall = time.perf_counter() - t
    if p.returncode != 0 or killed:
        tail = killed or (res.get("err", "").strip().splitlines() or ["?"])[-1]
        print(f"  {kind} FAILED: {tail}", flush=True)
        return {"error": tail[:300], "wall_seconds": wall}
    rec = json.loads(res["out"].strip().splitlines()[-1])
    rec["wall_seconds"] = wall
    rec["cores_used"] = rec["cpu_seconds"] / rec["seconds"] if rec["seconds"] else math.nan
    brief = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in rec.items()
             if k != "rows"}
    print(f"  {kind} {args.get('engine', '')}: {brief}", flush=True)
    return rec


def dataset(n: int) -> tuple[Path, dict]:
    path = DATA / f"plain_{n}"
    t = time.perf_counter()
    rec = make_data.ensure(path, n)
    print(f"dataset {path.name}: {n:.1e} trials, {rec['bytes'] / 1e9:.2f} GB "
          f"(ready in {time.perf_counter() - t:.0f} s)", flush=True)
    return path, rec


def files(path: Path, first: int | None = None) -> list[str]:
    return [str(f) for f in sorted(path.glob("*.parquet"))[:first]]


def counts_exact(rows: list[dict], record: dict) -> bool:
    """Per-condition counts of an evaluation equal the generator's; the pooled row their sum."""
    by = {r["condition"]: (r["n_tar"], r["n_non"]) for r in rows}
    want = {c: (v["n_tar"], v["n_non"]) for c, v in record["counts"].items()}
    want["all"] = (sum(v[0] for v in want.values()), sum(v[1] for v in want.values()))
    return by == want


def close(a: object, b: object, rel: float = 1e-12) -> bool:
    """Equal numbers (to ``rel``), recursively through lists and dicts."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rel,
                                                                  abs_tol=1e-300)
    return a == b


def strip(r: dict) -> dict:
    return {k: v for k, v in r.items() if k != "rows"}


def part_a(scale: float, memory_limit: str | None) -> dict:
    out = {}
    for label, n in (("small", int(3e7 * scale)), ("large", int(1.5e8 * scale))):
        path, rec = dataset(n)
        floor = measure("floor", files=files(path))
        ev = measure("evaluate", path=str(path), engine="auto", memory_limit=memory_limit)
        out[label] = {"trials": n, "floor": floor, "evaluate": strip(ev),
                      "counts_exact": "rows" in ev and counts_exact(ev["rows"], rec),
                      "pooled_eer": next((r["eer"] for r in ev.get("rows", [])
                                          if r["condition"] == "all"), None)}
    return out


def part_b(scale: float, memory_limit: str | None) -> dict:
    n = int(1e9 * scale)
    path, rec = dataset(n)
    n_floor_files = max(1, int(0.3 * rec["files"]))
    floor = measure("floor", files=files(path, n_floor_files))
    floor_trials = min(n, n_floor_files * rec["file_trials"])
    ev = measure("evaluate", path=str(path), engine="auto", memory_limit=memory_limit)
    ref = measure("reference", files=files(path), condition="c00")
    same = None
    if "rows" in ev and "rows" in ref:
        mine = next(r for r in ev["rows"] if r["condition"] == "c00")
        same = close(mine, ref["rows"][0])
    return {"trials": n, "bytes": rec["bytes"], "generate_seconds": rec["seconds"],
            "floor": floor, "floor_trials": floor_trials, "evaluate": strip(ev),
            "reference": strip(ref),
            "counts_exact": "rows" in ev and counts_exact(ev["rows"], rec),
            "c00_equal_in_memory": same}


def part_c(scale: float, memory_limit: str | None) -> dict:
    n = int(1e8 * scale)
    path, rec = dataset(n)
    local = measure("evaluate", path=str(path), engine="auto", memory_limit=memory_limit)
    dask = measure("evaluate", path=str(path), engine="dask", workers=2,
                   memory_limit=memory_limit)
    same = ("rows" in local and "rows" in dask
            and close(local["rows"], dask["rows"], rel=0.0))
    return {"trials": n, "local": strip(local), "dask": strip(dask), "identical": same,
            "counts_exact": "rows" in dask and counts_exact(dask["rows"], rec)}


def part_d(scale: float, memory_limit: str | None) -> dict:
    n = int(1e8 * scale)
    out = DATA / "synth_scale"
    shutil.rmtree(out, ignore_errors=True)
    lib = measure("synth_lib", trials=n, out=str(out))
    size = sum(f.stat().st_size for f in out.rglob("*.parquet")) if out.exists() else 0
    shutil.rmtree(out, ignore_errors=True)
    cli = measure("synth", max_gb=8.0, argv=["synth", str(out), "--trials", str(n),
                                             "--conditions", "20", "--partition-by",
                                             "condition"])
    shutil.rmtree(out, ignore_errors=True)
    return {"trials": n, "systems": 3, "synth": cli, "synth_lib": lib, "bytes": size}


PARTS = {"a": part_a, "b": part_b, "c": part_c, "d": part_d}


def fmt_mem(r: dict) -> str:
    return f"{r['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in r else "n/a"


def fmt_t(r: dict) -> str:
    return f"{r['seconds']:.1f} s" if "seconds" in r else f"failed ({r.get('error', '?')})"


def verdict(ok: bool | None) -> str:
    return "met" if ok else ("not measured" if ok is None else "NOT met")


def report(state: dict) -> str:
    lines = ["## Scale: out of core, both cores, Dask (issue 11)", "",
             f"Machine: {state.get('machine', '?')}. Times vary from run to run (up to ~20 % on a "
             "quiet machine, more when it is shared: each part's floor is measured in the same "
             "run for that reason; the heading of each part gives when its run ended; a part's "
             "numbers, floor included, come from one run of `python benchmarks/bench_scale.py`), "
             "each measurement in a fresh process "
             "(peak = `ru_maxrss`; cores = CPU time / wall time). Floor = Polars reading the "
             "`score` column and sorting it in memory. Data: `benchmarks/make_data.py` (plain "
             "directory of Parquet files, `condition` an ordinary column with 20 values, 10 % "
             "targets, 5 % of scores rounded to 0.01).", ""]
    targets = []
    a = state.get("a")
    if a:
        lines += [f"### 1.5*10^8 trials by 20 conditions, pooled row included ({a.get('date')})",
                  "",
                  "| trials | floor | floor peak | evaluate | evaluate peak | cores | "
                  "evaluate / floor | counts exact |", "| ---: | ---: | ---: | ---: | ---: | "
                  "---: | ---: | --- |"]
        for key in ("small", "large"):
            r = a[key]
            f, e = r["floor"], r["evaluate"]
            ratio = e.get("seconds", math.nan) / f.get("seconds", math.nan)
            lines.append(f"| {r['trials']:.1e} | {fmt_t(f)} | {fmt_mem(f)} | {fmt_t(e)} | "
                         f"{fmt_mem(e)} | {e.get('cores_used', math.nan):.2f} | {ratio:.2f}x | "
                         f"{r['counts_exact']} |")
        big, small = a["large"]["evaluate"], a["small"]["evaluate"]
        ratio = big.get("seconds", math.nan) / a["large"]["floor"].get("seconds", math.nan)
        growth = big.get("peak_rss_mb", math.nan) / small.get("peak_rss_mb", math.nan)
        targets += [
            f"* 1.5*10^8 within 4x the floor: {ratio:.2f}x -> {verdict(ratio <= 4)}",
            f"* 1.5*10^8 peak <= 1.5 GB: {fmt_mem(big)} -> "
            f"{verdict(big.get('peak_rss_mb', math.inf) <= 1536)}",
            f"* peak at 1.5*10^8 <= 1.25x the peak at 3*10^7: {growth:.2f}x -> "
            f"{verdict(growth <= 1.25)}"]
        lines.append("")
    b = state.get("b")
    if b:
        e, f = b["evaluate"], b["floor"]
        scaled = f.get("seconds", math.nan) * b["trials"] / b["floor_trials"]
        lines += [f"### 10^9 trials by 20 conditions ({b.get('date')})", "",
                  f"Dataset: {b['bytes'] / 1e9:.1f} GB of Parquet, written in "
                  f"{b['generate_seconds']:.0f} s by `make_data.py`.", "",
                  f"* scoreframe (local engine, out of core): **{fmt_t(e)}**, peak "
                  f"**{fmt_mem(e)}**, {e.get('cores_used', math.nan):.2f} cores",
                  f"* floor at {b['floor_trials']:.1e} trials: {fmt_t(f)}, peak {fmt_mem(f)}; "
                  f"scaled linearly to {b['trials']:.0e}: {scaled:.0f} s (the floor itself "
                  f"does not fit: it would hold ~{16 * b['trials'] / 1e9:.0f} GB, the scores "
                  "and their sorted copy)",
                  f"* evaluate / scaled floor: {e.get('seconds', math.nan) / scaled:.2f}x",
                  f"* exact: per-condition and pooled counts equal the generator's: "
                  f"{b['counts_exact']}; condition c00 ({b['trials'] / 20:.0e} trials) equals "
                  f"the in-memory evaluation of the same trials (every metric to 1e-12): "
                  f"{b['c00_equal_in_memory']} (in-memory reference: "
                  f"{fmt_t(b['reference'])}, peak {fmt_mem(b['reference'])})", ""]
        exact = bool(b["counts_exact"] and b["c00_equal_in_memory"])
        ok = e.get("peak_rss_mb", math.inf) <= 4096 and exact
        targets.append(f"* 10^9 exact with peak <= 4 GB: {fmt_mem(e)}, exact {exact} -> "
                       f"{verdict(ok)}")
    c = state.get("c")
    if c:
        lo, da = c["local"], c["dask"]
        lines += [f"### Dask engine at {c['trials']:.0e} trials (2-worker LocalCluster, "
                  f"{c.get('date')})", "",
                  "| engine | time | client peak | largest worker peak | cores |",
                  "| --- | ---: | ---: | ---: | ---: |",
                  f"| local | {fmt_t(lo)} | {fmt_mem(lo)} | - | "
                  f"{lo.get('cores_used', math.nan):.2f} |",
                  f"| dask | {fmt_t(da)} | {fmt_mem(da)} | "
                  f"{da.get('children_peak_rss_mb', math.nan):.0f} MB | "
                  f"{da.get('cores_used', math.nan):.2f} |", "",
                  f"Results identical (every field equal): {c['identical']}; counts exact: "
                  f"{c['counts_exact']}. Dask includes starting and closing the cluster.", ""]
        targets.append(f"* Dask engine at 10^8 beside the local engine, identical: "
                       f"{fmt_t(da)} vs {fmt_t(lo)} -> {verdict(bool(c['identical']))}")
    d = state.get("d")
    if d:
        s, lib = d["synth"], d.get("synth_lib", {})
        lines += [f"### `scoreframe synth` ({d.get('date')})", "",
                  f"{d['trials']:.0e} trials x {d['systems']} systems "
                  f"({d['systems'] * d['trials']:.0e} rows, {d['bytes'] / 1e9:.1f} GB), 20 "
                  "conditions, partitioned by condition (before: 12 minutes):", "",
                  f"* `scoreframe synth OUT --trials {d['trials']:.0e} --conditions 20 "
                  f"--partition-by condition`: **{fmt_t(s)}**, peak {fmt_mem(s)}, "
                  f"{s.get('cores_used', math.nan):.2f} cores",
                  f"* `write_trials(synth_chunks(...), validate=False)` (the generator and the "
                  f"writer without the write-time validation): **{fmt_t(lib)}**, peak "
                  f"{fmt_mem(lib)}, {lib.get('cores_used', math.nan):.2f} cores", ""]
        if "error" in s:
            lines += ["The command writes through `write_trials`, which validates what it "
                      "writes; its final duplicate scan (a hash group-by over the "
                      "model/segment/system strings of every row written) grows with the data "
                      "(8.2 GB at 2*10^7 trials x 3 systems), so the command cannot finish "
                      "10^8 trials in this memory; the generator and the writer alone do.", ""]
        targets.append(f"* synth 10^8 under 3 minutes: command {fmt_t(s)} -> "
                       f"{verdict(s.get('seconds', math.inf) < 180)}; generator + writer "
                       f"{fmt_t(lib)} -> {verdict(lib.get('seconds', math.inf) < 180)}")
    lines += ["### Targets", "", *targets, ""]
    if state.get("quick"):
        lines.insert(2, "**Quick run (sizes / 100): not the targets' sizes.**\n")
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GB
    import numpy as np
    import polars as pl

    return (f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
            f"{mem:.0f} GiB RAM; Python {platform.python_version()}, numpy {np.__version__}, "
            f"polars {pl.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="a,b,c,d", help="comma-separated subset of a,b,c,d")
    ap.add_argument("--quick", action="store_true", help="sizes / 100 (smoke test)")
    ap.add_argument("--memory-limit", help="memory_limit= of evaluate (default: the engine's)")
    ap.add_argument("--report-only", action="store_true", help="rewrite RESULTS.md from "
                    "the kept measurements")
    ap.add_argument("--output", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--state", type=Path, help="where the measurements are kept (default "
                    "benchmarks/data/scale.json)")
    ap.add_argument("--merge", type=Path, nargs="*", default=[], help="further state files "
                    "whose parts go into the report (parts run by another process)")
    a = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    state_file = a.state or (STATE.with_name("scale_quick.json") if a.quick else STATE)
    if not a.report_only:
        scale = 0.01 if a.quick else 1.0
        for p in a.parts.split(","):
            print(f"part {p} ({time.strftime('%H:%M:%S')})", flush=True)
            result = PARTS[p](scale, a.memory_limit)
            result["date"] = time.strftime("%Y-%m-%d %H:%M")
            # re-read before writing: parts may run in two processes at once
            state = json.loads(state_file.read_text()) if state_file.exists() else {}
            state.update({"machine": machine(), "quick": a.quick, p: result})
            state_file.write_text(json.dumps(state, indent=1, default=str))
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    for other in a.merge:
        state.update({k: v for k, v in json.loads(other.read_text()).items() if k in PARTS})
    text = report(state)
    if not a.quick:
        write_section(a.output, "scale", text)
    print(text)


if __name__ == "__main__":
    main()
