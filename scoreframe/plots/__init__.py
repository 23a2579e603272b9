"""Altair (Vega-Lite) charts of the tidy curve frames: DET, NBER, APE, calibration maps, histograms.

Views layer: every chart draws a frame computed elsewhere (:mod:`scoreframe.curves`,
:func:`scoreframe.evaluate.evaluate`, :func:`scoreframe.calibration.calibration_map`); the only
work done here is reshaping for display (series labels, long format). Series differ by colour
*and* dash pattern, so charts stay readable in grayscale.

Modules: :mod:`~scoreframe.plots.style` (series styles, axes), :mod:`~scoreframe.plots.det`,
:mod:`~scoreframe.plots.bayes` (NBER, APE), :mod:`~scoreframe.plots.maps` (calibration maps,
histograms, Cavg sweep), :mod:`~scoreframe.plots.save` (offline export).
"""

from __future__ import annotations

from scoreframe.plots.bayes import ape_plot, nber_plot
from scoreframe.plots.det import det_plot
from scoreframe.plots.maps import calibration_plot, cavg_sweep_plot, histogram_plot
from scoreframe.plots.save import save_chart
from scoreframe.plots.style import series_labels

__all__ = ["ape_plot", "calibration_plot", "cavg_sweep_plot", "det_plot", "histogram_plot",
           "nber_plot", "save_chart", "series_labels"]
