"""Test session setup: 8 forced CPU devices (so sharding is exercised) and XLA flags that compile
faster, set before JAX is imported, and a persistent compilation cache that starts empty and lasts
the session."""

import faulthandler
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from jaxlab.core import codegen, cpu_threads  # import no JAX

# Eight devices share two cores: on a loaded machine a collective's threads can take longer than
# XLA's default wait (it then aborts the process), so the tests wait up to ten minutes.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
                           " --xla_cpu_collective_call_terminate_timeout_seconds=600").strip()
cpu_threads.ensure()  # a thread for every forced device, so their collectives cannot starve the pool
# The tests' programs are small, and compiling them was 64% of the suite's work (tests/compile_profile.py):
# they compile with `codegen.FAST` (LLVM at -O1, XLA's loop emitters) in about 40% of the time. The code
# differs from what `jaxlab run` compiles in its last bits, so a run here is another machine kind: it
# meets a receipt within seed error, not bitwise. CI runs the float-sensitive tests again as the product
# compiles; `JAXLAB_TEST_CODEGEN=product` runs all of them so.
CODEGEN = os.environ.get("JAXLAB_TEST_CODEGEN", "fast")
if CODEGEN not in ("fast", "product"):
  raise pytest.UsageError(f"JAXLAB_TEST_CODEGEN={CODEGEN!r}: expected 'fast' (the default) or 'product'")
if CODEGEN == "fast":
  codegen.use_fast()
# LAPACK calls (CMA-ES's eigh) go through OpenBLAS, whose spinning worker threads fight the test
# workers for the two cores and made those programs several times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The suite starts from an empty persistent compilation cache of its own (a fresh machine's is empty),
# shared by both workers and the subprocesses tests start: a program that one test file compiled, the
# next file (after `compile_cache.release()`) or a subprocess loads instead of compiling it again. One
# folder per host key, as `jaxlab run` splits its own (processes with other flags or threads use theirs).
# `JAXLAB_TEST_COMPILE_CACHE=DIR` keeps the cache across sessions for fast reruns.
SESSION_CACHE = "JAXLAB_TEST_SESSION_CACHE"   # the temporary folder the controlling process made
if not os.environ.get("JAXLAB_TEST_COMPILE_CACHE"):   # unset in the controller only: workers inherit it
  os.environ["JAXLAB_TEST_COMPILE_CACHE"] = os.environ[SESSION_CACHE] = tempfile.mkdtemp(prefix="jaxlab-test-xla-")
os.environ["JAXLAB_COMPILE_CACHE"] = os.environ["JAXLAB_TEST_COMPILE_CACHE"]
from jaxlab.core import compile_cache  # noqa: E402  (after XLA_FLAGS: JAX reads them when it starts)

compile_cache.enable()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `benchmarks` holds the NumPy references the tests compare against
os.chdir(ROOT)  # config paths in tests and docs are relative to the repository root

# The files that take longest (most of a minute or more each, mostly compilation; measured with
# tests/compile_profile.py) start first, so that with `-n 2 --dist loadfile` the two workers finish
# together instead of one waiting on the last long file. pytest-xdist would sort the files by their
# number of tests instead (a one-test file of 80 s last); `pytest_configure` turns that off.
LONGEST_FIRST = ("test_paging_frontier.py", "test_lm_sharding.py", "test_latent_pager.py", "test_developmental_mjx.py",
                 "test_verify.py", "test_benchmarks.py", "test_developmental.py", "test_physics.py",
                 "test_org_forms.py",
                 "test_paging_arms.py", "test_paging_references.py", "test_paging_tree.py", "test_lm_pretrain.py",
                 "test_harness_vs_brain.py", "test_lm.py", "test_evolution.py")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
  """Each test file's compiled programs are dropped when it ends: a worker that kept them all reached
  about 54,000 of the 65,530 memory maps a process may hold, and past the limit XLA segfaults."""
  yield
  compile_cache.release()


def pytest_collection_modifyitems(items):
  rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order within a file is kept


# A worker killed by a native crash prints every thread's stack and then the list of loaded
# extension modules, so the end of a CI log shows only the bottom of the last thread. Each worker
# writes its crash report to a file of its own instead, and the run ends by printing, for each
# worker that crashed, the signal and the crashing thread's innermost frames.
CRASH_DIR = "JAXLAB_TEST_CRASH_DIR"
CRASH_LINES = 30


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin has pointed the handler at stderr
def pytest_configure(config):
  if hasattr(config.option, "loadscopereorder"):
    config.option.loadscopereorder = False   # keep LONGEST_FIRST's order of files
  worker = os.environ.get("PYTEST_XDIST_WORKER")
  if worker is None:
    os.environ[CRASH_DIR] = tempfile.mkdtemp(prefix="jaxlab-test-crashes-")
  elif os.environ.get(CRASH_DIR):
    config.crash_file = open(Path(os.environ[CRASH_DIR]) / f"{worker}.txt", "w")
    faulthandler.enable(file=config.crash_file, all_threads=True)


def pytest_unconfigure(config):
  crash_file = getattr(config, "crash_file", None)
  if crash_file is not None:   # a worker that ends normally leaves no report
    faulthandler.enable(file=sys.stderr, all_threads=True)
    crash_file.close()
    Path(crash_file.name).unlink()
  elif "PYTEST_XDIST_WORKER" not in os.environ and os.environ.get(CRASH_DIR):
    shutil.rmtree(os.environ[CRASH_DIR], ignore_errors=True)
  if "PYTEST_XDIST_WORKER" not in os.environ and os.environ.get(SESSION_CACHE):
    shutil.rmtree(os.environ[SESSION_CACHE], ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
  folder = os.environ.get(CRASH_DIR)
  if "PYTEST_XDIST_WORKER" in os.environ or not folder:
    return
  for report in sorted(Path(folder).glob("*.txt")):
    lines = report.read_text(errors="replace").splitlines()
    if lines:
      start = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), 1)
      current = lines[start:]
      current = current[:current.index("")] if "" in current else current
      terminalreporter.section(f"native crash of worker {report.stem}", sep="-", red=True)
      terminalreporter.write_line("\n".join(lines[:1] + current[:CRASH_LINES]))
