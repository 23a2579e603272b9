"""Model files: a catalogue of malformed and absurd documents, each a one-line FormatError naming
the model file and the field; valid documents of every method load and apply identically."""

from __future__ import annotations

import copy
import json

import numpy as np
import polars as pl
import pytest
from conftest import assert_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoreframe.errors import FormatError
from scoreframe.estimators.calibration import LinearCalibration, PavCalibration
from scoreframe.estimators.fusion import LinearFusion
from scoreframe.estimators.models import load_model, save_model
from scoreframe.multiclass.calibration import MulticlassCalibration, MulticlassFusion

TAR, NON = [-3.0, 1, 2, 5, 7], [-7.0, -5, -2, -1, 3, 4]


def trials(shift: float = 0.0) -> pl.DataFrame:
    s = np.r_[TAR, NON] + shift
    return pl.DataFrame({"model": "m", "segment": [f"s{i}" for i in range(s.size)],
                         "score": s, "label": [True] * len(TAR) + [False] * len(NON)})


def multiclass() -> tuple[pl.DataFrame, pl.DataFrame]:
    w = [[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 2, 0], [1, 0, 0], [-1, 1, 1], [0, 0, 2],
         [-1, 0, 1], [1, 0, 0]]
    sc = pl.DataFrame({"segment": [f"t{i}" for i in range(9) for _ in range(3)],
                       "class": ["a", "b", "c"] * 9, "score": [float(x) for r in w for x in r]})
    tr = pl.DataFrame({"segment": [f"t{i}" for i in range(9)], "class": list("aaabbbccc")})
    return sc, tr


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    sc, tr = multiclass()
    sc2 = sc.with_columns(pl.col("score") * 0.5 + pl.col("score") ** 2 * 0.1)
    return {
        "linear": LinearCalibration(objective="brier").fit(trials()).to_dict(),
        "pav": PavCalibration().fit(trials()).to_dict(),
        "linear_fusion": LinearFusion().fit({"a": trials(), "b": trials(0.5).with_columns(
            pl.col("score") ** 2)}).to_dict(),
        "multiclass_affine": MulticlassCalibration().fit(sc, tr).to_dict(),
        "multiclass_fusion": MulticlassFusion().fit({"x": sc, "y": sc2}, tr).to_dict(),
    }


def test_every_method_round_trips(docs, tmp_path):
    sc, _ = multiclass()
    for method, doc in docs.items():
        model = load_model(doc)
        assert model.method == method and model.is_fitted
        path = save_model(model, tmp_path / f"{method}.json")
        assert json.loads(path.read_text()) == json.loads(json.dumps(doc))
        back = load_model(path)
        if method in ("linear", "pav"):
            assert_close(back([-4.0, 0.0, 6.0]), model([-4.0, 0.0, 6.0]), rtol=0, atol=0)
        elif method == "linear_fusion":
            data = {"a": trials(), "b": trials(0.5)}
            assert_close(back.transform(data).collect().sort("segment")["score"].to_numpy(),
                         model.transform(data).collect().sort("segment")["score"].to_numpy(),
                         rtol=0, atol=0)
        else:
            data = sc if method == "multiclass_affine" else {"x": sc, "y": sc}
            key = ["segment", "class"]
            assert_close(back.transform(data).collect().sort(key)["score"].to_numpy(),
                         model.transform(data).collect().sort(key)["score"].to_numpy(),
                         rtol=0, atol=0)


def _set(doc: dict, path: str, value: object) -> dict:
    doc = copy.deepcopy(doc)
    *keys, last = path.split(".")
    node = doc
    for k in keys:
        node = node[k]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return doc


DELETE = object()

