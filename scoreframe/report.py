"""One self-contained, offline HTML report: summary table per group plus DET, NBER and APE charts.

Views layer. The numbers come from one :func:`scoreframe.evaluate.evaluate` pass: its
``on_group`` hook hands every group's sorted scores to the curve-frame builders of
:mod:`scoreframe.curves`, so a partitioned dataset is reduced once, partition by partition. The
charts are :mod:`scoreframe.plots`; Vega, Vega-Lite and vega-embed are inlined from vl-convert's
bundle, so the file opens without network access.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import polars as pl

from scoreframe import curves as cv
from scoreframe import plots
from scoreframe.evaluate import explode_dcf, group_columns, group_statistics, results_frame
from scoreframe.frames import Data, as_lazy
from scoreframe.io.atomic import atomic_output, check_outputs
from scoreframe.metrics.registry import GroupStats
from scoreframe.plots.save import javascript_bundle
from scoreframe.plots.style import SeriesStyle, series_labels, series_scale

__all__ = ["Progress", "Report", "build_report", "render_html", "summary_html", "write_report"]

#: ``progress(done, total)``: called as groups are evaluated and as charts render.
Progress = Callable[[int, int], None]

NBER_GRID = (-10.0, 0.0, 251)
APE_GRID = (-10.0, 10.0, 201)


@dataclass
class Report:
    """Everything a report shows: the summary frame, curve frames and the charts built on them."""

    title: str
    summary: pl.DataFrame
    p_target: list[float]
    det: pl.DataFrame
    points: pl.DataFrame
    nber: pl.DataFrame
    ape: pl.DataFrame
    histograms: pl.DataFrame
    calibration: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    _charts: list | None = field(default=None, repr=False)

    @property
    def group_cols(self) -> list[str]:
        """The grouping columns of the summary (system first)."""
        return group_columns(self.summary)

    @property
    def styles(self) -> dict[str, SeriesStyle]:
        """One colour and dash per group label (summary order), shared by every chart."""
        gcols = self.group_cols
        if not gcols:
            return series_scale(["scores"])
        labels = series_labels(self.summary.select(gcols), gcols)["series"]
        return series_scale(labels.to_list())

    def charts(self) -> list[tuple[str, str, alt.TopLevelMixin]]:
        """``(section, name, chart)`` for every chart: across groups first, then per group."""
        if self._charts is None:
            self._charts = self._build_charts()
        return self._charts

    def _build_charts(self) -> list[tuple[str, str, alt.TopLevelMixin]]:
        st = self.styles
        gcols = self.group_cols or None
        out: list[tuple[str, str, alt.TopLevelMixin]] = [
            ("all groups", "det", plots.det_plot(self.det, points=self.points, series=gcols,
                                                 styles=st, title="DET (all groups)")),
            ("all groups", "nber", plots.nber_plot(self.nber, p_target=self.p_target,
                                                   series=gcols, styles=st,
                                                   title="Normalized Bayes error rate")),
            ("all groups", "ape", plots.ape_plot(self.ape, self.summary.filter(
                pl.col("cllr").is_not_null()), series=gcols, styles=st,
                title="APE (all groups)")),
        ]
        if self.calibration is not None:
            out.append(("all groups", "calibration",
                        plots.calibration_plot(self.calibration, title="Calibration map")))
        if not gcols:
            out.append(("all groups", "histogram", plots.histogram_plot(self.histograms)))
            return out
        keys = self.summary.filter(pl.col("cllr").is_not_null()).select(gcols).rows()
        if len(keys) < 2:
            out.append(("all groups", "histogram", plots.histogram_plot(self.histograms)))
            return out
        for key in keys:
            cond = pl.all_horizontal([pl.col(c) == v for c, v in zip(gcols, key, strict=True)])
            label = " / ".join(str(v) for v in key)
            slug = "_".join(str(v) for v in key)
            out += [
                (label, f"det_{slug}", plots.det_plot(self.det.filter(cond),
                                                      points=self.points.filter(cond),
                                                      series=gcols, styles=st, curve="both",
                                                      title=f"DET: {label}")),
                (label, f"nber_{slug}", plots.nber_plot(self.nber.filter(cond), components=True,
                                                        p_target=self.p_target, series=gcols,
                                                        styles=st, title=f"NBER: {label}")),
                (label, f"histogram_{slug}", plots.histogram_plot(
                    self.histograms.filter(cond), title=f"Scores: {label}")),
            ]
        return out


def build_report(data: Data, *, by: Sequence[str] | str | None = None, where: str | None = None,
                 p_target: Sequence[float] | float = (0.01,), calibration: Any = None,
                 trial_id: Sequence[str] | str | None = None, title: str = "",
                 progress: Progress | None = None) -> Report:
    """Evaluate ``data`` per group and collect every frame the report draws (one reduction).

    This is the report's only data-gathering step; everything after it draws these frames.

    Parameters
    ----------
    data
        Trials: a path (Parquet file, glob or hive dataset), a Polars, pandas or pyarrow frame.
    calibration
        A fitted (or loaded) calibration model: the scores are calibrated lazily before
        evaluation, and its map is drawn.
    trial_id
        Columns that identify a trial when ``model, segment`` do not (as in ``evaluate``).
    progress
        ``progress(done, total)`` as groups are evaluated.
    """
    p_list = [float(p_target)] if isinstance(p_target, int | float) else [float(p) for p in
                                                                           p_target]
    lf = as_lazy(data, where=where)
    # a path is passed on as is (hive partition keys let evaluate scan by group)
    source: pl.LazyFrame | str | Path = data if isinstance(data, str | Path) else lf
    if not isinstance(data, str | Path):
        where = None
    cal_frame = None
    notes = []
    if calibration is not None:
        from scoreframe.calibration import calibration_map

        rng = lf.select(pl.col("score").min().alias("lo"), pl.col("score").max().alias("hi")
                        ).collect().row(0)
        cal_frame = calibration_map({f"{calibration.method} calibration": calibration},
                                    lo=float(rng[0]), hi=float(rng[1]))
        source, where = calibration.transform(lf), None
        notes.append(f"scores calibrated with a {calibration.method} model before evaluation")
    pieces: dict[str, list[pl.DataFrame]] = {k: [] for k in ("det", "points", "nber", "ape",
                                                              "hist")}

    grids = cv.CurveGrids(len(p_list), nber=np.linspace(*NBER_GRID), ape=np.linspace(*APE_GRID))
    stats, ops = group_statistics(source, by=by, where=where, p_target=p_list,
                                  thresholds=grids.thresholds, det_resolution=0.03,
                                  trial_id=trial_id, progress=progress)

    def on_group(key: dict[str, object], g: GroupStats) -> None:
        pieces["det"].append(cv.det_points(key, g, resolution=0.03, points_per_segment=4))
        pieces["points"].append(cv.operating_points(key, g))
        pieces["nber"].append(cv.nber_points(key, g, grids))
        pieces["ape"].append(cv.ape_points(key, g, grids))

    summary = results_frame(stats, ops, on_group=on_group)
    pieces["hist"].append(cv.histogram_frame(source, by=by, where=where, bins=50))

    def cat(name: str) -> pl.DataFrame:
        return pl.concat(pieces[name], how="vertical_relaxed") if pieces[name] else \
            pl.DataFrame()

    return Report(title=title or "scoreframe report", summary=summary, p_target=p_list,
                  det=cat("det"), points=cat("points"), nber=cat("nber"), ape=cat("ape"),
                  histograms=cat("hist"), calibration=cal_frame, notes=notes)


def _fmt(v: object, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def summary_html(report: Report) -> str:
    """The summary table: one row per group, act/min DCF per prior, rule-of-30 warnings."""
    flat = explode_dcf(report.summary)
    gcols = report.group_cols
    head = [*gcols, "n_tar", "n_non", "EER (%)", "Cllr", "minCllr", "cal. loss"]
    for p in report.p_target:
        head += [f"actDCF @{p:g}", f"minDCF @{p:g}"]
    rows = []
    for key_rows in flat.partition_by(gcols or ["n_tar"], maintain_order=True):
        first = key_rows.row(0, named=True)
        cells = [f"<td class='key'>{_fmt(first[c])}</td>" for c in gcols]
        cells += [f"<td>{first['n_tar']}</td>", f"<td>{first['n_non']}</td>",
                  f"<td>{_fmt(None if first['eer'] is None else 100 * first['eer'], 2)}</td>",
                  f"<td>{_fmt(first['cllr'])}</td>", f"<td>{_fmt(first['min_cllr'])}</td>",
                  f"<td>{_fmt(first['cal_loss'])}</td>"]
        by_p = {r["p_target"]: r for r in key_rows.iter_rows(named=True)}
        for p in report.p_target:
            r = by_p.get(p, {})
            warn = r.get("dr30_ok") is False
            cls = " class='dr30'" if warn else ""
            mark = " <span class='warn' title='fewer than 30 errors (rule of 30)'>⚠</span>" \
                if warn else ""
            cells += [f"<td>{_fmt(r.get('act_dcf_norm'))}</td>",
                      f"<td{cls}>{_fmt(r.get('min_dcf_norm'))}{mark}</td>"]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    thead = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table class='summary'><thead><tr>{thead}</tr></thead><tbody>{''.join(rows)}" \
           f"</tbody></table>"


CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #111; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #999; }
table.summary { border-collapse: collapse; font-size: 13px; }
table.summary th, table.summary td { border: 1px solid #bbb; padding: 3px 7px; text-align: right; }
table.summary td.key { text-align: left; font-weight: bold; }
td.dr30 { background: #fde2c8; } span.warn { color: #b00; font-weight: bold; }
.chart { display: inline-block; vertical-align: top; margin: 8px 12px 8px 0; }
.meta { color: #555; font-size: 12px; }
"""


