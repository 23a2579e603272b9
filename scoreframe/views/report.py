"""One self-contained, offline HTML report: summary table per group plus DET, NBER and APE charts.

Views layer. The numbers come from one :func:`scoreframe.results.evaluate.evaluate` pass: its
``on_group`` hook hands every group's sorted scores to the curve-frame builders of
:mod:`scoreframe.results.curves`, so a partitioned dataset is reduced once, partition by partition.
The
charts are :mod:`scoreframe.views.plots`; Vega, Vega-Lite and vega-embed are inlined from
vl-convert's
bundle, so the file opens without network access. The charts across groups (DET, NBER, APE,
Tippett, ECE) and every group's DET, NBER and histogram go into the page as the Vega-Lite
dicts those charts' ``to_dict()`` gives, written directly
(:mod:`scoreframe.views._summary_specs`, :mod:`scoreframe.views._group_specs`: no Altair
objects, the data of all groups prepared at once), so writing a report imports Altair only
for the other sections' charts; :meth:`Report.charts` still builds them all as Altair charts.
"""

from __future__ import annotations

import html
import json
import math
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from scoreframe.errors import ScoreframeError, message
from scoreframe.frames.lazy import Data, as_lazy
from scoreframe.io.atomic import atomic_output, check_outputs
from scoreframe.metrics import Intervals, interval_metrics
from scoreframe.metrics._options import (
    DEFAULT_OPERATING_POINTS,
    MetricsLike,
    OperatingPointsLike,
    as_operating_points,
    metric_options,
)
from scoreframe.metrics.registry import GroupStats, declared, table_metrics
from scoreframe.results import curves as cv
from scoreframe.results.evaluate import (
    attach_intervals,
    explode_dcf,
    family_extras,
    group_columns,
    group_statistics,
    results_frame,
    validation,
)
from scoreframe.stats.engine import EngineLike
from scoreframe.stats.summary import ScoreHistogram
from scoreframe.views import _summary_specs as summary_specs
from scoreframe.views._group_specs import group_specs
from scoreframe.views._report_biometric import section_html as biometric_html
from scoreframe.views._vega import SeriesStyle, javascript_bundle, series_labels, series_scale

if TYPE_CHECKING:
    from altair import TopLevelMixin as _AltairChart
else:  # Altair is imported only where a chart is built through it
    _AltairChart = Any

__all__ = ["Progress", "Report", "build_report", "render_html", "summary_html", "write_report"]

#: ``(section, name, chart)``: an Altair chart, or the Vega-Lite dict its ``to_dict()`` gives.
_ChartItem = tuple[str, str, "_AltairChart | dict[str, Any]"]
#: ``progress(done, total)``: called as groups are evaluated and as charts render.
Progress = Callable[[int, int], None]

NBER_GRID = (-10.0, 0.0, 251)
#: The score histograms' statistic (counts per bucket, at most 2,048 buckets over the scores).
HISTOGRAM = ScoreHistogram()
APE_GRID = (-10.0, 10.0, 201)


