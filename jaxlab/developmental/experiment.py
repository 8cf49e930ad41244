"""Developmental physics as a jaxlab experiment: validate the config, play, evaluate, report.

run(config, workdir):
  1. scenes nobody trains on: one random-action episode per stage for calibrating the units of
     state changes, another for held-out evaluation (evaluation.py);
  2. play: every regime x seed in lockstep on the same environment-step budget, checkpointed per
     chunk of episodes (play.py);
  3. the violation-of-expectation probes on the final world models;
  4. runs.npz, then report(): summary.json, report.md and the plots.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxlab import physics
from jaxlab.core import results
from jaxlab.core.config import ConfigError, require, require_int
from jaxlab.developmental import analysis, curiosity, curriculum, evaluation, learner, play, plots, world_model
from jaxlab.developmental.batch import Dims
from jaxlab.physics import probes

CALIBRATION = 3     # scene-seed stream of the calibration episode (play.py has 0 train, 1 held-out, 2 probes)


def _positive(v):
  return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _tuple_of(n, ok):
  return lambda v: isinstance(v, (tuple, list)) and len(v) == n and all(map(ok, v))


def validate(config) -> None:
  n_stages = len(physics.STAGES)
  require_int(config, "seed", 0)
  require_int(config, "seeds", 1)
  require_int(config, "stop_after", 0, "chunks to play in this call; 0: all")
  require(config, "regimes", lambda v: len(v) > 0 and len(set(v)) == len(v) and set(v) <= set(curiosity.REGIMES),
          f"distinct names from {tuple(curiosity.REGIMES)}")
  require(config, "backend", lambda v: v in ("c", "mjx"), "'c' (MuJoCo's C engine) or 'mjx'")
  require_int(config, "play.envs", 1)
  require_int(config, "play.episode_rounds", 1)
  require_int(config, "play.episodes", n_stages, "the fixed-order schedule gives every stage an episode")
  require_int(config, "play.episodes_per_chunk", 1)
  require_int(config, "play.eval_every", 1)
  require(config, "play.eval_every", lambda v: config.play.episodes % v == 0, "a divisor of play.episodes")
  require_int(config, "learner.replay_size", config.play.envs)
  require(config, "learner.replay_size", lambda v: v % config.play.envs == 0, "a multiple of play.envs")
  require_int(config, "learner.replay_batch", 1)
  require_int(config, "learner.updates_per_round", 1)
  require(config, "learner.lag", lambda v: 0 <= v < 1, "in [0, 1)")
  for field in ("hidden", "depth", "surprise_hidden"):
    require_int(config, f"model.{field}", 1)
  for field in ("input_scale", "delta_floor"):
    require(config, f"model.{field}", _tuple_of(4, _positive),
            "four positive numbers (position, orientation, velocity, angular velocity)")
  require(config, "model.event_weight", lambda v: v >= 0, "non-negative")
  for field in ("learning_rate", "clip_norm"):
    require(config, f"model.{field}", _positive, "positive")
  require_int(config, "curiosity.candidates", 1)
  require(config, "curiosity.score", lambda v: v in curiosity.SCORES, f"one of {curiosity.SCORES}")
  require(config, "curiosity.temperature", lambda v: v >= 0, "non-negative (0: argmax)")
  require(config, "curriculum.threshold", _tuple_of(n_stages, lambda x: x >= 0),
          f"{n_stages} non-negative errors, one per stage {physics.STAGES}")
  require(config, "curriculum.plateau", lambda v: isinstance(v, float), "a number (relative error decrease)")
  for field in ("fast", "slow"):
    require(config, f"curriculum.{field}", lambda v: 0 < v <= 1, "an EMA rate in (0, 1]")
  require_int(config, "curriculum.min_episodes", 1)
  require_int(config, "eval.heldout_envs", 1)
  require_int(config, "eval.probe_pairs", 2)
  require(config, "eval.probes", lambda v: set(v) <= set(probes.KINDS), f"names from {probes.KINDS}")
  require_int(config, "eval.bootstrap", 100)
  require_int(config, "render.episodes", 0)
  require_int(config, "render.rounds", 1)
  physics_config(config)


def physics_config(config):
  try:
    return physics.PhysicsConfig.from_section(config.physics)
  except ConfigError:
    raise
  except (TypeError, ValueError) as e:
    raise ConfigError("physics", str(e)) from None


def learner_config(config) -> learner.LearnerConfig:
  tup = lambda d: {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in d.items()}
  return learner.LearnerConfig(model=world_model.ModelConfig(**tup(config.model.to_dict())),
                               curiosity=curiosity.CuriosityConfig(**config.curiosity.to_dict()),
                               curriculum=curriculum.CurriculumConfig(**tup(config.curriculum.to_dict())),
                               **config.learner.to_dict())


def runs_table(config) -> dict:
  """One row per run: regime index (into config.regimes) and seed index, regimes outermost."""
  n_r = len(config.regimes)
  return {"regime": np.repeat(np.arange(n_r), config.seeds).astype(np.int32),
          "seed": np.tile(np.arange(config.seeds), n_r).astype(np.int32)}


def scenes(config, pcfg):
  """(stage specs, padded dims, calibration episodes, held-out episodes): every stage, random actions."""
  sims = [physics.make_sim(s, config.eval.heldout_envs, backend=config.backend,
                           seed=play.scene_seed(config.seed, play.HELDOUT, s), config=pcfg)
          for s in range(len(physics.STAGES))]
  specs = [sim.spec for sim in sims]
  dims = Dims.of(specs, len(physics.MATERIALS))
  rng = np.random.default_rng(config.seed)
  episodes = {stream: evaluation.scene_set(lambda s: sims[s], range(len(sims)), config.play.episode_rounds, dims,
                                           lambda s: play.scene_seed(config.seed, stream, s), rng)
              for stream in (CALIBRATION, play.HELDOUT)}
  return specs, dims, episodes[CALIBRATION], episodes[play.HELDOUT]


def run(config, workdir):
  workdir = Path(workdir)
  pcfg = physics_config(config)
  specs, dims, calibration, heldout = scenes(config, pcfg)
  lcfg = learner_config(config)
  scale = world_model.delta_scale(calibration, dims.stages, lcfg.model)
  progs = learner.programs(dims, lcfg)
  table = runs_table(config)
  policy, schedule = zip(*(curiosity.REGIMES[config.regimes[r]] for r in table["regime"]))
  game = play.Play(config, progs, specs, np.array(policy) == "curious", np.array(schedule) == "adaptive",
                   table["seed"], scale)
  worlds = play.Worlds(pcfg, config.play.envs, config.backend, config.seed)
  state, logs, done = game.run(workdir, worlds, heldout)
  if done < config.play.episodes:
    print(f"stopped after {done} of {config.play.episodes} episodes (stop_after); run again to resume")
    return None
  probe = evaluation.probe_results(progs, state, config.eval.probes, config.eval.probe_pairs,
                                   play.scene_seed(config.seed, play.PROBE), pcfg, config.backend)
  final = jax.device_get(state.curr)
  out = {**logs, **probe, "mastered_at": final.mastered_at, "scale": scale,
         "heldout_objects": heldout.objects, "heldout_next": heldout.next, "heldout_stage": heldout.stage,
         "heldout_mask": heldout.mask}
  results.save(workdir, table, out)
  return report(workdir) if jax.process_index() == 0 else None


def report(workdir):
  workdir = Path(workdir)
  config, table, res = results.load(workdir)
  summary = analysis.summarize(config, table, res)
  analysis.write(workdir, config, table, res, summary, plots.draw_all(config, table, res, workdir))
  return Path(workdir) / "report.md"
