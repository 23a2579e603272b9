"""Biometric verification options of ``scoreframe evaluate`` and their tables.

``--fmr``/``--fnmr`` targets, ``--at-threshold``, ``--biometric``, ``--strict``,
``--convention`` and ``--threshold-from`` (see ``docs/biometrics.md``); the per-target values
print as one extra table each, and go into JSON as lists and into CSV as JSON text.
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from scoreframe.cli.console import percent, print_table
from scoreframe.cli.options import ListAction, probability_open, real_in, text_arg
from scoreframe.metrics import CONVENTIONS, Biometric

__all__ = ["TARGET_COLUMNS", "add_biometric_options", "biometric_option", "flat_for_csv",
           "print_targets"]

#: The list-of-struct columns of the biometric verification results.
TARGET_COLUMNS = ("fnmr_at_fmr", "fmr_at_fnmr", "at_threshold", "fixed")


def add_biometric_options(p: argparse.ArgumentParser) -> None:
    """Add the biometric verification option group."""
    g = p.add_argument_group("biometric verification (ISO/IEC 19795-1)")
    g.add_argument("--biometric", action="store_true",
                   help="add ZeroFMR, ZeroFNMR, min HTER (with thresholds) and the exact AUC")
    g.add_argument("--fmr", action=ListAction, converter=probability_open("an FMR target"),
                   metavar="A",
                   help="FNMR at these FMR targets, e.g. --fmr 1e-3 1e-4 (TAR@FAR = 1 - FNMR)")
    g.add_argument("--fnmr", action=ListAction, converter=probability_open("an FNMR target"),
                   metavar="B",
                   help="FMR at these FNMR targets")
    g.add_argument("--at-threshold", action=ListAction,
                   converter=real_in(-1e15, 1e15, what="a threshold"), metavar="T",
                   help="FMR, FNMR and HTER at these thresholds")
    g.add_argument("--strict", action="store_true",
                   help="accept score > threshold (default: score >= threshold)")
    g.add_argument("--convention", choices=CONVENTIONS, default="exact",
                   help="exact (the definitions), bob (bob.measure 6.1.1) or pyeer (0.5.6)")
    g.add_argument("--threshold-from", metavar="SQL", type=text_arg("an SQL predicate"),
                   help="choose thresholds on these trials (e.g. \"split = 'dev'\") and report "
                        "FMR/FNMR/HTER on the others (or on --where)")


def biometric_option(a: argparse.Namespace) -> Biometric | None:
    """The :class:`~scoreframe.metrics.Biometric` of ``metrics=`` from the biometric options.

    ``None`` unless ``--biometric``, a target, a threshold or ``--threshold-from`` is given
    (``--strict`` and ``--convention`` alone change nothing).
    """
    if not (a.biometric or a.fmr or a.fnmr or a.at_threshold or a.threshold_from is not None):
        return None
    return Biometric(fmr=a.fmr or (), fnmr=a.fnmr or (), at_threshold=a.at_threshold or (),
                     strict=a.strict, convention=a.convention, threshold_from=a.threshold_from)


def print_targets(res: pl.DataFrame, group_cols: list[str]) -> None:
    """One table per per-target column present (rates in %)."""
    titles = {"fnmr_at_fmr": "FNMR at FMR targets", "fmr_at_fnmr": "FMR at FNMR targets",
              "at_threshold": "at fixed thresholds",
              "fixed": "thresholds fixed on --threshold-from, applied here"}
    rates = {"fnmr", "fmr", "hter", "fmr_target", "fnmr_target"}
    for col in TARGET_COLUMNS:
        if col not in res.columns or not res[col].list.len().sum():
            continue
        flat = res.select(*group_cols, col).explode(col).unnest(col)
        cols = flat.columns
        header = [f"{c} (%)" if c in rates else c for c in cols]
        rows = []
        for r in flat.iter_rows(named=True):
            rows.append(["" if r[c] is None else percent(r[c]) if c in rates
                         else f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])
                         for c in cols])
        key = list(range(len(group_cols)))
        print_table(header, rows, key=key, left=key, title=titles[col])


def flat_for_csv(df: pl.DataFrame) -> pl.DataFrame:
    """The per-target list columns as JSON text (CSV has no nested values)."""
    cols = [c for c in TARGET_COLUMNS if c in df.columns]
    return df.with_columns(pl.col(c).map_elements(
        lambda v: json.dumps(v.to_list() if hasattr(v, "to_list") else v),
        return_dtype=pl.String) for c in cols) if cols else df
