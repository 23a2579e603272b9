"""The tandem t-DCF of a countermeasure (CM) system in front of an ASV system, from one table.

Results layer: the two systems' rows of a SASV trial table (``system``, ``model``, ``segment``,
``score``, ``trial_type``) are joined on ``(model, segment)``; the ASV scores are split by
``trial_type`` and the CM scores into bona fide (target + non-target) and spoof; the kernel is
:func:`scoreframe.metrics.spoof.t_dcf`.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import polars as pl

from scoreframe.checks import check_choice
from scoreframe.errors import AlignmentError, ScoreframeWarning, ValidationError, message
from scoreframe.frames.class_scores import trial_type_problem
from scoreframe.frames.lazy import Data, as_lazy
from scoreframe.stats import EngineLike, as_engine

__all__ = ["tandem_arrays", "tandem_t_dcf"]


Unpaired = Literal["error", "drop"]
UNPAIRED = ("error", "drop")


def tandem_t_dcf(data: Data, *, asv: str, cm: str, where: str | None = None,
                 variant: str = "2021", unpaired: Unpaired = "error",
                 engine: EngineLike = "auto", **costs: Any) -> dict[str, Any]:
    """Minimum normalized t-DCF of system ``cm`` in tandem with system ``asv``.

    Parameters
    ----------
    data
        A SASV trial table with ``system``, ``model``, ``segment``, ``score`` and
        ``trial_type`` (``target`` / ``nontarget`` / ``spoof``).
    asv, cm
        Names of the ASV and CM systems.
    unpaired
        Trials scored by only one of the two systems: ``"error"`` (default) raises
        :class:`~scoreframe.errors.AlignmentError` with their counts and examples;
        ``"drop"`` leaves them out with a :class:`~scoreframe.errors.ScoreframeWarning`
        saying how many were dropped.
    engine
        As in :func:`scoreframe.evaluate` (checked the same way). The two systems' scores are
        joined and held in this process whatever the engine (the selection is read with
        Polars' streaming engine unless ``"memory"``): the t-DCF is not yet a statistic that
        merges across score ranges.
    variant, costs
        Passed to :func:`scoreframe.metrics.spoof.t_dcf` (``"2021"`` or ``"2019"``, priors, costs).

    Returns
    -------
    dict
        The keys of :func:`scoreframe.metrics.spoof.t_dcf`, plus ``asv_system``, ``cm_system``,
        ``variant`` and ``n_trials`` (trials scored by both systems).

    See Also
    --------
    scoreframe.spoof : The anti-spoofing metrics.
    scoreframe.views.plots.t_dcf_plot : Its chart.

    Examples
    --------
    >>> import polars as pl
    >>> rows = [("asv", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(3.0, "target"), (2.5, "target"), (0.0, "nontarget"), (0.5, "nontarget"),
    ...      (2.0, "spoof"), (1.0, "spoof")])]
    >>> rows += [("cm", f"t{i}", s, c) for i, (s, c) in enumerate(
    ...     [(2.0, "target"), (1.5, "target"), (1.8, "nontarget"), (1.0, "nontarget"),
    ...      (-1.0, "spoof"), (0.2, "spoof")])]
    >>> df = pl.DataFrame(rows, schema=["system", "model", "score", "trial_type"], orient="row")
    >>> out = tandem_t_dcf(df.with_columns(segment=pl.col("model")), asv="asv", cm="cm")
    >>> out["n_trials"], out["variant"], 0.0 <= out["min_t_dcf"] <= 1.0
    (6, '2021', True)
    """
    from scoreframe.metrics.spoof import t_dcf

    arrays, n = tandem_arrays(data, asv=asv, cm=cm, where=where, unpaired=unpaired,
                              engine=engine)
    res = t_dcf(*arrays, variant=variant, **costs)  # type: ignore[arg-type]  # t_dcf checks variant (2021 | 2019)
    return {**res, "asv_system": asv, "cm_system": cm, "variant": variant, "n_trials": n}


def tandem_arrays(data: Data, *, asv: str, cm: str, where: str | None = None,
                  unpaired: Unpaired = "error", engine: EngineLike = "auto"
                  ) -> tuple[tuple[Any, Any, Any, Any, Any], int]:
    """``(asv_target, asv_nontarget, asv_spoof, cm_bonafide, cm_spoof)`` and the trial count.

    The two systems' rows are joined on ``(model, segment)``; errors name what is missing.
    Trials scored by one system only are an error (``unpaired="error"``) or dropped with a
    warning (``unpaired="drop"``), never dropped silently.
    """
    check_choice(unpaired, name="unpaired", choices=UNPAIRED)
    how: Literal["in-memory", "streaming"] = (
        "in-memory" if as_engine(engine).kind == "memory" else "streaming")
    lf = as_lazy(data, where=where)
    names = lf.collect_schema().names()
    need = ["system", "model", "segment", "score", "trial_type"]
    missing = [c for c in need if c not in names]
    if missing:
        raise ValidationError(message("the tandem t-DCF needs a SASV trial table",
                                      expected=", ".join(need),
                                      got=f"missing {', '.join(missing)}"))
    sel = lf.select("system", "model", "segment", pl.col("score").cast(pl.Float64),
                    pl.col("trial_type").cast(pl.String))
    a = sel.filter(pl.col("system") == asv).drop("system").collect(engine=how)
    c = sel.filter(pl.col("system") == cm).drop("system").collect(engine=how)
    for name, part in ((asv, a), (cm, c)):
        if part.height == 0:
            systems = sel.select("system").unique().collect()["system"].sort().to_list()
            raise ValidationError(message(f"no trials of system `{name}`",
                                          expected=" | ".join(map(str, systems)), got=name))
        problem = trial_type_problem(part["trial_type"])
        if problem:
            raise ValidationError(problem)
    only_a = a.join(c, on=["model", "segment"], how="anti")
    only_c = c.join(a, on=["model", "segment"], how="anti")
    if only_a.height or only_c.height:
        counts = (f"{only_a.height} of {a.height} ASV trial(s) have no `{cm}` score"
                  f"{_examples(only_a)} and {only_c.height} of {c.height} CM trial(s) have no "
                  f"`{asv}` score{_examples(only_c)}")
        if unpaired == "error":
            raise AlignmentError(message(
                f"systems `{asv}` (ASV) and `{cm}` (CM) do not score the same trials",
                expected="every trial scored by both systems", got=counts,
                hint="Score the missing trials, select the common ones (--where / where=), "
                     "or drop them explicitly (unpaired='drop'; CLI --tandem-unpaired drop)."))
        warnings.warn(f"tandem t-DCF: dropped {only_a.height} of {a.height} ASV trial(s) "
                      f"without a `{cm}` score and {only_c.height} of {c.height} CM trial(s) "
                      f"without an `{asv}` score", ScoreframeWarning, stacklevel=3)
    j = a.join(c, on=["model", "segment"], how="inner", suffix="_cm")
    if j.height == 0:
        raise AlignmentError(message("the ASV and CM systems share no trial",
                                     expected="rows with the same (model, segment)",
                                     got=f"{a.height} ASV and {c.height} CM rows"))
    if (j["trial_type"] != j["trial_type_cm"]).any():
        raise AlignmentError(message("ASV and CM rows disagree on `trial_type`",
                                     got=f"{int((j['trial_type'] != j['trial_type_cm']).sum())}"
                                         " trial(s)"))

    def scores(col: str, *types: str) -> Any:
        return j.filter(pl.col("trial_type").is_in(list(types)))[col].to_numpy()

    return (scores("score", "target"), scores("score", "nontarget"), scores("score", "spoof"),
            scores("score_cm", "target", "nontarget"), scores("score_cm", "spoof")), j.height


def _examples(part: pl.DataFrame, n: int = 3) -> str:
    """`` (e.g. m1/s1, m3/s3)`` for the first trials of ``part``; empty when it is empty."""
    if part.height == 0:
        return ""
    def short(v: object) -> str:
        t = str(v)
        return t if len(t) <= 40 else t[:39] + "\u2026"

    return " (e.g. " + ", ".join(f"{short(m)}/{short(s)}" for m, s in
                                 part.select("model", "segment").head(n).iter_rows()) + ")"
