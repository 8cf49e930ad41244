"""Test session setup: 8 forced CPU devices (so sharding is exercised) and a compilation cache
shared with the subprocesses the launch tests start. Both must be set before JAX is imported."""

import os
import sys
import tempfile
from pathlib import Path

from jaxlab.core import cpu_threads  # imports no JAX

# Eight devices share two cores: on a loaded machine a collective's threads can take longer than
# XLA's default wait (it then aborts the process), so the tests wait up to ten minutes.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
                           " --xla_cpu_collective_call_terminate_timeout_seconds=600").strip()
cpu_threads.ensure()  # a thread for every forced device, so their collectives cannot starve the pool
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(tempfile.gettempdir()) / "jaxlab-test-jax-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
# LAPACK calls (CMA-ES's eigh) go through OpenBLAS, whose spinning worker threads fight the test
# workers for the two cores and made those programs several times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `benchmarks` holds the NumPy references the tests compare against
os.chdir(ROOT)  # config paths in tests and docs are relative to the repository root

# The files that take longest (minutes each, mostly compilation) start first, so that with
# `-n 2 --dist loadfile` the two workers finish together instead of one waiting on the last long file.
LONGEST_FIRST = ("test_paging_frontier.py", "test_developmental_mjx.py", "test_latent_pager.py", "test_lm_sharding.py",
                 "test_benchmarks.py", "test_verify.py", "test_physics.py", "test_evolution.py", "test_org_forms.py")


def pytest_collection_modifyitems(items):
  rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order within a file is kept