# (method, field path, new value, words the message must contain)
CASES = [
    ("linear", "method", 5, ["`method`", "string"]),
    ("linear", "method", "svm", ["unknown model method", "'svm'"]),
    ("linear", "version", 2, ["version"]),
    ("linear", "scale", "big", ["`scale`"]),
    ("linear", "scale", None, ["`scale`"]),
    ("linear", "scale", DELETE, ["missing field `scale`"]),
    ("linear", "offset", True, ["`offset`"]),
    ("linear", "p_target", 1.0, ["`p_target`", "< 1"]),
    ("linear", "p_target", 0, ["`p_target`", "> 0"]),
    ("linear", "objective.alpha", 0, ["`objective.alpha`", "> 0"]),
    ("linear", "objective.alpha", -0.0, ["`objective.alpha`", "-0.0"]),
    ("linear", "objective.beta", -2, ["`objective.beta`"]),
    ("linear", "objective.beta", "2", ["`objective.beta`"]),
    ("linear", "objective", [1, 1], ["`objective`"]),
    ("linear", "system", 5, ["`system`"]),
    ("linear", "where", ["a"], ["`where`"]),
    ("linear", "training", "yes", ["`training`"]),
    ("pav", "variant", "sklearn", ["`variant`", "'bosaris'"]),
    ("pav", "eps", -1e-3, ["`eps`", ">= 0"]),
    ("pav", "knots_score", [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
     ["`knots_score` and `knots_llr` differ in length"]),
    ("pav", "knots_score", [0.0, 1.0, 2.0], ["even number"]),
    ("pav", "knots_score", [1.0, 0.0], ["`knots_score`"]),
    ("pav", "knots_llr", ["NaN", 1.0], ["`knots_llr.0`"]),
    ("pav", "knots_llr", [0.0, "inf"], ["`knots_llr.1`"]),
    ("pav", "knots_score", [0.0], ["`knots_score`", "at least 2"]),
    ("linear_fusion", "weights", {"a": 1.0}, ["`weights`", "at least 2"]),
    ("linear_fusion", "weights.a", None, ["`weights.a`"]),
    ("linear_fusion", "weights", {"": 1.0, "b": 2.0}, ["`weights`"]),
    ("linear_fusion", "missing", "zero", ["`missing`"]),
    ("linear_fusion", "quality", {"columns": ["snr"], "W": [[1.0, 2.0], [0.0, 1.0]]},
     ["`quality.W`", "symmetric"]),
    ("linear_fusion", "quality", {"columns": ["snr"], "W": [[1.0]]}, ["`quality.W`"]),
    ("linear_fusion", "quality", {"columns": ["snr", "snr"], "W": []}, ["`quality.columns`"]),
    ("multiclass_affine", "alpha", "1", ["`alpha`"]),
    ("multiclass_affine", "classes", ["a", "a", "c"], ["`classes`", "distinct"]),
    ("multiclass_affine", "classes", ["a"], ["`classes`", "at least 2"]),
    ("multiclass_affine", "beta", {"a": 0.0, "b": 0.0, "z": 0.0}, ["`beta`", "one value"]),
    ("multiclass_affine", "prior", [0.5, 0.5], ["`prior`", "3 class priors"]),
    ("multiclass_affine", "prior", [0.5, 0.4, 0.3], ["`prior`", "summing to 1"]),
    ("multiclass_affine", "prior", [1.5, -0.25, -0.25], ["`prior.0`"]),
    ("multiclass_fusion", "weights", {"x": 1.0}, ["`weights`", "at least 2"]),
]


@pytest.mark.parametrize(("method", "path", "value", "words"), CASES,
                         ids=[f"{m}-{p}-{i}" for i, (m, p, _, _) in enumerate(CASES)])
def test_bad_field_is_named_with_the_file(docs, tmp_path, method, path, value, words):
    file = tmp_path / "bad_model.json"
    file.write_text(json.dumps(_set(docs[method], path, value)))
    with pytest.raises(FormatError) as err:
        load_model(file)
    text = str(err.value)
    assert str(file) in text, text
    assert "\n" not in text, text
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize(("replace", "words"), [
    (('"scale": ', '"scale": 1e400, "x": '), ["`scale`", "finite"]),
    (('"scale": ', '"scale": -1e400, "x": '), ["`scale`", "finite"]),
    (('"offset": ', '"offset": 1' + "0" * 400 + ', "x": '), ["`offset`", "finite"]),
    (('"alpha": ', '"alpha": 1' + "0" * 400 + ', "x": '), ["`objective.alpha`"]),
    (('"scale": ', '"scale": NaN, "x": '), ["not valid JSON", "NaN"]),
    (('"offset": ', '"offset": -Infinity, "x": '), ["not valid JSON", "Infinity"]),
    (('"offset": ', '"offset": 1' + "0" * 5000 + ', "x": '), ["not valid JSON"]),
])
def test_absurd_numbers_in_the_text(docs, tmp_path, replace, words):
    file = tmp_path / "absurd.json"
    file.write_text(json.dumps(docs["linear"]).replace(*replace, 1))
    with pytest.raises(FormatError) as err:
        load_model(file)
    text = str(err.value)
    assert str(file) in text and "\n" not in text, text
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize(("content", "words"), [
    (b"{not json", ["not valid JSON"]),
    (b'["scoreframe-model"]', ["not a scoreframe model file"]),
    (b'{"format": "scoreframe-model", "version": 1}', ["missing field `method`"]),
    (b'{"method": "linear"}', ["not a scoreframe model file"]),
    (b"\xff\xfe\x00garbage", ["not UTF-8"]),
    (b"[" * 100000 + b"]" * 100000, ["not valid JSON"]),
])
def test_not_a_model_file(tmp_path, content, words):
    file = tmp_path / "m.json"
    file.write_bytes(content)
    with pytest.raises(FormatError) as err:
        load_model(file)
    text = str(err.value)
    assert str(file) in text and "\n" not in text, text
    for w in words:
        assert w in text, (w, text)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FormatError, match="not found"):
        load_model(tmp_path / "absent.json")
    with pytest.raises(FormatError, match="directory"):
        load_model(tmp_path)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**400, max_value=10**400)
    | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=8)


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for k, v in items:
        out += _paths(v, (*prefix, k))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_documents_load_or_raise_format_error(docs, data):
    """Any value anywhere in a valid document: it loads (and applies) or is a FormatError."""
    method = data.draw(st.sampled_from(sorted(docs)))
    doc = copy.deepcopy(docs[method])
    path = data.draw(st.sampled_from(_paths(doc)))
    node = doc
    for k in path[:-1]:
        node = node[k]
    if data.draw(st.booleans()):
        node[path[-1]] = data.draw(JSON)
    elif isinstance(node, dict):
        del node[path[-1]]
    try:
        model = load_model(doc)
    except FormatError as exc:
        assert "\n" not in str(exc)
        return
    if method in ("linear", "pav"):
        out = model(np.array([-2.0, 0.0, 3.0]))
        assert out.shape == (3,) and not np.isnan(out).any()
