"""The persistent compilation cache `jaxlab run` turns on: a program compiled once is loaded the
second time with the same results, and the clock splits compiling from running; the test profile
plugin that says where a session's compile time goes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlab.core import compile_cache
from launch import main


@pytest.fixture
def cache(tmp_path):
  previous = jax.config.jax_compilation_cache_dir   # the test session's own cache, if any
  enabled = jax.config.jax_enable_compilation_cache
  path = compile_cache.enable(tmp_path / "xla", min_compile_s=0.0)
  yield path
  compile_cache.disable(previous, enabled)


def _program(x):
  return jnp.tanh(x @ x.T).sum(axis=0)


def test_a_program_compiled_once_is_loaded_the_second_time_with_the_same_result(cache):
  x = jnp.arange(48.0).reshape(6, 8) / 10
  first = compile_cache.Clock()
  a = np.asarray(jax.jit(_program)(x))
  first.stop()
  assert first.counts["misses"] >= 1 and any(cache.iterdir())
  jax.clear_caches()   # forget the in-memory executables: only the folder can serve them now
  second = compile_cache.Clock()
  b = np.asarray(jax.jit(_program)(x))
  second.stop()
  assert second.counts["hits"] >= 1 and second.counts["misses"] == 0
  np.testing.assert_array_equal(a, b)
  line = second.line(2.0)
  assert line.startswith("time: 2.0 s, of which compiling") and "loaded" in line


def test_the_default_folder_and_the_switch(monkeypatch, tmp_path):
  monkeypatch.setenv("JAXLAB_COMPILE_CACHE", str(tmp_path / "here"))
  assert compile_cache.default_dir() == tmp_path / "here"
  monkeypatch.delenv("JAXLAB_COMPILE_CACHE")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert compile_cache.default_dir() == tmp_path / "jaxlab" / "xla"
  # Programs compiled for another thread pool or other XLA flags live apart.
  monkeypatch.setenv("NPROC", "64")
  wide = compile_cache.host_key()
  monkeypatch.setenv("NPROC", "2")
  narrow = compile_cache.host_key()
  monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2")
  assert len({wide, narrow, compile_cache.host_key()}) == 3
  # ... and entries of another compression: the folder names the codec JAX writes with.
  from jax._src import compilation_cache as jax_cache
  codec = "zstd" if (getattr(jax_cache, "zstd", None) or jax_cache.zstandard) is not None else "zlib"
  assert compile_cache.host_key().endswith(f"-{codec}") and codec == "zstd"   # zstandard is a dependency
  args = main._parser().parse_args(["run", "configs/org_forms.py:smoke", "--workdir", "w", "--no-compile-cache"])
  assert args.no_compile_cache
  assert not main._parser().parse_args(["run", "c.py", "--workdir", "w"]).no_compile_cache


def _maps() -> int:
  with open("/proc/self/maps") as f:
    return sum(1 for _ in f)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")
def test_release_unmaps_the_compiled_code_and_a_program_compiles_again_to_the_same_result():
  from jaxlab.paging import programs

  program = programs.Program("release_test", None, _program)
  x = jnp.arange(48.0).reshape(6, 8) / 10
  before = np.asarray(program(x))
  compile_cache.release()
  start = _maps()
  fns = [jax.jit(lambda x, k=k: jnp.sin(x * k).sum(0)) for k in range(20)]
  for k, fn in enumerate(fns):
    fn(jnp.ones((k + 2, 3))).block_until_ready()
  program(x)
  grown = _maps() - start
  assert grown >= 20  # each executable maps its code apart
  compile_cache.release()
  assert _maps() - start < grown / 4
  assert not program._executables   # the live program's own table is emptied too
  np.testing.assert_array_equal(np.asarray(program(x)), before)


def test_the_profile_plugin_names_each_files_compiled_functions_across_workers(tmp_path):
  """`-p tests.compile_profile` with two xdist workers: each file's time and compile seconds, and
  each jitted function with its count of compiled programs, summed over the workers."""
  for name, fn in (("a", "first_program"), ("b", "second_program")):
    (tmp_path / f"test_{name}.py").write_text(
        "import jax, jax.numpy as jnp\n"
        f"def {fn}(x):\n  return jnp.sin(x) * 2\n"
        f"def test_{name}():\n  jax.jit({fn})(jnp.ones(3)); jax.jit({fn})(jnp.ones(4))\n")
  # Started from a test, as under an xdist worker: the plugin must not take the new session for one.
  env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PYTEST_XDIST_WORKER": "gw9",
         "JAXLAB_TEST_PROFILE_JSON": str(tmp_path / "profile.json")}
  out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p",
                        "tests.compile_profile", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  assert "time per test file" in out.stdout and "XLA compile time per jitted function" in out.stdout
  record = json.loads((tmp_path / "profile.json").read_text())
  for name, fn in (("a", "first_program"), ("b", "second_program")):
    assert record["functions"][f"jit({fn})"]["programs"] == 2   # one per shape
    assert record["files"][f"test_{name}.py"]["compile"] > 0
    assert record["files"][f"test_{name}.py"]["test"] >= record["files"][f"test_{name}.py"]["compile"]
