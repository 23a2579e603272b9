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
from scoreframe.cli.options import (
    ListAction,
    column_arg,
    int_in,
    path_arg,
    probability_open,
    real_in,
    text_arg,
)
from scoreframe.metrics import CONVENTIONS, Biometric

__all__ = ["TARGET_COLUMNS", "add_biometric_options", "add_report_biometric_options",
           "biometric_option", "flat_for_csv", "print_targets", "report_biometric"]

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
        from scoreframe.cli.compare import format_interval

        flat = res.select(*group_cols, col).explode(col).unnest(col)
        bounded = {c for c in flat.columns if f"{c}_lo" in flat.columns}
        cols = [c for c in flat.columns if not (c.endswith(("_lo", "_hi"))
                                                and c[:-3] in bounded)]
        header = [f"{c} (%) [lo, hi]" if c in bounded else f"{c} (%)" if c in rates else c
                  for c in cols]
        rows = []
        for r in flat.iter_rows(named=True):
            rows.append(["" if r[c] is None
                         else format_interval(r[c], r[f"{c}_lo"], r[f"{c}_hi"], rate=True)
                         if c in bounded else percent(r[c]) if c in rates
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


def add_report_biometric_options(p: argparse.ArgumentParser) -> None:
    """Add the options of ``scoreframe report``'s biometrics section."""
    from scoreframe.kernels.identification import TIE_RULES

    g = p.add_argument_group("biometrics section (ISO/IEC 19795-1; docs/biometrics.md)")
    g.add_argument("--biometric", action="store_true",
                   help="add the biometrics section: FNMR against FMR on log axes, FNMR at "
                        "FMR, ZeroFMR, min HTER, AUC (implied by the options below)")
    g.add_argument("--fmr", action=ListAction, converter=probability_open("an FMR target"),
                   metavar="A", help="FMR targets of the FNMR-at-FMR table (default 1e-3 1e-2)")
    g.add_argument("--fnmr", action=ListAction, converter=probability_open("an FNMR target"),
                   metavar="B", help="FNMR targets of an FMR-at-FNMR table")
    g.add_argument("--epc-dev", metavar="SQL", type=text_arg("an SQL predicate"),
                   help="EPC: development trials (e.g. \"split = 'dev'\"); errors on the others")
    g.add_argument("--epc-eval", metavar="SQL", type=text_arg("an SQL predicate"),
                   help="EPC: evaluation trials (default: not --epc-dev)")
    g.add_argument("--identification", type=path_arg(), metavar="FILE",
                   help="identification data (candidate rows probe/score/mate, or a score "
                        "matrix .npz/.h5): CMC and FNIR/FPIR charts, identification table")
    g.add_argument("--rank", action=ListAction, converter=int_in(1, 1_000_000), default=None,
                   metavar="K", help="ranks of the identification table (default 1 5 10)")
    g.add_argument("--fpir", action=ListAction, converter=probability_open("an FPIR target"),
                   metavar="F", help="FPIR targets of the identification table (default 0.01)")
    g.add_argument("--max-rank", type=int_in(1, 1_000_000), default=20,
                   help="last rank of the CMC chart")
    g.add_argument("--tie", choices=TIE_RULES, default="pessimistic",
                   help="rank tie rule of the identification charts")
    g.add_argument("--demographics", action=ListAction, converter=column_arg(), default=[],
                   metavar="COL", help="demographic differentials per group of these columns")
    g.add_argument("--pair-with", action=ListAction, converter=column_arg(), default=[],
                   metavar="COL", help="the other side's demographic columns (impostor pairs)")
    g.add_argument("--differentials-fmr", type=probability_open("an FMR target"),
                   default=None, help="global FMR of the differentials' threshold "
                                      "(default: the first --fmr)")


def report_biometric(a: argparse.Namespace) -> Biometric | None:
    """The :class:`~scoreframe.Biometric` of the report's ``metrics=`` (``None`` when not asked)."""
    from scoreframe.errors import UsageError

    asked = (a.biometric or a.fmr or a.fnmr or a.epc_dev or a.identification
             or a.demographics)
    if not asked:
        if a.epc_eval or a.pair_with or a.differentials_fmr is not None or a.rank or a.fpir:
            raise UsageError("--epc-eval, --pair-with, --differentials-fmr, --rank and --fpir "
                             "refine the biometrics section: name its input (--epc-dev, "
                             "--demographics, --identification) or pass --biometric")
        return None
    if a.epc_eval and not a.epc_dev:
        raise UsageError("--epc-eval needs --epc-dev (the development trials)")
    return Biometric(fmr=tuple(a.fmr) if a.fmr else (1e-3, 1e-2), fnmr=tuple(a.fnmr or ()),
                     threshold_from=a.epc_dev, epc_eval=a.epc_eval,
                     identification=a.identification, rank=tuple(a.rank or (1, 5, 10)),
                     fpir=tuple(a.fpir) if a.fpir else (0.01,), max_rank=a.max_rank,
                     tie=a.tie, demographics=tuple(a.demographics),
                     pair_with=tuple(a.pair_with), differentials_fmr=a.differentials_fmr)
