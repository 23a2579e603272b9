"""Atomic writes: build the output under a temporary name beside it, then rename.

An interrupted write leaves the destination as it was (absent or the previous version) and no
half-written file under the destination's name.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scoreframe.errors import ScoreframeError, message

__all__ = ["atomic_output"]


@contextmanager
def atomic_output(target: str | Path, *, directory: bool = False,
                  overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write to; on success it replaces ``target`` atomically.

    Parameters
    ----------
    target
        Final file or directory.
    directory
        Yield a directory (for partitioned datasets) instead of a file path.
    overwrite
        Replace an existing ``target``; otherwise an existing one is an error.
    """
    target = Path(target)
    if target.exists() and not overwrite:
        raise ScoreframeError(message(f"output `{target}` already exists",
                                      hint="Pass overwrite (CLI: --overwrite) to replace it."))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        out = tmp / "out"
        if directory:
            out.mkdir()
        yield out
        if target.exists():
            old = tmp / "old"
            os.replace(target, old)
        os.replace(out, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
