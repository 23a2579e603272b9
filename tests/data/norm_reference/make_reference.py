"""Generate the WeSpeaker reference case of tests/test_norm_reference.py (see README.md).

Run in a separate venv with numpy, kaldiio, fire, tqdm and scikit-learn, with the WeSpeaker
sources (not installed) at WESPEAKER_SRC:

    WESPEAKER_SRC=/tmp/wespeaker-src python make_reference.py OUTDIR

The embeddings are random (fixed seed) with speaker structure; WeSpeaker's own functions
(`wespeaker/bin/score.py: trials_cosine_score`, `wespeaker/bin/score_norm.py: main`) score the
trials and normalize them. `wespeaker/__init__.py` imports the torch models, which these two
scripts do not use, so the package is registered without running it.
"""

import importlib.util
import os
import sys
import types
from pathlib import Path

import kaldiio
import numpy as np

src = Path(os.environ["WESPEAKER_SRC"])
pkg = types.ModuleType("wespeaker")
pkg.__path__ = [str(src / "wespeaker")]
sys.modules["wespeaker"] = pkg


def load(name):
    spec = importlib.util.spec_from_file_location(name, src / "wespeaker" / "bin" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(20261125)
dim, n_spk, per_spk, n_cohort = 32, 30, 4, 400
offset = rng.normal(size=dim) * 0.5  # a common offset: what the mean vector removes
spk = rng.normal(size=(n_spk, dim))
utts = [f"spk{s:02d}-utt{u}" for s in range(n_spk) for u in range(per_spk)]
emb = np.array([spk[s] + 0.8 * rng.normal(size=dim) + offset
                for s in range(n_spk) for _ in range(per_spk)], dtype=np.float32)
cohort_ids = [f"coh{i:03d}" for i in range(n_cohort)]
cohort = (rng.normal(size=(n_cohort, dim)) + offset).astype(np.float32)
mean_vec = cohort.mean(axis=0)
np.save(out / "mean_vec.npy", mean_vec)
with kaldiio.WriteHelper(f"ark,scp:{out}/eval.ark,{out}/eval.scp") as w:
    for u, e in zip(utts, emb, strict=True):
        w(u, e)
with kaldiio.WriteHelper(f"ark,scp:{out}/cohort.ark,{out}/cohort.scp") as w:
    for c, e in zip(cohort_ids, cohort, strict=True):
        w(c, e)
np.savez(out / "embeddings.npz", id=np.array(utts), vector=emb)
np.savez(out / "cohort.npz", id=np.array(cohort_ids), vector=cohort)
lines = []
for i in range(n_spk * per_spk):
    for j in rng.choice(n_spk * per_spk, size=3, replace=False):
        if i != j:
            lab = "target" if utts[i][:5] == utts[j][:5] else "nontarget"
            lines.append(f"{utts[i]} {utts[j]} {lab}\n")
    j = (i // per_spk) * per_spk + (i + 1) % per_spk  # one target trial per utterance
    lines.append(f"{utts[i]} {utts[j]} target\n")
(out / "trials").write_text("".join(lines))
load("score").trials_cosine_score(str(out / "eval.scp"), str(out), str(out / "mean_vec.npy"),
                                  [str(out / "trials")])
norm = load("score_norm")
for method, top_n in (("snorm", 0), ("asnorm", 100)):
    norm.main(method, top_n, str(out / "trials.score"), str(out / f"trials.{method}.score"),
              str(out / "cohort.scp"), str(out / "eval.scp"), str(out / "mean_vec.npy"))
for f in ("eval.ark", "eval.scp", "cohort.ark", "cohort.scp"):
    (out / f).unlink()
