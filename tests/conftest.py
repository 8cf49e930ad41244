"""Test session setup: 8 forced CPU devices (so sharding is exercised), set before JAX is imported,
and JAX's persistent compilation cache off unless a developer asks for one."""

import os
import sys
from pathlib import Path

from jaxlab.core import cpu_threads  # imports no JAX

# Eight devices share two cores: on a loaded machine a collective's threads can take longer than
# XLA's default wait (it then aborts the process), so the tests wait up to ten minutes.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
                           " --xla_cpu_collective_call_terminate_timeout_seconds=600").strip()
cpu_threads.ensure()  # a thread for every forced device, so their collectives cannot starve the pool
# Loading a CPU executable back from the persistent cache has crashed XLA (a segfault inside
# `deserialize_executable`, in about one full run of ten, never in a single test run alone), and a
# fresh machine's cache is empty anyway: by default the suite compiles everything, here and in the
# subprocesses it starts. `JAXLAB_TEST_COMPILE_CACHE=DIR` keeps a cache for fast reruns, one folder
# per host key as `jaxlab run` splits its own (subprocesses with other flags or threads use theirs).
if os.environ.get("JAXLAB_TEST_COMPILE_CACHE"):
  os.environ["JAXLAB_COMPILE_CACHE"] = os.environ["JAXLAB_TEST_COMPILE_CACHE"]
  from jaxlab.core import compile_cache

  compile_cache.enable(min_compile_s=0.5)
else:
  os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
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
