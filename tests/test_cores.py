"""Threads and default workers follow the cores this process may use, not the machine's.

On a batch system (SLURM, a container's cpuset) ``os.cpu_count()`` counts every core of the
node while the process may run on a few; the engine's default workers (and so each range's
share of the memory limit) and the readers' threads follow the affinity.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scoreframe._cores import usable_cores

CODE = """
import json, os
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from scoreframe._cores import usable_cores
from scoreframe.kernels.elementary import usable_cores as from_kernels
from scoreframe.stats.executors import LocalExecutor
print(json.dumps([usable_cores(), from_kernels(), LocalExecutor().workers, os.cpu_count()]))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_one_allowed_core_means_one_worker() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         check=True)
    cores, kernels, workers, machine = json.loads(out.stdout)
    assert cores == kernels == workers == 1 and machine >= 1


def test_usable_cores_is_the_affinity_here() -> None:
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count()
    assert usable_cores() == expected