@dataclass
class Report:
    """Everything a report shows: the summary frame, curve frames and the charts built on them.

    ``title`` (the page's heading; :func:`write_report` can set it) and ``rel_width`` (the
    relative minDCF interval width the trial-count guidance aims at, see
    :func:`scoreframe.trials_needed`) are the output options; the rest comes from
    :func:`build_report`.
    """

    summary: pl.DataFrame
    p_target: list[float]
    det: pl.DataFrame
    points: pl.DataFrame
    nber: pl.DataFrame
    ape: pl.DataFrame
    histograms: pl.DataFrame
    title: str = "scoreframe report"
    rel_width: float = 0.2
    calibration: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    intervals: pl.DataFrame | None = None  # bootstrap_evaluate frame (when bootstrap > 0)
    tippett: pl.DataFrame | None = None  # per group (forensic)
    ece: pl.DataFrame | None = None
    t_dcf: pl.DataFrame | None = None  # t-DCF over CM thresholds (tandem)
    comparison: pl.DataFrame | None = None  # scoreframe.compare frame (two systems)
    biometric: Any = None  # views._report_biometric.BiometricSection (biometric=...)
    _charts: list[tuple[str, str, _AltairChart]] | None = field(default=None, repr=False)
    _items: list[_ChartItem] | None = field(
        default=None, repr=False)

    @property
    def guidance(self) -> pl.DataFrame | None:
        """How many more trials would narrow each minDCF interval under ``rel_width``."""
        if self.intervals is None:
            return None
        from scoreframe.results.bootstrap import trials_needed

        return trials_needed(self.intervals, rel_width=self.rel_width)

    @property
    def group_cols(self) -> list[str]:
        """The grouping columns of the summary (system first)."""
        return group_columns(self.summary)

    @property
    def summary_ci(self) -> str:
        """The nominal coverage of the intervals, as text (``"95 %"``)."""
        if self.intervals is None or "ci" not in self.intervals.columns:
            return "95 %" if self.intervals is not None else ""
        return f"{100 * float(self.intervals['ci'][0]):g} %"

    @property
    def styles(self) -> dict[str, SeriesStyle]:
        """One colour and dash per group label (summary order), shared by every chart."""
        gcols = self.group_cols
        if not gcols:
            return series_scale(["scores"])
        labels = series_labels(self.summary.select(gcols), gcols)["series"]
        return series_scale(labels.to_list())

    def charts(self) -> list[tuple[str, str, _AltairChart]]:
        """``(section, name, chart)`` for every chart: across groups first, then per group."""
        if self._charts is None:
            with _unvalidated():
                self._charts = [(s, n, c) for s, n, c in self._build_charts(fast=False)
                                if not isinstance(c, dict)]
        return self._charts

    def _chart_items(self) -> list[_ChartItem]:
        """The charts as :meth:`charts` lists them, the per-group ones as Vega-Lite dicts.

        The dicts are what ``to_dict()`` of those charts gives, built without Altair objects
        (:mod:`scoreframe.views._summary_specs`, :func:`scoreframe.views._group_specs.group_specs`);
        the HTML needs no more.
        """
        if self._charts is not None:
            return list(self._charts)
        if self._items is None:
            self._items = self._build_charts(fast=True)
        return self._items

    def _build_charts(self, *, fast: bool) -> list[_ChartItem]:
        """The charts; with ``fast``, as Vega-Lite dicts wherever they can be written directly.

        Altair (:mod:`scoreframe.views.plots`) is imported only for a chart that needs it:
        with ``fast``, the sections other than the summary, forensic and per-group charts.
        """
        st = self.styles
        gcols = self.group_cols or None
        series = gcols or []
        scored = self.summary.filter(pl.col("cllr").is_not_null())

        def made(section: str, name: str, spec: Callable[[], dict[str, Any] | None],
                 chart: Callable[[Any], _AltairChart]) -> _ChartItem:
            """The chart's dict when ``fast`` and it can be written directly, else Altair's."""
            d = spec() if fast and gcols else None
            if d is not None:
                return section, name, d
            with _unvalidated() as plots:
                return section, name, chart(plots)

        out: list[_ChartItem] = [
            made("all groups", "det",
                 lambda: summary_specs.det_spec(self.det, self.points, series=series, styles=st,
                                                title="DET (all groups)"),
                 lambda plots: plots.det_plot(self.det, points=self.points, series=gcols,
                                              styles=st, title="DET (all groups)")),
            made("all groups", "nber",
                 lambda: summary_specs.nber_spec(self.nber, series=series, styles=st,
                                                 p_target=self.p_target,
                                                 title="Normalized Bayes error rate"),
                 lambda plots: plots.nber_plot(self.nber, p_target=self.p_target, series=gcols,
                                               styles=st, title="Normalized Bayes error rate")),
            made("all groups", "ape",
                 lambda: summary_specs.ape_spec(self.ape, scored, series=series, styles=st,
                                                title="APE (all groups)"),
                 lambda plots: plots.ape_plot(self.ape, scored, series=gcols, styles=st,
                                              title="APE (all groups)")),
        ]
        if self.calibration is not None:
            with _unvalidated() as plots:
                out.append(("all groups", "calibration",
                            plots.calibration_plot(self.calibration, title="Calibration map")))
        if self.intervals is not None:
            with _unvalidated() as plots:
                ci = self.summary_ci
                out += [
                    ("intervals", "det_intervals", plots.det_interval_plot(
                        self.det, self.intervals, series=gcols, styles=st,
                        title=f"DET with {ci} intervals at the minDCF points")),
                    ("intervals", "nber_intervals", plots.nber_interval_plot(
                        self.nber, self.intervals, series=gcols, styles=st,
                        title=f"NBER with {ci} intervals of act/min DCF"))]
        if self.comparison is not None:
            with _unvalidated() as plots:
                out.append(("intervals", "forest", plots.forest_plot(self.comparison)))
        if self.tippett is not None and self.tippett.height:
            tippett, ece = self.tippett, self.ece
            out.append(made(
                "forensic", "tippett",
                lambda: summary_specs.tippett_spec(tippett, series=series, styles=st),
                lambda plots: plots.tippett_plot(tippett, series=gcols, styles=st)))
            if ece is not None and ece.height:
                out.append(made(
                    "forensic", "ece", lambda: summary_specs.ece_spec(ece, series=series,
                                                                     styles=st),
                    lambda plots: plots.ece_plot(ece, series=gcols, styles=st)))
        if self.t_dcf is not None:
            with _unvalidated() as plots:
                out.append(("spoofing", "t_dcf", plots.t_dcf_plot(self.t_dcf)))
        if self.biometric is not None:
            with _unvalidated():
                out += self.biometric.charts(series=gcols, styles=st)
        keys = scored.select(gcols).rows() if gcols else []
        if not gcols or len(keys) < 2:
            with _unvalidated() as plots:
                out.append(("all groups", "histogram", plots.histogram_plot(self.histograms)))
            return out
        specs = group_specs(det=self.det, points=self.points, nber=self.nber,
                            histograms=self.histograms, keys=keys, gcols=gcols, styles=st,
                            p_target=self.p_target) if fast else None
        for key in keys:
            label = " / ".join(str(v) for v in key)
            slug = "_".join(str(v) for v in key)
            if specs is not None:  # the same dicts, without building Altair objects
                det, nber, hist = specs[key]
                out += [(label, f"det_{slug}", det), (label, f"nber_{slug}", nber),
                        (label, f"histogram_{slug}", hist)]
                continue
            cond = pl.all_horizontal([pl.col(c) == v for c, v in zip(gcols, key, strict=True)])
            with _unvalidated() as plots:
                out += [
                    (label, f"det_{slug}", plots.det_plot(
                        self.det.filter(cond), points=self.points.filter(cond), series=gcols,
                        styles=st, curve="both", title=f"DET: {label}")),
                    (label, f"nber_{slug}", plots.nber_plot(
                        self.nber.filter(cond), components=True, p_target=self.p_target,
                        series=gcols, styles=st, title=f"NBER: {label}")),
                    (label, f"histogram_{slug}", plots.histogram_plot(
                        self.histograms.filter(cond), title=f"Scores: {label}")),
                ]
        return out


