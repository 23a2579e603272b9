"""The package's ``cached_property``: cached per instance, and never a lock across instances.

Python 3.11's :class:`functools.cached_property` holds one lock per class attribute, so two
threads computing the PAV blocks of two groups ran one after the other.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from scoreframe._cached_property import cached_property
from scoreframe.kernels.sorted_scores import sort_scores


class _Meeting:
    """Each instance's value can only be computed while another instance computes its own."""

    barrier = threading.Barrier(2, timeout=10)

    def __init__(self) -> None:
        self.calls = 0

    @cached_property
    def value(self) -> int:
        self.calls += 1
        return self.barrier.wait()  # raises BrokenBarrierError if the other thread is held


def test_two_instances_compute_at_the_same_time_in_two_threads() -> None:
    a, b = _Meeting(), _Meeting()
    with ThreadPoolExecutor(2) as pool:
        values = list(pool.map(lambda m: m.value, [a, b]))
    assert sorted(values) == [0, 1]  # both reached the barrier together
    assert (a.value, b.value) == tuple(values)  # cached: no second wait
    assert a.calls == b.calls == 1


def test_the_value_is_cached_per_instance_on_a_frozen_dataclass() -> None:
    s = sort_scores([0.5, 2.0], [-1.0, 0.7, 1.0])
    blocks = s.blocks
    assert s.blocks is blocks
    assert vars(s)["blocks"] is blocks
    assert isinstance(type(s).__dict__["blocks"], cached_property)
    other = sort_scores([0.5, 2.0], [-1.0, 0.7, 1.0])
    assert other.blocks is not blocks
    assert other.blocks.n_tar.tolist() == blocks.n_tar.tolist()