def render_html(report: Report, *, progress: Progress | None = None) -> str:
    """The report as one HTML string with the JavaScript libraries inlined (no network).

    ``progress(done, total)`` is called as each chart is built and serialized.
    """
    charts = report.charts()
    sections: dict[str, list[tuple[str, dict]]] = {}
    for i, (section, name, chart) in enumerate(charts):
        sections.setdefault(section, []).append((name, chart.to_dict(validate=False)))
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
    spec_json = json.dumps(specs, allow_nan=False).replace("</", "<\\/")
    script = (
        f"const SPECS = {spec_json};\n"
        "window.reportErrors = [];\n"
        "const jobs = Object.entries(SPECS).map(([id, spec]) =>\n"
        "  vegaEmbed('#' + id, spec, {renderer: 'svg', actions: false})\n"
        "    .catch(err => { window.reportErrors.push(String(err));"
        " console.error(err); }));\n"
        "Promise.all(jobs).then(() => {\n"
        "  document.body.dataset.errors = String(window.reportErrors.length);\n"
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
{''.join(body)}
<script>{script}</script>
</body></html>
"""


def write_report(report: Report, path: str | Path, *, overwrite: bool = False,
                 export_dir: str | Path | None = None,
                 export_formats: Sequence[str] = ("png",),
                 progress: Progress | None = None) -> Path:
    """Write the HTML report atomically; optionally every chart as PNG/SVG/PDF beside it.

    ``progress(done, total)`` counts the charts rendered into the HTML and, with
    ``export_dir``, every exported file. Exported files replace earlier ones of the same name
    only with ``overwrite=True``.
    """
    charts = report.charts()
    n_export = len(charts) * len(export_formats) if export_dir is not None else 0
    total = len(charts) + n_export
    targets = [Path(path)] + ([Path(export_dir) / f"{name}.{fmt.lstrip('.')}"
                               for _, name, _ in charts for fmt in export_formats]
                              if export_dir is not None else [])
    check_outputs(targets, overwrite=overwrite)  # refused before any rendering work
    text = render_html(report, progress=None if progress is None else
                       lambda done, _: progress(done, total))
    with atomic_output(path, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")
    if export_dir is not None:
        out = Path(export_dir)
        out.mkdir(parents=True, exist_ok=True)
        done = len(charts)
        for _, name, chart in charts:
            for fmt in export_formats:
                plots.save_chart(chart, out / f"{name}.{fmt.lstrip('.')}", overwrite=True)
                done += 1
                if progress is not None:
                    progress(done, total)
    return Path(path)
