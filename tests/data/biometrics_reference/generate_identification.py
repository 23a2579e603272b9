"""Identification reference values from bob.measure 6.1.1 and pyeer 0.5.6 (see README.md).

Run with the reference environment:
    /tmp/bio-ref/bin/python tests/data/biometrics_reference/generate_identification.py
Writes identification.json: candidate rows (probe, candidate, score, mate) and, per case,
bob.measure's cmc / recognition_rate / far_threshold / detection_identification_rate /
false_alarm_rate and pyeer's get_cmc_curve (via load_scores_from_file).
"""

import json
import tempfile
from importlib.metadata import version
from pathlib import Path

import bob.measure as bm
import numpy as np
from pyeer.cmc_stats import get_cmc_curve, load_scores_from_file

RANKS = 6


def cases():
    rng = np.random.default_rng(19795)
    for i in range(8):
        n_probe, n_gal = int(rng.integers(5, 40)), int(rng.integers(4, 12))
        step = [0.5, 0.25, 0.0, 1.0][i % 4]
        rows = []
        for p in range(n_probe):
            mate_at = int(rng.integers(0, n_gal)) if (i < 4 or rng.random() < 0.7) else -1
            for g in range(n_gal):
                s = rng.normal(1.5 if g == mate_at else 0.0, 1.0)
                if step:
                    s = float(np.round(s / step) * step)
                rows.append((f"p{p:03d}", f"g{g:03d}", float(s), g == mate_at))
        yield f"ident_{i}", rows


def bob_values(rows, closed):
    probes = sorted({r[0] for r in rows})
    cmc_scores = []
    for p in probes:
        neg = np.array([r[2] for r in rows if r[0] == p and not r[3]])
        pos = [r[2] for r in rows if r[0] == p and r[3]]
        cmc_scores.append((neg, np.array(pos) if pos else None))
    out = {"recognition_rate": [float(bm.recognition_rate(cmc_scores, rank=k))
                                for k in range(1, RANKS + 1)]}
    if closed:
        out["cmc"] = [float(x) for x in bm.cmc(cmc_scores)[:RANKS]]
    else:
        best = np.array([c[0].max() for c in cmc_scores if c[1] is None])
        out["open"] = []
        for f in (0.1, 0.2, 0.5):
            t = float(bm.far_threshold(best, [], f))
            out["open"].append({"fpir_target": f, "threshold": t, "rate": {
                str(r): float(bm.detection_identification_rate(cmc_scores, t, rank=r))
                for r in (1, 3)}, "false_alarm_rate": float(bm.false_alarm_rate(cmc_scores, t))})
    return out


def pyeer_values(rows):
    with tempfile.TemporaryDirectory() as d:
        sf, tf = Path(d) / "scores.txt", Path(d) / "true.txt"
        sf.write_text("".join(f"{p} {c} {s!r}\n" for p, c, s, _ in rows))
        tf.write_text("".join(f"{p} {c}\n" for p, c, _, m in rows if m))
        scores = load_scores_from_file(str(sf), str(tf))
        return [float(x) for x in get_cmc_curve(scores, RANKS)]


def main():
    out = []
    for name, rows in cases():
        closed = all(any(r[3] for r in rows if r[0] == p) for p in {r[0] for r in rows})
        rec = {"name": name, "closed": closed,
               "rows": [list(r) for r in rows], "bob": bob_values(rows, closed)}
        if closed:
            rec["pyeer"] = pyeer_values(rows)
        out.append(rec)
    meta = {"bob.measure": version("bob.measure"), "pyeer": version("pyeer"), "ranks": RANKS}
    path = Path(__file__).with_name("identification.json")
    path.write_text(json.dumps({"meta": meta, "cases": out}) + "\n")
    print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
    main()
