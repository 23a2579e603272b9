"""``scoreframe convert``: between trial formats, aligning a key with scores on the way."""

from __future__ import annotations

import argparse

from scoreframe import io as sio
from scoreframe.cli.console import progress, say, shown
from scoreframe.cli.inputs import load_dataset, parse_columns, parse_missing
from scoreframe.cli.options import (
    ListAction,
    add_command,
    first_positional,
    missing_arg,
    output_options,
    path_arg,
    reading_options,
    size_bytes,
    where_option,
)
from scoreframe.errors import Place, UsageError
from scoreframe.frames.align import align
from scoreframe.io.atomic import check_outputs
from scoreframe.io.bosaris_hdf5 import DEFAULT_MAX_DENSE_BYTES
from scoreframe.io.convert import convert_trials, output_format, plan_outputs
from scoreframe.io.parquet import apply_where, infer_kind, scan_trials

__all__ = ["cmd_convert", "register"]


def _check_outputs_first(a: argparse.Namespace, inputs: list[str]) -> None:
    """Refuse existing outputs before the data is read or checked.

    The table kind (which decides the files of paired formats) comes from --key/--scores, or
    from the schema of a Parquet INPUT; a text INPUT is small and is checked by
    :func:`~scoreframe.io.convert.convert_trials` before anything is written.
    """
    if a.input:
        if (a.from_ or sio.guess_format(a.input)) != "parquet":
            return
        kind = infer_kind(scan_trials(a.input).collect_schema().names())
    else:
        kind = "trials" if a.key and a.scores else "key" if a.key else "scores"
    plan = plan_outputs(a.output, to=output_format(a.output, a.to), kind=kind,
                        key_out=a.key_out, scores_out=a.scores_out)
    check_outputs([p for _, p in plan], overwrite=a.overwrite, inputs=inputs)


def cmd_convert(a: argparse.Namespace) -> int:
    """Run ``scoreframe convert``."""
    columns = parse_columns(a.columns)
    if a.input and (a.key or a.scores):
        raise UsageError("give either an INPUT table or --key/--scores, not both")
    if not (a.input or a.key or a.scores):
        raise UsageError("nothing to convert: give an INPUT table or --key and/or --scores")
    inputs = [p for p in (a.input, a.key, a.scores) if p]
    _check_outputs_first(a, inputs)
    trial_id = a.trial_id or None
    if a.input:
        lf = load_dataset(a.input, a.from_, None, columns, trial_id=trial_id)
    else:
        key = (load_dataset(a.key, a.key_from or a.from_, "key", columns, trial_id=trial_id)
               if a.key else None)
        sc = (load_dataset(a.scores, a.scores_from or a.from_, "scores", columns,
                           trial_id=trial_id) if a.scores else None)
        if key is not None and sc is not None:
            lf = align(key, sc, missing=parse_missing(a.missing), extra=a.extra)
        else:
            lf = key if key is not None else sc  # type: ignore[assignment]  # the parser requires --key or --scores
    # one input: the error's path; several: the command line names them all
    lf = apply_where(lf, a.where, source=Place(inputs[0]) if len(inputs) == 1 else None)
    with progress() as prog:
        task = prog.add_task("writing rows", total=None)
        res = convert_trials(lf, a.output, to=a.to, key_out=a.key_out,
                             scores_out=a.scores_out, partition_by=a.partition_by or (),
                             overwrite=a.overwrite, inputs=inputs, trial_id=trial_id,
                             progress=lambda n: prog.update(task, completed=n),
                             max_dense_bytes=a.max_dense_bytes)
    say(f"wrote {res.rows} {res.kind} rows to {', '.join(shown(p) for p in res.paths)}")
    return 0


def _fmt_gib(n: int) -> str:
    return f"{n / 2**30:g}GiB"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``convert`` to the command line."""
    c = add_command(sub, "convert", func=cmd_convert, first="[INPUT]",
                    help_text="convert between trial formats (and align key + scores)",
                    parents=[reading_options(), where_option(),
                             output_options(required=True,
                                            help_text="output file, directory or stem")])
    first_positional(c, "input", required=False, metavar="INPUT",
                     help="a single table (parquet dataset, csv, tsv, ...)")
    c.add_argument("--key", type=path_arg(), help="key or trial list file")
    c.add_argument("--scores", type=path_arg(), help="scores file")
    c.add_argument("--key-from", choices=sio.format_names(readable=True), help="format of --key")
    c.add_argument("--scores-from", choices=sio.format_names(readable=True),
                   help="format of --scores")
    c.add_argument("--missing", type=missing_arg, default="error",
                   help="key trials with no score: error, drop or a fill value")
    c.add_argument("--extra", default="error", choices=("error", "drop"),
                   help="scores with no key trial")
    c.add_argument("--to", choices=sio.format_names(writable=True),
                   help="output format (default: from -o)")
    c.add_argument("--partition-by", action=ListAction, metavar="COL",
                   help="parquet: partition columns")
    c.add_argument("--key-out", type=path_arg(), help="paired formats: key output path")
    c.add_argument("--scores-out", type=path_arg(), help="paired formats: scores output path")
    c.add_argument("--max-dense-bytes", type=size_bytes(none=True),
                   default=_fmt_gib(DEFAULT_MAX_DENSE_BYTES),
                   metavar="SIZE",
                   help="bosaris-h5: largest dense model x segment matrix to write (a size "
                        "such as 16GB, or none)")
