"""Reference values from bob.measure 6.1.1 and pyeer 0.5.6 themselves (see README.md).

Run with the separate reference environment, never with scoreframe's:
    /tmp/bio-ref/bin/python tests/data/biometrics_reference/generate.py
Writes cases.json next to this file: the generated scores and each library's outputs.
"""

import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import bob.measure as bm
import numpy as np
from pyeer.eer_info import get_eer_stats
from pyeer.eer_stats import (
    calculate_roc,
    calculate_roc_auc,
    get_eer_values,
    get_fmr_op,
    get_fnmr_op,
)

TARGETS = [0.001, 0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9]


def cases():
    rng = np.random.default_rng(20261125)
    yield "example_ties", [0.5, 1.0, 1.0, 2.0, 3.0], [0.0, 0.5, 1.0, 1.0, 1.5, 2.5]
    yield "tied_min_genuine", [1.0, 1.0, 2.0], [0.0, 1.0, 1.0, 3.0]
    yield "all_tied", [1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]
    yield "separated", [2.0, 3.0], [0.0, 1.0]
    yield "inverted", [0.0, 1.0], [2.0, 3.0]
    yield "tie_spike", [0.3, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2],  \
        [0.0, 0.1, 0.2, 0.5, 0.5, 0.5, 0.95]
    for i in range(24):
        t = int(rng.integers(2, 60))
        n = int(rng.integers(2, 400))
        step = [0.0, 0.5, 0.25, 0.1][i % 4]
        tar = rng.normal(1.5, 1.0, t)
        non = rng.normal(0.0, 1.0, n)
        if step:
            tar, non = np.round(tar / step) * step, np.round(non / step) * step
        yield f"random_{i:02d}", tar.tolist(), non.tolist()


def bob_values(tar, non):
    out = {"far": [], "frr": []}
    for a in [0.0, *TARGETS]:
        thr = float(bm.far_threshold(non, tar, a))
        fa, fr = bm.farfrr(non, tar, thr)
        out["far"].append({"target": a, "threshold": thr, "fmr": float(fa), "fnmr": float(fr)})
        thr = float(bm.frr_threshold(non, tar, a))
        fa, fr = bm.farfrr(non, tar, thr)
        out["frr"].append({"target": a, "threshold": thr, "fmr": float(fa), "fnmr": float(fr)})
    e, fa, fr = bm.eer(non, tar, also_farfrr=True)
    out["eer"] = {"eer": float(e), "threshold": float(bm.eer_threshold(non, tar)),
                  "fmr": float(fa), "fnmr": float(fr)}
    thr = float(bm.min_hter_threshold(non, tar))
    fa, fr = bm.farfrr(non, tar, thr)
    out["min_hter"] = {"threshold": thr, "hter": (float(fa) + float(fr)) / 2}
    out["roc_auc_score"] = float(bm.roc_auc_score(non, tar))
    return out


def pyeer_values(tar, non):
    thr, fmr, fnmr = calculate_roc(tar, non)
    out = {"fmr_op": [], "fnmr_op": []}
    for a in [0.0, *TARGETS]:
        i, v = get_fmr_op(fmr, fnmr, a)
        out["fmr_op"].append({"target": a, "threshold": float(thr[i]), "fnmr": float(v),
                              "fmr": float(fmr[i])})
        i, v = get_fnmr_op(fmr, fnmr, a)
        out["fnmr_op"].append({"target": a, "threshold": float(thr[i]), "fmr": float(v),
                               "fnmr": float(fnmr[i])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, _, _, eer = get_eer_values(fmr, fnmr)
        auc = calculate_roc_auc(fmr, fnmr)
        st = get_eer_stats(list(tar), list(non))
    out["eer"] = float(eer)
    out["auc"] = float(auc)
    out["stats"] = {"eer": float(st.eer), "auc": float(st.auc), "fmr0": float(st.fmr0),
                    "fnmr0": float(st.fnmr0), "fmr100": float(st.fmr100),
                    "fmr1000": float(st.fmr1000)}
    return out


def main():
    rows = []
    for name, tar, non in cases():
        t = np.asarray(tar, dtype=np.float64)
        n = np.asarray(non, dtype=np.float64)
        rows.append({"name": name, "tar": t.tolist(), "non": n.tolist(),
                     "bob": bob_values(t, n), "pyeer": pyeer_values(t, n)})
    meta = {"bob.measure": version("bob.measure"), "pyeer": version("pyeer"),
            "numpy": np.__version__, "python": sys.version.split()[0], "targets": TARGETS}
    path = Path(__file__).with_name("cases.json")
    path.write_text(json.dumps({"meta": meta, "cases": rows}, indent=1) + "\n")
    print(f"wrote {len(rows)} cases to {path}")


if __name__ == "__main__":
    main()
