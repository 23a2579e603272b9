"""The report's biometrics section: FNMR against FMR on log axes, FNMR at FMR, EPC, CMC, more.

Views layer. :func:`scoreframe.views.report.build_report` with a
:class:`~scoreframe.Biometric` in ``metrics=`` (CLI ``scoreframe report DS --biometric ...``)
adds a section for biometric evaluators (ISO/IEC 19795-1 vocabulary, ``docs/biometrics.md``):

* an FNMR against FMR chart with both rates on log axes (the DET as NIST FRTE draws it), from
  the report's own DET frame (no extra pass);
* a table of FNMR at each FMR target (TAR = 1 - FNMR), FMR at each FNMR target, ZeroFMR,
  ZeroFNMR, min HTER and the exact AUC per group, from the verification statistics the
  report's reduction computes; with the report's ``bootstrap``, ``[lo, hi]`` from the
  replicates of those statistics (one more pass when the report's reduction carries none);
* the EPC when development trials are named (``dev``: thresholds chosen there, errors on the
  others; two passes, development then evaluation);
* the CMC, FNIR against FPIR and an identification table when identification data (candidate
  rows or a score matrix) are given (one streaming pass over them);
* demographic differentials when demographic columns are given (per-group FMR and FNMR at
  one global threshold with their two-way bootstrap intervals when the report has
  ``bootstrap``), the chart on a log axis.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from scoreframe.errors import ScoreframeError
from scoreframe.metrics._options import Biometric
from scoreframe.stats.summary import VerificationRequest

if TYPE_CHECKING:
    from altair import TopLevelMixin as _AltairChart
else:  # Altair is imported only where a chart is built through it
    _AltairChart = Any

__all__ = ["BiometricSection", "biometric_section", "section_html"]

SECTION = "biometrics"


@dataclass
class BiometricSection:
    """The frames of the biometrics section (every chart and table is drawn from these)."""

    targets: pl.DataFrame  # group columns, kind, target, rate, lo/hi, reached, threshold
    scalars: pl.DataFrame  # group columns, zero_fmr, zero_fnmr, min_hter, auc_mw (+ lo/hi)
    det: pl.DataFrame  # steppy FNMR/FMR points per group
    epc: pl.DataFrame | None = None
    cmc: pl.DataFrame | None = None
    fnir_fpir: pl.DataFrame | None = None
    identification: pl.DataFrame | None = None
    differentials: Any = None  # scoreframe.results._differentials.Differentials
    notes: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """The section's tables, for notebooks (its charts display with ``.charts()``)."""
        return section_html(self)

    def charts(self, *, series: Sequence[str] | None = None, styles: Any = None
               ) -> list[tuple[str, str, _AltairChart]]:
        """``(section, name, chart)`` of the section, in reading order."""
        from scoreframe.views.plots._biometric import (
            cmc_plot,
            differentials_plot,
            epc_plot,
            fmr_fnmr_plot,
            fnir_fpir_plot,
        )

        out: list[tuple[str, str, _AltairChart]] = []
        if self.det.height:
            out.append((SECTION, "fnmr_fmr_log", fmr_fnmr_plot(
                self.det, points=self.targets.filter(pl.col("kind") == "fnmr_at_fmr"),
                series=series, styles=styles)))
        if self.epc is not None and self.epc.height:
            gcols = [c for c in self.epc.columns if c in (series or [])]
            out.append((SECTION, "epc", epc_plot(self.epc, series=gcols or None,
                                                 styles=styles)))
        if self.cmc is not None and self.cmc.height:
            out.append((SECTION, "cmc", cmc_plot(self.cmc)))
        if self.fnir_fpir is not None and self.fnir_fpir.height:
            out.append((SECTION, "fnir_fpir", fnir_fpir_plot(self.fnir_fpir)))
        if self.differentials is not None:
            out.append((SECTION, "differentials", differentials_plot(
                self.differentials.groups)))
        return out


