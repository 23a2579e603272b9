"""The views layer: charts (:mod:`~scoreframe.views.plots`) and the HTML report.

:mod:`~scoreframe.views.report` assembles the offline report from the results layer and the
Altair charts of :mod:`~scoreframe.views.plots`.

May import: errors, checks, kernels, io, frames, stats, metrics, estimators, multiclass, norm,
identification, results.
"""
