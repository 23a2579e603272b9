"""CPU utilisation of each phase of an out-of-core run (issue 22, target 7).

Run: ``python benchmarks/bench_phases.py [--trials 3e7] [--memory-limit 512MiB] [--data DIR]``.

``scoreframe.evaluate(path, by="condition", engine=Engine(kind="streaming", memory_limit=...))``
runs in a child process on a plain Parquet dataset (``benchmarks/make_data.py``; made once
under ``--data``). The parent samples the child's ``utime + stime`` from ``/proc/<pid>/stat``
every ``--interval`` seconds (the out-of-core engine runs its tasks on threads of that one
process, so this is all of its CPU) and attributes each sample interval to the phase marked
at the interval's midpoint. The phases are the engine's debug log records
(``scoreframe.stats.outofcore.LOG``: ``phase count``, ``plan``, ``partition``, ``duplicates``,
``reduce``, ``merge``, ``done``) plus the child's own ``import`` / ``setup`` and ``finish``
(the results frame after the engine returns). CPU% per phase = CPU seconds / wall seconds x 100:
200% = both cores of this machine busy. Written to the ``phases`` section of
``benchmarks/RESULTS.md`` (``--no-write``: print only). The machine's load average is recorded:
on a shared machine other jobs take cores too, so a phase can show less than 200% although it
has the work for two cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

from _results import write_section

HERE = Path(__file__).parent
TICK = os.sysconf("SC_CLK_TCK")

CHILD = r"""
import logging, sys, time
print("PHASE", time.time(), "import", flush=True, file=sys.stderr)
import scoreframe as sf
h = logging.StreamHandler(sys.stderr)
h.setFormatter(logging.Formatter("PHASE %(created).6f %(message)s"))
log = logging.getLogger("scoreframe.stats.outofcore")
log.addHandler(h)
log.setLevel(logging.DEBUG)
print("PHASE", time.time(), "phase setup", flush=True, file=sys.stderr)
res = sf.evaluate(sys.argv[1], by="condition",
                  engine=sf.Engine(kind="streaming", memory_limit=sys.argv[2]))
print("PHASE", time.time(), "phase end", flush=True, file=sys.stderr)
import resource
print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, res.height,
      flush=True, file=sys.stderr)
"""


def cpu_seconds(pid: int, stat: str | None = None) -> float | None:
    """utime + stime of a process (all its threads; or of ``stat``), None once it is gone."""
    try:
        fields = Path(stat or f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of stat(5)


def thread_seconds(pid: int) -> dict[int, float]:
    """utime + stime of each thread of a process (empty once it is gone)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return {}
    for tid in tids:
        c = cpu_seconds(pid, f"/proc/{pid}/task/{tid}/stat")
        if c is not None:
            out[int(tid)] = c
    return out


Phase = tuple[str, float, float, float]