@contextmanager
def _unvalidated() -> Iterator[Any]:
    """:mod:`scoreframe.views.plots` (importing Altair), its charts built without validation.

    Altair validates every schema object as it is built (a jsonschema pass per object, about
    a quarter of building a report's charts); the report's charts are made by the plotting
    functions, which the tests validate.
    """
    from altair.utils.schemapi import debug_mode  # noqa: PLC0415 - Altair, when needed

    from scoreframe.views import plots  # noqa: PLC0415 - Altair, when needed

    with debug_mode(False):
        yield plots

def build_report(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
                 metrics: MetricsLike = None,
                 operating_points: OperatingPointsLike = DEFAULT_OPERATING_POINTS,
                 intervals: Intervals | None = None, calibration: Any = None,
                 compare: Sequence[str] | None = None, engine: EngineLike = "auto",
                 validate: bool | Sequence[str] = True,
                 progress: Progress | None = None) -> Report:
    """Evaluate ``data`` per group and collect every frame the report draws (one reduction).

    This is the report's only data-gathering step; everything after it draws these frames
    (:func:`write_report`, :func:`render_html`). The options are those of
    :func:`scoreframe.evaluate`, with the same objects.

    Parameters
    ----------
    data
        Trials: a path (Parquet file, glob or hive dataset), a Polars, pandas or pyarrow frame.
    by, where
        Condition columns to group by, and an SQL predicate selecting trials first (as in
        :func:`scoreframe.evaluate`).
    metrics
        As in :func:`scoreframe.evaluate`: ``"spoof"`` (the anti-spoofing metrics; by
        default, when ``metrics`` is ``None``, on when the data have a ``trial_type``
        column), ``"forensic"`` (the forensic metrics with Tippett and ECE plots), a
        :class:`~scoreframe.Biometric` (the biometrics section: FNMR against FMR on log
        axes, FNMR at FMR, ZeroFMR, min HTER, AUC, and the EPC, identification and
        differentials parts when their fields are given), a :class:`~scoreframe.Binary`, and
        a :class:`~scoreframe.Tandem` (the t-DCF curve of its CM system in front of its ASV
        system).
    operating_points
        An :class:`~scoreframe.OperatingPoints` or target priors (``0.01``, ``[0.01, 0.1]``).
    intervals
        An :class:`~scoreframe.Intervals`: confidence intervals in the summary
        (``value [lo, hi]``), DET boxes and NBER error bars at the operating points, and the
        trial-count guidance of :func:`scoreframe.trials_needed` (at
        :attr:`Report.rel_width`).
    calibration
        A fitted (or loaded) calibration model: the scores are calibrated lazily before
        evaluation, and its map is drawn.
    compare
        ``(a, b)``: a forest plot of the paired-bootstrap differences ``b - a`` of two
        systems scored on the same trials (:func:`scoreframe.compare`). With ``intervals``
        the differences come from the replicates of the report's own reduction (one more
        read, of the two systems' trials side by side, for the McNemar counts); without,
        ``compare`` runs with 1000 trial-level replicates.
    engine
        Where the reductions run, as in :func:`scoreframe.evaluate`.
    validate
        Check for duplicated trials (``True``), by the given id columns (``["utt_id"]``), or
        not (``False``), as in :func:`scoreframe.evaluate`.
    progress
        ``progress(done, total)`` as groups are evaluated.

    Returns
    -------
    Report
        The frames; :func:`write_report` writes them as one offline HTML page.

    See Also
    --------
    write_report : Write the report (``title=`` there).
    scoreframe.evaluate : The summary table's numbers.

    Examples
    --------
    >>> import scoreframe as sf
    >>> df = sf.synth_chunks(2000, n_systems=1).__next__()
    >>> rep = build_report(df, operating_points=[0.01, 0.1], metrics=["forensic"])
    >>> rep.p_target, rep.summary.height, rep.tippett is not None
    ([0.01, 0.1], 1, True)
    """
    chosen = metric_options(metrics)
    ops_in = as_operating_points(operating_points)
    p_list = list(ops_in.p_target)
    forensic, biometric, tandem = chosen.forensic, chosen.biometric, chosen.tandem
    eer_method = chosen.binary.eer_method
    check, trial_id = validation(validate)
    lf = as_lazy(data, where=where)
    # a path is passed on as is (hive partition keys let evaluate scan by group)
    source: pl.LazyFrame | str | Path = data if isinstance(data, str | Path) else lf
    if not isinstance(data, str | Path):
        where = None
    cal_frame = None
    notes = []
    if calibration is not None:
        from scoreframe.estimators.calibration import calibration_map

        rng = lf.select(pl.col("score").min().alias("lo"), pl.col("score").max().alias("hi")
                        ).collect().row(0)
        cal_frame = calibration_map({f"{calibration.method} calibration": calibration},
                                    lo=float(rng[0]), hi=float(rng[1]))
        source, where = calibration.transform(lf), None
        notes.append(f"scores calibrated with a {calibration.method} model before evaluation")
    pieces: dict[str, list[pl.DataFrame]] = {k: [] for k in ("det", "points", "nber", "ape",
                                                              "hist", "tippett", "ece")}

    grids = cv.CurveGrids(len(p_list), nber=np.linspace(*NBER_GRID), ape=np.linspace(*APE_GRID))
    spoof = chosen.spoof or (metrics is None and "trial_type" in lf.collect_schema().names())
    fams = [f for f, on in (("spoof", spoof), ("forensic", forensic)) if on]
    opts = intervals
    if opts is not None:
        from scoreframe.results.bootstrap import AT_MIN
    curves = cv.ForensicCurves(len(grids.thresholds) + len(p_list)) if forensic else None
    stats, ops = group_statistics(  # the one reduction: every number the report shows
        source, by=by, where=where, p_target=p_list, c_miss=ops_in.c_miss, c_fa=ops_in.c_fa,
        thresholds=grids.thresholds if curves is None
        else np.concatenate((grids.thresholds, curves.thresholds)),
        det_resolution=0.03, validate=check, trial_id=trial_id, engine=engine,
        progress=progress, eer_method=eer_method,
        metrics=[*declared(family=["binary", *fams]), *(AT_MIN if opts else ())],
        statistics=(HISTOGRAM, *(() if curves is None else (curves.ece,))), intervals=opts,
        verification=None if biometric is None else biometric.request())

    def on_group(key: dict[str, object], g: GroupStats) -> None:
        pieces["det"].append(cv.det_points(key, g, resolution=0.03, points_per_segment=4))
        pieces["points"].append(cv.operating_points(key, g))
        pieces["nber"].append(cv.nber_points(key, g, grids))
        pieces["ape"].append(cv.ape_points(key, g, grids))
        pieces["hist"].append(cv.histogram_points(key, g, HISTOGRAM, bins=50))
        if curves is not None:
            pieces["tippett"].append(curves.tippett(key, g))
            pieces["ece"].append(curves.ece_curve(key, g))

    families, extras = family_extras(source, stats, where=where, spoof=spoof,
                                     forensic=forensic, eer_method=eer_method)
    summary = results_frame(stats, ops, eer_method=eer_method,
                            metrics=declared(family=["binary", *families]),
                            extras=extras, on_group=on_group)
    def cat(name: str) -> pl.DataFrame:
        return pl.concat(pieces[name], how="vertical_relaxed") if pieces[name] else \
            pl.DataFrame()

    extra: dict[str, Any] = {}
    if opts is not None:
        from scoreframe.results.bootstrap import bootstrap_metrics

        fam_iv = interval_metrics(declared(family=families)) if families else []
        iv_frame = results_frame(stats, ops, metrics=[*bootstrap_metrics(), *fam_iv],
                                 intervals=opts, n_replicates=True
                                 ).with_columns(ci=pl.lit(opts.ci))
        summary = attach_intervals(summary, iv_frame, eer=eer_method == "rocch")
        extra["intervals"] = iv_frame
        notes.append(f"{100 * opts.ci:g} % {opts.method} bootstrap intervals, "
                     f"{opts.bootstrap} replicates, resampling "
                     f"{', '.join(opts.resample)}, seed {opts.seed}")
    if biometric is not None:
        from scoreframe.views._report_biometric import biometric_section

        extra["biometric"] = biometric_section(
            source, stats, pl.concat(pieces["det"], how="vertical_relaxed") if pieces["det"]
            else pl.DataFrame(), options=biometric, by=by, where=where, intervals=opts)
    if compare and opts is not None:  # the paired bootstrap from the report's replicates
        from scoreframe.results.compare import compare_statistics, unique_trials

        extra["comparison"] = compare_statistics(
            source, stats, compare[0], compare[1], by=by, where=where, operating_points=ops,
            intervals=opts, families=families, engine=engine,
            unique_trials=unique_trials(source, validate))
    elif compare:  # the replicates of its own pass (2 systems), not of every system's units
        from scoreframe.results.bootstrap import DEFAULT_INTERVALS
        from scoreframe.results.compare import compare as compare_systems

        extra["comparison"] = compare_systems(
            source, compare[0], compare[1], by=by, where=where, operating_points=ops_in,
            intervals=DEFAULT_INTERVALS, engine=engine, validate=validate)
    if forensic:
        extra["tippett"], extra["ece"] = cat("tippett"), cat("ece")
    if tandem:
        from scoreframe.results.tandem import tandem_curve

        curve, n = tandem_curve(source, asv=tandem.asv, cm=tandem.cm, where=where,
                                unpaired=tandem.unpaired,  # type: ignore[arg-type]  # checked by Tandem
                                engine=engine, variant=tandem.variant)
        extra["t_dcf"] = curve
        best = curve.filter(pl.col("is_min")).row(0, named=True)
        notes.append(f"t-DCF ({tandem.variant}) of {tandem.cm} in front of {tandem.asv}: minimum "
                     f"{best['t_dcf']:.4f} at CM threshold {best['cm_threshold']:.4g} "
                     f"({n} trials)")

    return Report(summary=summary, p_target=p_list,
                  det=cat("det"), points=cat("points"), nber=cat("nber"), ape=cat("ape"),
                  histograms=cat("hist"), calibration=cal_frame, notes=notes, **extra)


