"""The frames layer: trial tables as lazy Polars frames, their schema, checks and slicing.

* :mod:`~scoreframe.frames.lazy`: any input (path, frame, pandas, Arrow) as one LazyFrame;
* :mod:`~scoreframe.frames.schema`: the canonical columns and :func:`validate_trials`;
* :mod:`~scoreframe.frames.align`: aligning keys, scores and metadata tables;
* :mod:`~scoreframe.frames.sql`: read-only SQL over a dataset (``query``, ``connect``), guarded
  by :mod:`~scoreframe.frames._sql_guard`;
* :mod:`~scoreframe.frames.synth`, :mod:`~scoreframe.frames.systems`,
  :mod:`~scoreframe.frames.class_scores`: synthetic trials, system selection, per-class checks.

May import: errors, checks, io.
"""
