"""Developmental physics: environment-steps per second of both physics backends on the same scenes.

  python benchmarks/developmental.py --size tiny --json out.json   # C engine only, seconds
                                                                   # (MJX compiles for minutes on CPU)
  python benchmarks/developmental.py                               # CPU: C 256 envs, MJX 64 (minutes on 2 cores)
  python benchmarks/developmental.py --size gpu                    # 8,192 envs each (MJX on the accelerator)

Stage 1 (drop: a sphere, a box and a capsule dropped onto the floor) and stage 3 (stack: three boxes
and the hand) run on MuJoCo's C engine (mujoco.rollout, one thread per core) and on MJX (jitted,
vmapped, envs sharded over every device) from the same seed, so both step the same scenes.
An env-step is one physics step (config.timestep) of one env; an interaction is
steps_per_interaction of them. Setup and compilation are timed apart and not counted.
The whole play-and-learn loop's interactions per second are in a run's timing.json and
train_log.jsonl (docs/developmental.md).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

# backend -> (envs, timed interactions); None: not measured at that size
SIZES = {"tiny": dict(c=(8, 1), mjx=None), "cpu": dict(c=(256, 3), mjx=(64, 1)),
         "gpu": dict(c=(8192, 2), mjx=(8192, 5))}
SCENES = ((0, "stage 1 drop"), (2, "stage 3 stack"))


def measure(backend: str, stage: int, n: int, interactions: int) -> tuple[float, float]:
  """(env-steps per second, seconds of setup and compilation)."""
  from jaxlab.physics import make_sim
  t0 = time.perf_counter()
  sim = make_sim(stage, n, backend=backend, seed=0)
  actions = np.random.default_rng(0).uniform(-1, 1, (interactions + 1, n, 3)).astype(np.float32)
  sim.act(actions[0])                     # compiles (MJX); warms the thread pool (C)
  setup = time.perf_counter() - t0
  t0 = time.perf_counter()
  for a in actions[1:]:
    t = sim.act(a)
  seconds = time.perf_counter() - t0
  assert t.valid.mean() > 0.9, f"{backend} stage {stage}: only {t.valid.mean():.0%} of envs stayed sane"
  return n * sim.spec.steps_per_interaction * interactions / seconds, setup


def main():
  args = common.start(__doc__, SIZES, lambda p: p.add_argument("--json", help="also write the figures here"))
  import jax
  size = SIZES[args.size]
  devices = f"{jax.device_count()} x {jax.devices()[0].platform}"
  print(f"devices: {devices}")
  rows = []
  for stage, name in SCENES:
    for backend in ("c", "mjx"):
      if size[backend] is None:
        continue
      n, interactions = size[backend]
      rate, setup = measure(backend, stage, n, interactions)
      rows.append({"scene": name, "backend": backend, "envs": n, "env_steps_per_s": rate, "setup_s": setup})
      print(f"{name:14s} {backend:3s} {n:6d} envs: {rate:12,.0f} env-steps/s  (setup + compile {setup:.1f} s)",
            flush=True)
  if args.json:
    Path(args.json).write_text(json.dumps({"benchmark": "developmental", "size": args.size, "devices": devices,
                                           "unit": "env-steps/s", "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
  main()
