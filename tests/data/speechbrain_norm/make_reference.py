"""Make the SpeechBrain score-normalization reference (see README.md in this directory).

Runs SpeechBrain's own ``get_verification_scores`` from its VoxCeleb recipe
(``recipes/VoxCeleb/SpeakerRec/speaker_verification_cosine.py``, loaded unmodified from a
source checkout) on embeddings drawn here, once per normalization setting, and writes the
data and the scores it returns. Run with the SpeechBrain venv, not scoreframe's::

    SPEECHBRAIN_RECIPE=/path/to/speaker_verification_cosine.py \
        /tmp/norm2-ref/bin/python make_reference.py tests/data/speechbrain_norm
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

SEED = 20261125
DIM = 16
N_ENROLL, N_TEST, N_COHORT, N_TRIALS = 12, 15, 300, 80
#: (output name, the recipe's hyperparameters: score_norm and, if given, cohort_size)
SETTINGS = [
    ("raw", {}),
    ("znorm", {"score_norm": "z-norm"}),
    ("tnorm", {"score_norm": "t-norm"}),
    ("snorm", {"score_norm": "s-norm"}),
    ("znorm50", {"score_norm": "z-norm", "cohort_size": 50}),
    ("tnorm50", {"score_norm": "t-norm", "cohort_size": 50}),
    ("snorm50", {"score_norm": "s-norm", "cohort_size": 50}),
    ("snorm300", {"score_norm": "s-norm", "cohort_size": 300}),
]


def main(out: Path) -> None:
    spec = importlib.util.spec_from_file_location("sb_recipe", os.environ["SPEECHBRAIN_RECIPE"])
    assert spec is not None and spec.loader is not None
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)  # the `__main__` block does not run
    rng = np.random.default_rng(SEED)
    offset = rng.normal(size=DIM)  # a common direction: cohort scores not centred on 0
    enroll = (rng.normal(size=(N_ENROLL, DIM)) + 0.5 * offset).astype(np.float32)
    test = (rng.normal(size=(N_TEST, DIM)) + 0.5 * offset).astype(np.float32)
    cohort = (rng.normal(size=(N_COHORT, DIM)) + 0.5 * offset).astype(np.float32)
    enroll_ids = [f"enr{i:02d}" for i in range(N_ENROLL)]
    test_ids = [f"tst{i:02d}" for i in range(N_TEST)]
    cohort_ids = [f"coh{i:03d}" for i in range(N_COHORT)]
    pairs = rng.choice(N_ENROLL * N_TEST, size=N_TRIALS, replace=False)
    labels = rng.random(N_TRIALS) < 0.3
    trials = [(int(lab), enroll_ids[p // N_TEST], test_ids[p % N_TEST])
              for lab, p in zip(labels, pairs, strict=True)]
    # the recipe's layout: one (1, dim) tensor per utterance id
    def as_dict(ids: list[str], vecs: np.ndarray) -> dict[str, torch.Tensor]:
        return {i: torch.from_numpy(v[None, :]) for i, v in zip(ids, vecs, strict=True)}

    recipe.enrol_dict = as_dict(enroll_ids, enroll)
    recipe.test_dict = as_dict(test_ids, test)
    recipe.train_dict = as_dict(cohort_ids, cohort)
    veri_test = [f"{lab} {e}.wav {t}.wav" for lab, e, t in trials]
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "enroll.npz", id=np.array(enroll_ids), vector=enroll)
    np.savez(out / "test.npz", id=np.array(test_ids), vector=test)
    np.savez(out / "cohort.npz", id=np.array(cohort_ids), vector=cohort)
    columns: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, hp in SETTINGS:
            recipe.params = {"output_folder": tmp, **hp}
            pos, neg = recipe.get_verification_scores(veri_test)
            pos_it, neg_it = iter(pos), iter(neg)  # each list in trial order: interleave back
            scores = [float(next(pos_it) if lab else next(neg_it)) for lab, _, _ in trials]
            columns[name] = scores
    with open(out / "scores.csv", "w", encoding="utf-8") as f:
        f.write(",".join(["model", "segment", "label", *columns]) + "\n")
        for i, (lab, e, t) in enumerate(trials):
            vals = [repr(np.float32(columns[n][i]).item()) for n in columns]
            f.write(",".join([e, t, str(lab), *vals]) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
