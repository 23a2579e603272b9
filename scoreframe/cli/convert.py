"""``scoreframe convert``: between trial formats, aligning a key with scores on the way."""

from __future__ import annotations

import argparse
from pathlib import Path

from scoreframe import io as sio
from scoreframe.align import align
from scoreframe.cli.inputs import guard_outputs, load_dataset, parse_columns, parse_missing
from scoreframe.cli.options import add_command, output_options, reading_options, where_option
from scoreframe.errors import UsageError
from scoreframe.io.parquet import infer_kind

__all__ = ["cmd_convert", "register"]

PAIRED = ("bosaris-h5", "bosaris-txt", "kaldi", "nist")


def _paired_paths(out: str, fmt: str, key_out: str | None,
                  scores_out: str | None) -> tuple[Path, Path]:
    p = Path(out)
    ext = p.suffix or {"bosaris-h5": ".h5", "nist": ".tsv"}.get(fmt, ".txt")
    stem = p.with_suffix("")
    return (Path(key_out) if key_out else stem.with_name(stem.name + "_key" + ext),
            Path(scores_out) if scores_out else stem.with_name(stem.name + "_scores" + ext))


def cmd_convert(a: argparse.Namespace) -> int:
    """Run ``scoreframe convert``."""
    columns = parse_columns(a.columns)
    if a.input and (a.key or a.scores):
        raise UsageError("give either an INPUT table or --key/--scores, not both")
    if a.input:
        lf = load_dataset(a.input, a.from_, None, columns)
        srcs = [a.input]
    elif a.key or a.scores:
        key = load_dataset(a.key, a.key_from or a.from_, "key", columns) if a.key else None
        sc = (load_dataset(a.scores, a.scores_from or a.from_, "scores", columns)
              if a.scores else None)
        if key is not None and sc is not None:
            lf = align(key, sc, missing=parse_missing(a.missing), extra=a.extra)
        else:
            lf = key if key is not None else sc  # type: ignore[assignment]
        srcs = [p for p in (a.key, a.scores) if p]
    else:
        raise UsageError("nothing to convert: give an INPUT table or --key and/or --scores")
    from scoreframe.io.parquet import apply_where

    out_paths = [Path(a.output)]
    to = a.to or ("parquet" if not Path(a.output).suffix else sio.guess_format(a.output))
    lf = apply_where(lf, a.where)
    df = lf.collect()
    kind = infer_kind(df.columns)
    if to in PAIRED:
        if "system" in df.columns and df["system"].n_unique() > 1:
            raise UsageError(f"{to} holds one system; select one with --where \"system = 'x'\"")
        jobs = []
        if kind in ("trials", "key", "ndx") and not (to == "nist" and kind == "ndx"):
            jobs.append("key" if "label" in df.columns else "ndx")
        if "score" in df.columns:
            jobs.append("scores")
        kpath, spath = _paired_paths(a.output, to, a.key_out, a.scores_out)
        if jobs == ["key"] or jobs == ["ndx"]:
            kpath = Path(a.key_out or a.output)
        if jobs == ["scores"]:
            spath = Path(a.scores_out or a.output)
        out_paths = [kpath if j != "scores" else spath for j in jobs]
        guard_outputs(srcs, out_paths)
        for job, path in zip(jobs, out_paths, strict=True):
            sio.write_any(df, path, fmt=to, kind=job, overwrite=a.overwrite)  # type: ignore[arg-type]
    else:
        guard_outputs(srcs, out_paths)
        sio.write_any(df, a.output, fmt=to, kind=kind, overwrite=a.overwrite,
                      partition_by=tuple(a.partition_by or ()))
    print(f"wrote {df.height} {kind} rows to {', '.join(str(p) for p in out_paths)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``convert`` to the command line."""
    c = add_command(sub, "convert", func=cmd_convert,
                    help_text="convert between trial formats (and align key + scores)",
                    parents=[reading_options(), where_option(),
                             output_options(required=True,
                                            help_text="output file, directory or stem")])
    c.add_argument("input", nargs="?", help="a single table (parquet dataset, csv, tsv, ...)")
    c.add_argument("--key", help="key or trial list file")
    c.add_argument("--scores", help="scores file")
    c.add_argument("--key-from", choices=sio.FORMATS, help="format of --key")
    c.add_argument("--scores-from", choices=sio.FORMATS, help="format of --scores")
    c.add_argument("--missing", default="error",
                   help="key trials with no score: error, drop or a fill value")
    c.add_argument("--extra", default="error", choices=("error", "drop"),
                   help="scores with no key trial")
    c.add_argument("--to", choices=sio.FORMATS, help="output format (default: from -o)")
    c.add_argument("--partition-by", nargs="+", help="parquet: partition columns")
    c.add_argument("--key-out", help="paired formats: key output path")
    c.add_argument("--scores-out", help="paired formats: scores output path")
