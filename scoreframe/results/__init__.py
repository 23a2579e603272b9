"""The results layer: tidy frames of metrics per condition, from one reduction per call.

:mod:`~scoreframe.results.evaluate` (``evaluate``), :mod:`~scoreframe.results.compare`
(paired comparisons), :mod:`~scoreframe.results.bootstrap` (interval helpers and trial-count
guidance), :mod:`~scoreframe.results.curves` (DET, ROCCH, NBER/APE frames),
:mod:`~scoreframe.results.tandem` (the tandem t-DCF), the before/after tables and the
biometric threshold, EPC and differential results.

May import: errors, checks, kernels, io, frames, stats, metrics, estimators, multiclass, norm,
identification.
"""
