"""The public API: its size, one meaning per name, and the typing rules of the package."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import scoreframe as sf

ROOT = Path(__file__).resolve().parent.parent


def test_top_level_api_is_small() -> None:
    assert len(sf.__all__) <= 60
    assert len(set(sf.__all__)) == len(sf.__all__)
    assert all(hasattr(sf, n) for n in sf.__all__)


def _frame(seed: int) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(2.0, 1.0, 300), rng.normal(0.0, 1.0, 900)
    df = pl.DataFrame({"score": np.concatenate([tar, non]),
                       "label": np.r_[np.ones(300, bool), np.zeros(900, bool)],
                       "system": "s"})
    return df, tar, non


@pytest.mark.parametrize("p_target", [0.01, 0.2, 0.5, 0.9])
def test_min_dcf_and_act_dcf_mean_the_same_in_scalar_and_frame_apis(p_target: float) -> None:
    # one meaning per name: `min_dcf` is the raw cost in the column and in the scalar function
    # (BOSARIS fast_minDCF), `_norm` / normalize=True is the cost divided by min(p, 1 - p)
    df, tar, non = _frame(7)
    ops = sf.OperatingPoints(p_target)
    row = sf.explode_dcf(sf.evaluate(df, operating_points=ops)).row(0, named=True)
    raw_min, raw_act = sf.min_dcf(tar, non, p_target=p_target), sf.act_dcf(
        tar, non, p_target=p_target)
    assert row["min_dcf"] == pytest.approx(raw_min, rel=1e-12)
    assert row["act_dcf"] == pytest.approx(raw_act, rel=1e-12)
    norm = min(p_target, 1 - p_target)
    assert row["min_dcf_norm"] == pytest.approx(
        sf.min_dcf(tar, non, p_target=p_target, normalize=True), rel=1e-12)
    assert row["act_dcf_norm"] == pytest.approx(
        sf.act_dcf(tar, non, p_target=p_target, normalize=True), rel=1e-12)
    # and the two differ by the default system's cost, so the test can tell them apart
    assert sf.min_dcf(tar, non, p_target=p_target, normalize=True) == pytest.approx(
        raw_min / norm, rel=1e-12)
    assert raw_min < raw_min / norm


def test_scalar_min_dcf_is_the_direct_threshold_scan() -> None:
    # a brute-force twin: min over every threshold of p * Pmiss + (1 - p) * Pfa (raw)
    _, tar, non = _frame(3)
    p = 0.1
    thr = np.concatenate([[-np.inf], np.sort(np.concatenate([tar, non])), [np.inf]])
    pmiss = (tar[None, :] < thr[:, None]).mean(axis=1)
    pfa = (non[None, :] >= thr[:, None]).mean(axis=1)
    assert sf.min_dcf(tar, non, p_target=p) == pytest.approx(
        float(np.min(p * pmiss + (1 - p) * pfa)), rel=1e-12)


_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")


def test_every_type_ignore_names_its_code_and_a_reason() -> None:
    bad = []
    for path in sorted((ROOT / "scoreframe").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            m = _IGNORE.search(line)
            if m and not re.fullmatch(r"\[[a-z-]+(,[a-z-]+)*\]  # \S.*", m["rest"]):
                bad.append(f"{path.relative_to(ROOT)}:{i}")
    assert bad == [], "`# type: ignore[code]  # reason` expected"


def test_mypy_runs_strict() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    assert re.search(r"^strict = true$", section, re.M)
    assert "python -m mypy" in (ROOT / "Makefile").read_text()


def _public_callables() -> list[tuple[str, object]]:
    """Every callable of every package's ``__all__``, and their public methods.

    Plus :mod:`scoreframe.views.report`, the report's home (the ``views`` package re-exports
    nothing).
    """
    import importlib
    import inspect
    import pkgutil

    modules = [sf, importlib.import_module("scoreframe.views.report")]
    modules += [importlib.import_module(m.name) for m in
                pkgutil.walk_packages(sf.__path__, "scoreframe.") if m.ispkg]
    out, seen = [], set()
    for module in modules:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            found = [(f"{module.__name__}.{name}", obj)] if callable(obj) else []
            if inspect.isclass(obj):
                found += [(f"{module.__name__}.{name}.{k}", getattr(obj, k))
                          for k, v in vars(obj).items() if not k.startswith("_")
                          and (inspect.isfunction(v) or isinstance(v, classmethod | staticmethod))]
            for label, f in found:
                if id(f) not in seen:
                    seen.add(id(f))
                    out.append((label, f))
    return out


def test_every_public_callable_has_at_most_ten_keyword_only_parameters() -> None:
    # issue 25 item 3: options as objects, <=10 keywords on every entry point; nothing exempt
    import inspect

    callables = _public_callables()
    names = {label.rsplit(".", 1)[-1] for label, _ in callables}
    assert {"evaluate", "compare", "build_report", "det_plot", "Tandem"} <= names  # walked
    over = {}
    for label, f in callables:
        try:
            params = inspect.signature(f).parameters.values()  # type: ignore[arg-type]
        except (TypeError, ValueError):  # a builtin without a signature
            continue
        n = sum(p.kind == p.KEYWORD_ONLY for p in params)
        if n > 10:
            over[label] = n
    assert over == {}, over


def test_the_keyword_count_sees_an_eleventh_keyword() -> None:
    # the check above can fail: a function with 11 keyword-only parameters is counted as 11
    import inspect

    ns: dict[str, object] = {}
    exec("def f(x, *, " + ", ".join(f"k{i}=0" for i in range(11)) + "): pass", ns)
    params = inspect.signature(ns["f"]).parameters.values()  # type: ignore[arg-type]
    assert sum(p.kind == p.KEYWORD_ONLY for p in params) == 11