def run_once(data: Path, memory_limit: str, interval: float) -> tuple[list[Phase], float, float]:
    """(phase, wall s, CPU s, parallelism) in order, the total wall seconds and the peak RSS.

    Parallelism: in each sample interval, the CPU seconds of all threads over those of the
    busiest thread (1.0 when one thread ran, 2.0 when two ran evenly), averaged over the
    phase's intervals weighted by their CPU seconds (independent of how many cores other
    jobs left to the run).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    t0 = time.time()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data), memory_limit],
                             stderr=subprocess.PIPE, text=True, env=env)
    marks: list[tuple[float, str]] = [(t0, "import")]
    peak = [0.0]

    def read() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            parts = line.split()
            if parts[:1] == ["PHASE"] and len(parts) >= 3:
                marks.append((float(parts[1]), parts[-1]))
            elif parts[:1] == ["PEAK"]:
                peak[0] = float(parts[1])
            else:
                sys.stderr.write(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    samples: list[tuple[float, float]] = []
    threads: list[dict[int, float]] = []
    while True:
        c = cpu_seconds(child.pid)
        if c is None or child.poll() is not None:
            break
        samples.append((time.time(), c))
        threads.append(thread_seconds(child.pid))
        time.sleep(interval)
    child.wait()
    reader.join()
    if child.returncode:
        raise SystemExit(f"the evaluation failed (exit {child.returncode})")
    marks.sort()
    names = [m[1] for m in marks]

    def phase_at(t: float) -> str:
        cur = names[0]
        for tm, name in marks:
            if tm <= t:
                cur = name
        return cur

    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    weighted: dict[str, float] = {}  # sum over intervals of CPU x concurrency
    for i, ((ta, ca), (tb, cb)) in enumerate(zip(samples, samples[1:], strict=False)):
        ph = phase_at((ta + tb) / 2)
        wall[ph] = wall.get(ph, 0.0) + tb - ta
        cpu[ph] = cpu.get(ph, 0.0) + cb - ca
        d = [c - threads[i].get(tid, 0.0) for tid, c in threads[i + 1].items()]
        if d and max(d) > 0:
            weighted[ph] = weighted.get(ph, 0.0) + sum(d) * (sum(d) / max(d))
    order = list(dict.fromkeys(n for n in names if n in wall))
    total = samples[-1][0] - samples[0][0] if len(samples) > 1 else 0.0

    def parallelism(n: str) -> float:
        return weighted.get(n, 0.0) / cpu[n] if cpu[n] > 0 else 0.0

    return [(n, wall[n], cpu[n], parallelism(n)) for n in order], total, peak[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=float, default=3e7)
    ap.add_argument("--memory-limit", default="512MiB")
    ap.add_argument("--data", type=Path, default=None,
                    help="Parquet dataset (made with make_data.py when missing)")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    n = int(a.trials)
    data = a.data or HERE / "data" / f"plain_{n:.0e}".replace("+", "")
    if not data.is_dir():
        subprocess.run([sys.executable, str(HERE / "make_data.py"), str(data), "--trials",
                        str(n)], check=True)
    files = len(list(data.glob("*.parquet")))
    runs = []
    for i in range(a.repeat):
        load0 = os.getloadavg()[0]
        phases, total, peak = run_once(data, a.memory_limit, a.interval)
        runs.append((phases, total, peak, load0, os.getloadavg()[0]))
        print(f"run {i + 1}: {total:.1f} s, peak {peak:.0f} MB, "
              + ", ".join(f"{p} {w:.1f} s {100 * c / max(w, 1e-9):.0f}% x{par:.2f}"
                          for p, w, c, par in phases),
              flush=True)
    # the median run by total wall time
    phases, total, peak, load0, load1 = sorted(runs, key=lambda r: r[1])[len(runs) // 2]
    rows = [f"| {p} | {w:.2f} | {c:.2f} | {100 * c / max(w, 1e-9):.0f}% | {par:.2f} |"
            for p, w, c, par in phases]
    all_cpu = sum(c for _, _, c, _ in phases)
    per_run = "; ".join(
        f"{r[1]:.1f} s wall, {sum(c for _, _, c, _ in r[0]):.1f} CPU-s, load "
        f"{r[3]:.1f}-{r[4]:.1f}" for r in runs)
    text = f"""## CPU per phase of an out-of-core run (`bench_phases.py`, issue 22 target 7)

`evaluate(path, by="condition", engine=Engine(kind="streaming", memory_limit="{a.memory_limit}"))`
on {n:.0e} trials x 20 conditions ({files} plain Parquet files from `make_data.py`), in a
child process; `/proc/<pid>/stat` utime+stime sampled every {a.interval} s and each sample
attributed to the phase marked at its midpoint (the engine's `phase` debug records). The
median of {a.repeat} runs by wall time ({total:.1f} s, {all_cpu:.1f} CPU-s, peak RSS
{peak:.0f} MB; load average {load0:.1f} before, {load1:.1f} after; {platform.machine()},
{os.cpu_count()} cores shared with other jobs). 200% = both cores. Parallelism: per
sample interval, the CPU seconds of all threads (`/proc/<pid>/task`) over the busiest
thread's, averaged over the phase weighted by CPU: 1.0 = one thread ran, 2.0 = two ran
evenly; unlike CPU % it does not depend on how much of the machine other jobs take.

| phase | wall (s) | CPU (s) | CPU % | parallelism |
| --- | ---: | ---: | ---: | ---: |
{chr(10).join(rows)}

All runs: {per_run}. Measured {time.strftime('%Y-%m-%d %H:%M')} UTC.
"""
    print(text)
    if not a.no_write:
        write_section(HERE / "RESULTS.md", "phases", text)


if __name__ == "__main__":
    main()