def _fmt(v: object, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def _cell(row: dict[str, Any], name: str, scale: float, digits: int) -> str:
    """A value (times ``scale``) and its ``[lo, hi]`` interval when the row has one."""
    def show(v: object) -> str:
        return _fmt(None if v is None else scale * float(v), digits)  # type: ignore[arg-type]  # a numeric cell value (typed object)

    text = show(row.get(name))
    lo, hi = row.get(f"{name}_lo"), row.get(f"{name}_hi")
    if lo is not None and hi is not None and row.get(name) is not None:
        text += f" <span class='ci'>[{show(lo)}, {show(hi)}]</span>"
    return text


def summary_html(report: Report) -> str:
    """The summary table: one row per group, the declared table metrics, DCFs per prior.

    Columns come from the metric registry (display name and unit; rates in %), with
    ``[lo, hi]`` intervals when the report has them and rule-of-30 warnings.
    """
    flat = explode_dcf(report.summary)
    gcols = report.group_cols
    families = list({m.family for m in declared(family=None)})
    group_level, per_point = table_metrics(family=families)
    group_level = [m for m in group_level if m.name in flat.columns]
    per_point = [m for m in per_point if m.name in flat.columns]
    head = [*gcols, "n_tar", "n_non", *(m.header for m in group_level)]
    for p in report.p_target:
        head += [f"{m.display} @{p:g}" for m in per_point]
    rows = []
    for key_rows in flat.partition_by(gcols or ["n_tar"], maintain_order=True):
        first = key_rows.row(0, named=True)
        cells = [f"<td class='key'>{_fmt(first[c])}</td>" for c in gcols]
        cells += [f"<td>{first['n_tar']}</td>", f"<td>{first['n_non']}</td>"]
        cells += [f"<td>{_cell(first, m.name, m.scale, 2 if m.unit == '%' else 4)}</td>"
                  for m in group_level]
        by_p = {r["p_target"]: r for r in key_rows.iter_rows(named=True)}
        for p in report.p_target:
            r = by_p.get(p, {})
            warn = r.get("dr30_ok") is False
            for m in per_point:
                minimum = m.name == "min_dcf_norm"
                cls = " class='dr30'" if warn and minimum else ""
                mark = " <span class='warn' title='fewer than 30 errors (rule of 30)'>⚠</span>" \
                    if warn and minimum else ""
                cells.append(f"<td{cls}>{_cell(r, m.name, m.scale, 4)}{mark}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    thead = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table class='summary'><thead><tr>{thead}</tr></thead><tbody>{''.join(rows)}" \
           f"</tbody></table>"


def guidance_html(report: Report) -> str:
    """How many more trials would narrow each minDCF interval (empty without intervals)."""
    g = report.guidance
    if g is None or g.height == 0:
        return ""
    cols = [c for c in g.columns if c not in ("dcf",)]
    thead = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(r[c])}</td>" for c in cols) + "</tr>"
                   for r in g.select(cols).iter_rows(named=True))
    return ("<h2>How many trials are enough</h2><p class='meta'>Extra targets and "
            "non-targets that would bring each minDCF interval under the chosen relative "
            "width (width ~ 1/sqrt(errors)), and what the rule of 30 asks for.</p>"
            f"<table class='summary'><thead><tr>{thead}</tr></thead><tbody>{body}</tbody>"
            "</table>")


CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #111; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #999; }
table.summary { border-collapse: collapse; font-size: 13px; }
table.summary th, table.summary td { border: 1px solid #bbb; padding: 3px 7px; text-align: right; }
table.summary td.key { text-align: left; font-weight: bold; }
td.dr30 { background: #fde2c8; } span.warn { color: #b00; font-weight: bold; }
span.ci { color: #555; font-size: 11px; }
.chart { display: inline-block; vertical-align: top; margin: 8px 12px 8px 0; }
.meta { color: #555; font-size: 12px; }
"""


#: The decoder of :func:`pack_rows` in the page (plain JavaScript, no library).
_UNPACK_JS = """function unpack(p) {
  const rows = Array.from({length: p.n}, () => ({}));
  for (const [name, e] of Object.entries(p.c)) {
    let col = e;
    if (e.k) col = e.k.map(i => e.d[i]);
    else if (e.r) col = e.r.flatMap(([a, s, n]) => Array.from({length: n}, (_, i) => a + i * s));
    else if (e.z) { let t = 0; col = e.z.map(d => (t += d) / e.q); }
    for (let i = 0; i < p.n; i++) rows[i][name] = col[i];
  }
  return rows;
}
"""


def pack_rows(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Rows of one chart dataset as columns, compactly; None when the rows differ in keys.

    A column is a list of values; a dictionary (``{"d": distinct values, "k": codes}``) when
    that is shorter (series names, curve kinds); runs of arithmetic integer sequences
    (``{"r": [[start, step, length], ...]}``, row indices per series); or, for the display
    coordinates of linear axes (:data:`GRID_COLUMNS`), integer steps on a grid of 1/20,000 of
    the column's span (``{"q": scale, "z": first and differences}``: far below a pixel). Every
    other value is kept exactly as the chart gave it. The page rebuilds the rows
    (``_UNPACK_JS``).

    Examples
    --------
    >>> p = pack_rows([{"i": i % 4, "s": "a", "probit_pfa": 0.5 * i, "x": 0.1}
    ...                for i in range(8)])
    >>> p["c"]["i"], p["c"]["s"]["d"], p["c"]["probit_pfa"]["z"][:3], p["c"]["x"][0]
    ({'r': [[0, 1, 4], [0, 1, 4]]}, ['a'], [0, 5000, 5000], 0.1)
    """
    names = list(rows[0]) if rows else []
    if any(list(r) != names for r in rows):
        return None
    cols: dict[str, Any] = {}
    n = len(rows)
    for name in names:
        col = [r[name] for r in rows]
        if n > 1 and all(type(v) is int for v in col):
            runs = _int_runs(col)
            if 3 * len(runs) < n:
                cols[name] = {"r": runs}
                continue
        if name in GRID_COLUMNS and n > 1 and all(type(v) is float for v in col):
            cols[name] = _grid_steps(col)
            continue
        if all(isinstance(v, str | bool) or v is None for v in col):
            distinct = list(dict.fromkeys(col))
            if len(distinct) < n:
                index = {v: i for i, v in enumerate(distinct)}
                cols[name] = {"d": distinct, "k": [index[v] for v in col]}
                continue
        cols[name] = col
    return {"n": n, "c": cols}


#: Columns that only place marks on linear axes (probit-warped rates, prior log odds), so a
#: grid far finer than a pixel loses nothing that can be seen.
GRID_COLUMNS = frozenset({"probit_pfa", "probit_pmiss", "prior_log_odds"})
_GRID_STEPS = 20_000
_OFF_SCALE = 999.0  # |values| from here up are the plots' off-scale markers


def _int_runs(col: list[int]) -> list[list[int]]:
    """Maximal arithmetic runs ``[start, step, length]`` of an integer column."""
    runs: list[list[int]] = []
    i = 0
    while i < len(col):
        j = i + 1
        step = col[j] - col[i] if j < len(col) else 1
        while j < len(col) and col[j] - col[j - 1] == step:
            j += 1
        runs.append([col[i], step, j - i])
        i = j
    return runs


def _grid_steps(col: list[float]) -> dict[str, Any]:
    """A float column as integer steps on a decimal grid of about span / 20,000."""
    on_scale = [v for v in col if abs(v) < _OFF_SCALE]
    span = (max(on_scale) - min(on_scale)) if on_scale else 0.0
    decimals = max(0, math.ceil(math.log10(_GRID_STEPS / span))) if span > 0 else 0
    scale = 10**decimals
    q = [round(v * scale) for v in col]
    return {"q": scale, "z": [q[0], *(b - a for a, b in zip(q, q[1:], strict=False))]}


def _rows_key(rows: list[dict[str, Any]]) -> bytes:
    """A key of one dataset's rows: equal keys mean equal rows, value types included.

    The rows' pickle (only ever written, never loaded): a fraction of the cost of their
    JSON. ``1``, ``1.0`` and ``True`` (equal in Python, not in JSON) pickle apart. Equal rows
    built differently (another key order) may pickle apart too: they are then stored twice,
    which costs bytes, never a wrong chart.

    >>> _rows_key([{"a": 1, "b": 0.5}]) == _rows_key([{"a": 1, "b": 0.5}])
    True
    >>> _rows_key([{"a": 1}]) == _rows_key([{"a": 1.0}])
    False
    """
    return pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def share_data(specs: dict[str, dict[str, Any]]
               ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Move every chart's inline rows into one table of named datasets, each stored once.

    Identical datasets (the same curve in a summary chart and its group's chart, the same
    histogram twice) are stored once and referred to by name (Vega-Lite's top-level
    ``datasets``); each is packed by :func:`pack_rows`. Returns the specs and the datasets.
    """
    packed: dict[str, dict[str, Any]] = {}
    seen: dict[bytes, str] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        data = node.get("data")
        rows = (isinstance(data, dict) and isinstance(data.get("values"), list)
                and set(data) == {"values"} and all(isinstance(r, dict) for r in data["values"]))
        # inline rows are plain values: not walked (they were most of the nodes)
        out = {k: (v if rows and k == "data" else walk(v)) for k, v in node.items()}
        if rows:
            assert isinstance(data, dict)
            key = _rows_key(data["values"])
            name = seen.get(key)
            if name is None:
                p = pack_rows(data["values"])
                if p is None:
                    return out
                name = seen[key] = f"d{len(seen)}"
                packed[name] = p
            out["data"] = {"name": name}
        return out

    return {k: walk(v) for k, v in specs.items()}, packed


def render_html(report: Report, *, progress: Progress | None = None) -> str:
    """The report as one HTML string with the JavaScript libraries inlined (no network).

    ``progress(done, total)`` is called as each chart is built and serialized.
    """
    charts = report._chart_items()
    sections: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for i, (section, name, chart) in enumerate(charts):
        spec = chart if isinstance(chart, dict) else chart.to_dict(validate=False)
        sections.setdefault(section, []).append((name, spec))
        if progress is not None:
            progress(i + 1, len(charts))
    body: list[str] = []
    specs: dict[str, dict[str, Any]] = {}
    for section, items in sections.items():
        body.append(f"<h2>{html.escape(section)}</h2>")
        for name, spec in items:
            div = f"chart_{len(specs)}"
            specs[div] = spec
            body.append(f"<div class='chart' id='{div}' data-name='{html.escape(name)}'></div>")
    bundle = javascript_bundle()
    n_warn = int(explode_dcf(report.summary).filter(pl.col("dr30_ok").not_()).height)
    warn = (f"<p><span class='warn'>⚠</span> {n_warn} minDCF value(s) rest on fewer than 30 "
            "misses or false alarms (Doddington's rule of 30) and are not reliable.</p>"
            if n_warn else "")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    specs, packed = share_data(specs)
    spec_json = json.dumps(specs, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
    data_json = json.dumps(packed, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
    script = (
        f"const SPECS = {spec_json};\n"
        f"const PACKED = {data_json};\n"
        f"{_UNPACK_JS}"
        "const DATA = Object.fromEntries(Object.entries(PACKED).map(([k, p]) => [k, unpack(p)]));\n"
        "window.reportErrors = [];\n"
        "const jobs = Object.entries(SPECS).map(([id, spec]) =>\n"
        "  vegaEmbed('#' + id, Object.assign({datasets: DATA}, spec),\n"
        "            {renderer: 'svg', actions: false})\n"
        "    .catch(err => { window.reportErrors.push(String(err));"
        " console.error(err); }));\n"
        "Promise.all(jobs).then(() => {\n"
        "  document.body.dataset.errors = String(window.reportErrors.length);\n"
        "  document.body.dataset.rows = String(Object.values(DATA)"
        ".reduce((t, rows) => t + rows.length, 0));\n"
        "  document.body.dataset.rendered = 'true'; });\n")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(report.title)}</title>
<style>{CSS}</style>
<script>{bundle}</script>
</head><body>
<h1>{html.escape(report.title)}</h1>
<p class="meta">Generated by scoreframe on {time.strftime('%Y-%m-%d %H:%M')}.
EER = ROCCH-EER, in percent; DCF values are normalized by the default system; Cllr in bits;
operating points p_target =
{', '.join(f'{p:g}' for p in report.p_target)}.</p>
<ul class="meta">{notes}</ul>
<h2>Summary</h2>
{summary_html(report)}
{warn}
{guidance_html(report)}
{biometric_html(report.biometric)}
{''.join(body)}
<script>{script}</script>
</body></html>
"""


def write_report(report: Report, path: str | Path, *, title: str | None = None,
                 overwrite: bool = False, export_dir: str | Path | None = None,
                 export_formats: Sequence[str] = ("png",),
                 progress: Progress | None = None) -> Path:
    """Write the HTML report atomically; optionally every chart as PNG/SVG/PDF beside it.

    ``title`` replaces the report's :attr:`Report.title` (default ``"scoreframe report"``).
    ``progress(done, total)`` counts the charts rendered into the HTML and, with
    ``export_dir``, every exported file. Exported files replace earlier ones of the same name
    only with ``overwrite=True``. ``export_dir`` is created when it does not exist (its parent
    must, as for every output).
    """
    if title is not None:  # the caller's report is left as it is
        from dataclasses import replace

        report = replace(report, title=title)
    charts = report._chart_items()
    n_export = len(charts) * len(export_formats) if export_dir is not None else 0
    total = len(charts) + n_export
    targets = [Path(path)]
    if export_dir is not None:
        if Path(export_dir).exists() and not Path(export_dir).is_dir():
            raise ScoreframeError(message("the export directory is a file", path=export_dir,
                                          hint="Name a directory for the exported charts."))
        if Path(export_dir).is_dir():  # its files are the outputs
            targets += [Path(export_dir) / f"{name}.{fmt.lstrip('.')}"
                        for _, name, _ in charts for fmt in export_formats]
        else:  # a new directory: an output itself
            targets.append(Path(export_dir))
    check_outputs(targets, overwrite=overwrite)  # refused before any rendering work
    text = render_html(report, progress=None if progress is None else
                       lambda done, _: progress(done, total))
    with atomic_output(path, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")
    if export_dir is not None:
        out = Path(export_dir)
        out.mkdir(exist_ok=True)
        done = len(charts)
        from scoreframe.views.plots import save_chart  # noqa: PLC0415 - Altair, for exports

        for _, name, chart in report.charts():  # Altair charts (vl-convert renders them)
            for fmt in export_formats:
                save_chart(chart, out / f"{name}.{fmt.lstrip('.')}", overwrite=True)
                done += 1
                if progress is not None:
                    progress(done, total)
    return Path(path)
