"""Altair (Vega-Lite) charts of the tidy curve frames: DET, NBER, APE, calibration maps, histograms.

Views layer: every chart draws a frame computed elsewhere (:mod:`scoreframe.results.curves`,
:func:`scoreframe.results.evaluate.evaluate`,
:func:`scoreframe.estimators.calibration.calibration_map`); the only
work done here is reshaping for display (series labels, long format, decimation to pixels).
Every series has one colour *and* one dash (:func:`series_scale`), the same in every chart
that receives the same ``styles``, so charts stay readable in grayscale. Curves are clipped at
the plot frame (never clamped onto it).

Modules: :mod:`~scoreframe.views.plots.style` (series styles, legends, probit axes),
:mod:`~scoreframe.views.plots.det`, :mod:`~scoreframe.views.plots.bayes` (NBER, APE),
:mod:`~scoreframe.views.plots.maps` (calibration maps, histograms, Cavg sweep),
:mod:`~scoreframe.views.plots.save` (offline export to HTML/SVG/PNG/PDF) and
:mod:`~scoreframe.views.plots.display` (offline display in Jupyter, enabled on import).
"""

from __future__ import annotations

from scoreframe.views.plots._biometric import (
    cmc_plot,
    differentials_plot,
    epc_plot,
    fmr_fnmr_plot,
    fnir_fpir_plot,
)
from scoreframe.views.plots.bayes import ape_plot, nber_plot
from scoreframe.views.plots.det import det_plot
from scoreframe.views.plots.display import disable_offline_display, enable_offline_display
from scoreframe.views.plots.forensic import ece_plot, tippett_plot
from scoreframe.views.plots.intervals import det_interval_plot, forest_plot, nber_interval_plot
from scoreframe.views.plots.maps import calibration_plot, cavg_sweep_plot, histogram_plot
from scoreframe.views.plots.save import save_chart
from scoreframe.views.plots.spoof import t_dcf_plot
from scoreframe.views.plots.style import SeriesStyle, series_labels, series_scale

__all__ = ["SeriesStyle", "ape_plot", "calibration_plot", "cavg_sweep_plot", "cmc_plot",
           "differentials_plot", "fmr_fnmr_plot", "fnir_fpir_plot",
           "det_interval_plot", "det_plot", "disable_offline_display", "ece_plot",
           "enable_offline_display", "epc_plot", "forest_plot", "histogram_plot",
           "nber_interval_plot",
           "nber_plot", "save_chart", "series_labels", "series_scale", "t_dcf_plot",
           "tippett_plot"]

enable_offline_display()
