"""``scoreframe identify``: 1:N identification rates (CMC, FNIR at FPIR) per condition."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from scoreframe.cli.console import emit_frame, percent, print_table, write_text_output
from scoreframe.cli.inputs import check_output_format, dataset_source
from scoreframe.cli.options import (
    ListAction,
    add_command,
    by_options,
    dataset_options,
    engine_of,
    engine_options,
    int_in,
    output_options,
    probability_open,
)
from scoreframe.errors import FormatError, Place, UsageError, message
from scoreframe.frames.align import join_metadata
from scoreframe.identification import THRESHOLD_CONVENTIONS, identify
from scoreframe.kernels.identification import TIE_RULES

__all__ = ["cmd_identify", "flat_rows", "register"]

HELP = ("candidate rows (probe, score, mate; parquet file or directory, csv, tsv) or a "
        "probe x gallery score matrix (.npz, .h5)")


def _source(a: argparse.Namespace) -> object:
    if a.key or a.scores:
        raise UsageError("identify reads one table of candidate rows (or a score matrix); "
                         "--key/--scores do not apply")
    if a.sql or a.table:  # candidate rows from a query over the Parquet DATASET and tables
        return dataset_source(a)
    path: str = a.dataset
    p = Path(path)
    if not p.exists():
        raise FormatError(message("input not found", where=Place(path)))
    if a.join and p.suffix in (".npz", ".h5", ".hdf5"):
        raise UsageError("--join needs candidate rows, not a score matrix", path=path)
    src: object = path
    if p.suffix in (".csv", ".tsv"):
        src = pl.scan_csv(p, separator="\t" if p.suffix == ".tsv" else ",")
    if a.join:
        lf = src if isinstance(src, pl.LazyFrame) else pl.scan_parquet(
            str(p / "**" / "*.parquet") if p.is_dir() else str(p))
        for table, on in zip(a.join, a.on, strict=True):
            lf = join_metadata(lf, table, on=on)
        src = lf
    return src


def flat_rows(res: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """One row per condition x measure: CMC ranks, then FNIR / DIR / FPIR at each target."""
    cmc = (res.select(*by, "n_searches", "n_mated", "n_nonmated", "cmc").explode("cmc")
           .unnest("cmc").rename({"identification_rate": "value"})
           .with_columns(measure=pl.format("rank-{} identification rate", pl.col("rank")),
                         threshold=pl.lit(None, pl.Float64), fpir=pl.lit(None, pl.Float64)))
    out = [cmc.select(*by, "n_searches", "n_mated", "n_nonmated", "measure", "value",
                      "threshold", "fpir")]
    if res["open_set"].list.len().sum():
        o = (res.select(*by, "n_searches", "n_mated", "n_nonmated", "open_set")
             .explode("open_set").unnest("open_set")
             .with_columns(measure=pl.format("FNIR at FPIR {}, rank {}",
                                             pl.col("fpir_target"), pl.col("rank")),
                           value=pl.col("fnir")))
        out.append(o.select(*by, "n_searches", "n_mated", "n_nonmated", "measure", "value",
                            "threshold", "fpir"))
    return pl.concat(out)


def cmd_identify(a: argparse.Namespace) -> int:
    """Run ``scoreframe identify``."""
    check_output_format(a, machine=("json", "csv", "parquet"))
    res = identify(_source(a), rank=a.rank, fpir=a.fpir, by=a.by, where=a.where,
                   tie=a.tie, threshold=a.threshold, engine=engine_of(a))
    by = [c for c in res.columns[: res.columns.index("n_searches")]]
    flat = flat_rows(res, by)
    if a.format == "table":
        header = [*by, "searches", "mated", "non-mated", "measure", "value (%)", "threshold",
                  "FPIR (%)"]
        rows = [[*(str(r[c]) for c in by), str(r["n_searches"]), str(r["n_mated"]),
                 str(r["n_nonmated"]), r["measure"], percent(r["value"]),
                 "" if r["threshold"] is None else f"{r['threshold']:.6g}",
                 percent(r["fpir"])] for r in flat.iter_rows(named=True)]
        key = list(range(len(by)))
        print_table(header, rows, key=key, left=[*key, len(by) + 3],
                    title=f"ties: {a.tie}; FPIR thresholds: {a.threshold}")
        return 0
    if a.format == "json":
        doc = {"by": by, "tie": a.tie, "threshold": a.threshold, "rank": a.rank,
               "fpir": a.fpir, "groups": res.to_dicts()}
        write_text_output(json.dumps(doc, indent=1), a.output, overwrite=a.overwrite)
        return 0
    emit_frame(flat, a.format, a.output, a.overwrite)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``identify`` to the command line."""
    p = add_command(sub, "identify", func=cmd_identify, first="DATASET",
                    help_text="1:N identification: CMC ranks and FNIR at FPIR targets per "
                              "condition",
                    parents=[dataset_options(HELP), by_options(),
                             output_options(("table", "json", "csv", "parquet"),
                                            default="table"), engine_options()])
    p.add_argument("--rank", action=ListAction, converter=int_in(1, 1_000_000), default=[1],
                   metavar="K",
                   help="ranks of the CMC and of the open-set rates, e.g. --rank 1 5 10")
    p.add_argument("--fpir", action=ListAction, converter=probability_open("an FPIR target"),
                   default=[], metavar="F",
                   help="FPIR targets of the open-set FNIR, e.g. --fpir 0.01 0.001")
    p.add_argument("--tie", choices=TIE_RULES, default="pessimistic",
                   help="mate tied with non-mates: pessimistic (as bob.measure), optimistic, "
                        "stable (input order, as pyeer)")
    p.add_argument("--threshold", choices=THRESHOLD_CONVENTIONS, default="exact",
                   help="FPIR threshold: exact (lowest with FPIR <= target) or bob "
                        "(bob.measure far_threshold)")
