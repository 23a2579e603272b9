"""The control-byte scan of the text readers, split into blocks, equals a whole-array count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoreframe.errors import FormatError
from scoreframe.io import lines


@pytest.mark.parametrize("block", [7, 64, 1 << 22])
def test_block_counts_equal_a_whole_array_count(block: int, monkeypatch) -> None:
    monkeypatch.setattr(lines, "_SCAN_BLOCK", block)
    rng = np.random.default_rng(3)
    text = rng.choice(np.frombuffer(b"ab c\t\n", dtype=np.uint8), size=5000)
    text[rng.choice(5000, 40, replace=False)] = 13  # CRs, each followed by a line feed below
    cr = np.flatnonzero(text == 13)
    text[np.minimum(cr + 1, 4999)] = 10
    text[-1] = 10
    n_tab, n_cr = lines.check_control_bytes(text, Path("x.txt"))
    assert n_tab == int(np.count_nonzero(text == 9))
    assert n_cr == int(np.count_nonzero(text == 13))


@pytest.mark.parametrize("block", [5, 1 << 22])
@pytest.mark.parametrize("bad", [0, 127, 27])
def test_a_control_byte_in_a_late_block_names_its_line(block: int, bad: int, monkeypatch) -> None:
    monkeypatch.setattr(lines, "_SCAN_BLOCK", block)
    raw = bytearray(b"m s target\n" * 50)
    raw[11 * 37 + 3] = bad  # line 38
    with pytest.raises(FormatError, match=r"line 38\b"):
        lines.check_control_bytes(np.frombuffer(bytes(raw), dtype=np.uint8), Path("k.txt"))