def _targets_frame(stats: Any, request: VerificationRequest, intervals: Any
                   ) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """The per-target rows and the group-level values, from the report's statistics."""
    from scoreframe.metrics import _biometric as bio
    from scoreframe.metrics._biometric_intervals import interval_bounds, target_intervals

    keys = list(stats.row_cols)
    values = bio.verification_values(stats.units, request)
    rows: list[dict[str, Any]] = []
    scal: list[dict[str, Any]] = []
    names = ("zero_fmr", "zero_fnmr", "min_hter", "auc_mw")
    for us, v in zip(stats.units, values, strict=True):
        key = {k: us.unit.key[k] for k in keys}
        with_iv = bool(v) and intervals is not None and bool(us.stats.replicates)
        if with_iv:
            v = target_intervals(us.stats, request, v, intervals,
                                 values_of=bio.from_statistics)
        srow: dict[str, Any] = {**key, "n_tar": us.stats.n_tar, "n_non": us.stats.n_non}
        for n in names:
            srow[n] = v.get(n) if v else None
            srow[f"{n}_lo"] = srow[f"{n}_hi"] = None
        if with_iv:
            import numpy as np

            reps = []
            for st in us.stats.replicates:
                if not (st.n_tar and st.n_non) or st.verification is None:
                    reps.append([math.nan] * len(names))
                    continue
                w = bio.from_statistics(st.verification, st.blocks, st.n_tar, st.n_non,
                                        VerificationRequest())
                reps.append([float(w[n]) for n in names])
            est = np.array([float(srow[n]) for n in names])
            lo, hi = interval_bounds(np.array(reps), est, us.stats, intervals)
            for j, n in enumerate(names):
                srow[f"{n}_lo"] = None if math.isnan(lo[j]) else float(lo[j])
                srow[f"{n}_hi"] = None if math.isnan(hi[j]) else float(hi[j])
        scal.append(srow)
        for kind, target, rate, reached in (("fnmr_at_fmr", "fmr_target", "fnmr", "fmr"),
                                            ("fmr_at_fnmr", "fnmr_target", "fmr", "fnmr")):
            for r in (v.get(kind) or []) if v else []:
                rows.append({**key, "kind": kind, "target": r[target], "rate": r[rate],
                             "rate_lo": r.get(f"{rate}_lo"), "rate_hi": r.get(f"{rate}_hi"),
                             "reached": r[reached], "threshold": r["threshold"]})
    schema: dict[str, Any] = {k: pl.String for k in keys} | {
        "kind": pl.String, "target": pl.Float64, "rate": pl.Float64, "rate_lo": pl.Float64,
        "rate_hi": pl.Float64, "reached": pl.Float64, "threshold": pl.Float64}
    s_schema: dict[str, Any] = {k: pl.String for k in keys} | {"n_tar": pl.Int64,
                                                               "n_non": pl.Int64}
    for n in names:
        s_schema |= {n: pl.Float64, f"{n}_lo": pl.Float64, f"{n}_hi": pl.Float64}
    return pl.DataFrame(rows, schema=schema), pl.DataFrame(scal, schema=s_schema), keys


def biometric_section(source: Any, stats: Any, det: pl.DataFrame, *,
                      options: Biometric, by: Sequence[str] | str | None = None,
                      where: str | None = None, intervals: Any = None) -> BiometricSection:
    """Gather the section's frames (see the module docstring).

    ``stats`` is the report's reduction (with ``options.request()`` verification statistics);
    ``det`` its DET frame; ``intervals`` the report's
    :class:`~scoreframe.metrics.IntervalOptions` (or ``None``).
    """
    if intervals is not None and not any(us.stats.replicates for us in stats.units):
        # the report's reduction carries no replicates: one pass for the section's intervals
        from scoreframe.results.evaluate import group_statistics

        stats, _ = group_statistics(source, by=by, where=where, validate=False,
                                    verification=options.request(), intervals=intervals)
    targets, scalars, keys = _targets_frame(stats, options.request(), intervals)
    steppy = det.filter(pl.col("curve") == det["curve"][0]) if det.height and \
        "curve" in det.columns else det
    if det.height and "curve" in det.columns:
        kinds = det["curve"].unique().to_list()
        name = next((k for k in kinds if "rocch" not in str(k).lower()), kinds[0])
        steppy = det.filter(pl.col("curve") == name)
    sec = BiometricSection(targets, scalars, steppy)
    if options.threshold_from is not None:
        from scoreframe.results._epc import epc_curve

        sec.epc = epc_curve(source, dev=options.threshold_from, eval=options.epc_eval, by=by)
        sec.notes.append(f"EPC: thresholds chosen on {options.threshold_from}, errors on "
                         f"{options.epc_eval or 'the other trials'}")
    if options.identification is not None:
        from scoreframe.identification import cmc_curve, fnir_fpir_curve, identify

        ident = options.identification
        sec.cmc = cmc_curve(ident, max_rank=options.max_rank, tie=options.tie)
        rank: tuple[int, ...] = options.rank  # type: ignore[assignment]  # a tuple after __post_init__
        fpir: tuple[float, ...] = options.fpir  # type: ignore[assignment]  # a tuple after __post_init__
        sec.identification = identify(ident, rank=rank, fpir=fpir or None, tie=options.tie)
        try:
            sec.fnir_fpir = fnir_fpir_curve(ident, rank=rank[0], tie=options.tie)
        except ScoreframeError as exc:  # closed-set data: no non-mated searches
            sec.notes.append(f"no FNIR/FPIR curve: {str(exc).splitlines()[0]}")
    if options.demographics:
        from scoreframe.results._differentials import differentials

        iv = intervals
        if iv is not None and iv.resample == ("trial",):  # subjects, not trials
            from dataclasses import replace

            iv = replace(iv, resample=("model", "segment"))
        sec.differentials = differentials(source, by=list(options.demographics),
                                          fmr=options.differentials_target,
                                          pair_with=list(options.pair_with) or None,
                                          where=where, intervals=iv)
        sec.notes.append(f"differentials at the global threshold "
                         f"{sec.differentials.threshold:.6g} (global FMR "
                         f"{options.differentials_target:g})")
    return sec


