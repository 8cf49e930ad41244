"""`jaxlab run --fast-compile`: XLA flags that compile in less time, recorded as another machine kind."""

import json
import os
import subprocess
import sys

import jax

from jaxlab.core import codegen, receipts
from launch import main as launch


def test_fast_flags_are_added_once_beside_the_ones_given():
  env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=1"}
  codegen.use_fast(env)
  codegen.use_fast(env)
  assert env["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=2", *codegen.FAST]
  assert codegen.flags(env) == list(codegen.FAST)   # the device count leaves the code as it is
  empty = {}
  codegen.use_fast(empty)
  assert empty["XLA_FLAGS"].split() == list(codegen.FAST)


def test_a_child_process_gets_these_code_flags_and_its_own_device_count(monkeypatch):
  monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX2")
  assert codegen.for_process(2).split() == ["--xla_cpu_max_isa=AVX2", "--xla_force_host_platform_device_count=2"]
  assert codegen.for_process() == "--xla_cpu_max_isa=AVX2"


def test_a_fast_compiled_run_records_its_flags_and_meets_its_receipt_within_seed_error(tmp_path):
  """A fresh process with XLA's default code, as a user starts it: the run's provenance names the
  flags, and `verify` matches it in seed mode (its last bits are not the receipt's code's)."""
  workdir = tmp_path / "fast"
  env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "NPROC")}
  env["PYTHONPATH"] = str(receipts.REPO)
  run = subprocess.run([sys.executable, "-m", "launch.main", "run", "configs/hidden_gems.py:smoke", "--workdir",
                        str(workdir), "--fast-compile"], env=env, capture_output=True, text=True, timeout=600,
                       cwd=receipts.REPO)
  assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
  made = json.loads((workdir / "provenance.json").read_text())
  assert made["xla_codegen"] == list(codegen.FAST) and "--fast-compile" in made["command"]
  result = receipts.verify(workdir)
  assert result.match == "seed" and "xla_codegen" in result.note and result.ok, result.table()


def test_fast_compile_after_jax_started_is_refused_in_one_line(tmp_path, capsys):
  jax.devices()
  code = launch.main(["run", "configs/hidden_gems.py:smoke", "--workdir", str(tmp_path / "w"), "--fast-compile"])
  err = capsys.readouterr().err.strip()
  assert code == 2 and "--fast-compile" in err and "has started" in err and err.count("\n") == 0
  assert not (tmp_path / "w").exists()
