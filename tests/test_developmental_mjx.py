"""The developmental experiment end to end on the MJX backend: the fused program (act -> MJX
physics -> learn in lax.scan) run by `jaxlab run` on CPU. Its compilation takes minutes on CPU,
hence a file of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from jaxlab import physics
from jaxlab.core import results
from jaxlab.core.config import load
from jaxlab.developmental import experiment

ROOT = Path(__file__).resolve().parents[1]
SMOKE = f"{ROOT / 'configs' / 'developmental.py'}:smoke"


def test_mjx_smoke_end_to_end(tmp_path):
  """The smoke config on the fused MJX program (CPU), one chunk of its episodes (the program is
  the same for every chunk; its compilation is most of this test's time). Its trace builds every
  stage's MJX model inside shard_map: the models must be built eagerly (test_physics: a later
  MjxSim still works)."""
  config = load(SMOKE, validate=experiment.validate)
  chunk = f"--config.play.episodes={config.play.episodes_per_chunk}"
  # In a process of its own (this session's devices, flags and compilation cache): a crash in native
  # code then fails this test with its stack instead of ending the test worker.
  done = subprocess.run([sys.executable, "-m", "launch.main", "run", SMOKE, "--workdir", str(tmp_path),
                         "--config.backend=mjx", chunk], env={**os.environ, "PYTHONPATH": str(ROOT)},
                        capture_output=True, text=True, timeout=1500)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
  _, table, res = results.load(tmp_path)
  assert np.isfinite(res["eval_stage"]).all() and np.isfinite(res["loss_world"]).all()
  assert res["valid"].mean() > 0.95
  fixed = table["regime"] == list(config.regimes).index("fixed_order")
  assert (np.sort(np.unique(res["stage"][fixed])) == np.arange(len(physics.STAGES))).all()
  summary = json.loads((tmp_path / "summary.json").read_text())
  assert set(summary["headline"]["regimes"]) == set(config.regimes)