def _fmt(v: object, scale: float = 1.0, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{scale * v:.{digits}f}"
    return html.escape(str(v))


def _with_ci(v: object, lo: object, hi: object, scale: float = 100.0, digits: int = 2) -> str:
    text = _fmt(v, scale, digits)
    if v is not None and lo is not None and hi is not None:
        text += f" <span class='ci'>[{_fmt(lo, scale, digits)}, {_fmt(hi, scale, digits)}]</span>"
    return text


def _table(head: list[str], rows: list[list[str]]) -> str:
    thead = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='summary'><thead><tr>{thead}</tr></thead><tbody>{body}</tbody></table>"


def section_html(sec: BiometricSection | None) -> str:
    """The section's tables (its charts are rendered with the report's other charts)."""
    if sec is None:
        return ""
    keys = [c for c in sec.scalars.columns if c not in ("n_tar", "n_non")
            and not c.startswith(("zero_", "min_hter", "auc_mw"))]
    parts = ["<h2>Biometric verification (ISO/IEC 19795-1)</h2>",
             "<p class='meta'>Genuine = target, impostor = non-target; accept score &ge; "
             "threshold; rates in %, TAR = 100 - FNMR. Exact convention.</p>"]
    head = [*keys, "genuine", "impostor", "ZeroFMR (%)", "ZeroFNMR (%)", "min HTER (%)", "AUC"]
    rows = []
    for r in sec.scalars.iter_rows(named=True):
        rows.append([*(f"<b>{_fmt(r[k])}</b>" for k in keys), str(r["n_tar"]), str(r["n_non"]),
                     _with_ci(r["zero_fmr"], r["zero_fmr_lo"], r["zero_fmr_hi"]),
                     _with_ci(r["zero_fnmr"], r["zero_fnmr_lo"], r["zero_fnmr_hi"]),
                     _with_ci(r["min_hter"], r["min_hter_lo"], r["min_hter_hi"]),
                     _with_ci(r["auc_mw"], r["auc_mw_lo"], r["auc_mw_hi"], 1.0, 4)])
    parts.append(_table(head, rows))
    for kind, title, tname, rname, other in (
            ("fnmr_at_fmr", "FNMR at FMR targets", "FMR target", "FNMR (%)", "FMR reached (%)"),
            ("fmr_at_fnmr", "FMR at FNMR targets", "FNMR target", "FMR (%)",
             "FNMR reached (%)")):
        t = sec.targets.filter(pl.col("kind") == kind)
        if not t.height:
            continue
        head = [*keys, tname, rname, *(["TAR (%)"] if kind == "fnmr_at_fmr" else []), other,
                "threshold"]
        rows = []
        for r in t.iter_rows(named=True):
            tar = [] if kind != "fnmr_at_fmr" else [
                "–" if r["rate"] is None else _fmt(1.0 - r["rate"], 100.0)]
            rows.append([*(f"<b>{_fmt(r[k])}</b>" for k in keys), f"{r['target']:g}",
                         _with_ci(r["rate"], r["rate_lo"], r["rate_hi"])
                         if r["rate"] is not None else "cannot be resolved", *tar,
                         _fmt(r["reached"], 100.0), _fmt(r["threshold"], 1.0, 4)])
        parts.append(f"<h3>{title}</h3>" + _table(head, rows))
    if sec.identification is not None and sec.identification.height:
        ident = sec.identification
        cols = [c for c in ident.columns if ident.schema[c] != pl.List]
        parts.append("<h3>Identification (1:N)</h3>" + _table(
            cols, [[_fmt(r[c], 1.0, 4) for c in cols] for r in ident.select(cols)
                   .iter_rows(named=True)]))
    d = sec.differentials
    if d is not None:
        g = d.groups
        gk = [c for c in g.columns if c not in ("kind", "n_trials", "errors", "rate", "rate_lo",
                                                "rate_hi", "reason")]
        rows = [[*(_fmt(r[c]) for c in gk), r["kind"], str(r["n_trials"]), str(r["errors"]),
                 _with_ci(r["rate"], r.get("rate_lo"), r.get("rate_hi")),
                 html.escape(r["reason"] or "")] for r in g.iter_rows(named=True)]
        parts.append(f"<h3>Demographic differentials at threshold {d.threshold:.6g}</h3>"
                     + _table([*gk, "kind", "trials", "errors", "rate (%)", "reason"], rows))
        srows = [[r["measure"], _with_ci(r["value"], r.get("value_lo"), r.get("value_hi"),
                                         1.0, 4), html.escape(r["reason"] or "")]
                 for r in d.summary.iter_rows(named=True)]
        parts.append(_table(["measure", "value", "reason"], srows))
    if sec.notes:
        parts.append("<ul class='meta'>" + "".join(f"<li>{html.escape(n)}</li>"
                                                   for n in sec.notes) + "</ul>")
    return "".join(parts)
