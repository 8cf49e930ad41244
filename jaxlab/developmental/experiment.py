"""Developmental physics as a jaxlab experiment: validate the config, play, evaluate, report.

run(config, workdir):
  1. scenes nobody trains on, recorded on MuJoCo's C engine: one random-action episode per stage
     for calibrating the units of state changes, another for held-out evaluation (evaluation.py);
  2. play: every regime x seed on the same environment-step budget, in chunks of episodes, each
     chunk checkpointed (jaxlab.core.checkpoint.Checkpoints: the learner state and the logs by name,
     the fingerprint and the episodes done as metadata); the C backend's host loop (play.py) or
     the MJX backend's fused program (fused.py) plays a chunk;
  3. the violation-of-expectation probes on the final world models;
  4. runs.npz, then report(): summary.json, report.md and the plots.
Restore order: the metadata (its fingerprint must match the config), then the state and logs into
the structure of a fresh population's, then the episodes done.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import numpy as np
from tqdm.auto import tqdm

from jaxlab import physics
from jaxlab.core import checkpoint, results, train
from jaxlab.core.config import ConfigError, is_non_negative, is_positive, require, require_int, tuple_of
from jaxlab.developmental import analysis, curiosity, curriculum, distractor, evaluation, learner, plots, world_model
from jaxlab.developmental import keys as keys_lib
from jaxlab.developmental.batch import Dims
from jaxlab.developmental.population import Population
from jaxlab.physics import api, probes

ROUND_LOGS = ("surprise", "loss_world", "loss_self", "valid", "score")


def validate(config) -> None:
  n_stages = len(physics.STAGES)
  require_int(config, "seed", 0)
  require_int(config, "seeds", 1)
  require_int(config, "stop_after", 0, "chunks to play in this call; 0: all")
  require(config, "regimes", lambda v: len(v) > 0 and len(set(v)) == len(v) and set(v) <= set(curiosity.REGIMES),
          f"distinct names from {tuple(curiosity.REGIMES)}")
  require(config, "backend", lambda v: v in physics.BACKENDS, "'c' (MuJoCo's C engine) or 'mjx'")
  require_int(config, "play.envs", 1)
  require_int(config, "play.episode_rounds", 1)
  require_int(config, "play.episodes", n_stages, "the fixed-order schedule gives every stage an episode")
  require_int(config, "play.eval_every", 1)
  require_int(config, "play.episodes_per_chunk", config.play.eval_every)
  require(config, "play.episodes_per_chunk", lambda v: v % config.play.eval_every == 0,
          "a multiple of play.eval_every (every chunk ends with an evaluation)")
  require(config, "play.episodes", lambda v: v % config.play.episodes_per_chunk == 0,
          "a multiple of play.episodes_per_chunk (every chunk is the same program)")
  require_int(config, "learner.replay_size", config.play.envs)
  require(config, "learner.replay_size", lambda v: v % config.play.envs == 0, "a multiple of play.envs")
  require_int(config, "learner.replay_batch", 1)
  require_int(config, "learner.updates_per_round", 1)
  if "replay" in config.learner:
    require(config, "learner.replay", lambda v: v in learner.REPLAYS, f"one of {learner.REPLAYS}")
    if config.learner.replay == "stage":
      require(config, "learner.replay_size", lambda v: v % (n_stages * config.play.envs) == 0,
              f"a multiple of {n_stages} x play.envs (one equal part per stage)")
  if "ensemble" in config.curiosity:
    require_int(config, "curiosity.ensemble", 2)
  if "bootstrap" in config.curiosity:
    require(config, "curiosity.bootstrap", lambda v: 0 < v <= 1, "a probability in (0, 1]")
  if "gamma" in config.curiosity:
    require(config, "curiosity.gamma", lambda v: 0 <= v < 1, "in [0, 1)")
  if "signal" in config.curriculum:
    require(config, "curriculum.signal", lambda v: v in curriculum.SIGNALS, f"one of {curriculum.SIGNALS}")
  if "distractor" in config:
    require(config, "distractor.share", lambda v: 0 <= v <= 1, "a share of the action space in [0, 1]")
    require(config, "distractor.noise", is_non_negative, "non-negative (units of the stage's state change)")
  require(config, "model.kind", lambda v: v in world_model.KINDS, f"one of {world_model.KINDS}")
  for field in ("hidden", "depth", "edge_hidden", "surprise_hidden"):
    require_int(config, f"model.{field}", 1)
  for field in ("input_scale", "delta_floor"):
    require(config, f"model.{field}", tuple_of(4, is_positive),
            "four positive numbers (position, orientation, velocity, angular velocity)")
  require(config, "model.event_weight", is_non_negative, "non-negative")
  for field in ("learning_rate", "clip_norm"):
    require(config, f"model.{field}", is_positive, "positive")
  require_int(config, "curiosity.candidates", 1)
  require(config, "curiosity.temperature", is_non_negative, "non-negative (0: argmax)")
  require_int(config, "curiosity.bins", 1, "learning-progress bins per action dimension")
  for field in ("alp_fast", "alp_slow"):
    require(config, f"curiosity.{field}", lambda v: is_positive(v) and v <= 1, "an EMA rate in (0, 1]")
  require(config, "curriculum.threshold", tuple_of(n_stages, is_non_negative),
          f"{n_stages} non-negative errors, one per stage {physics.STAGES}")
  require(config, "curriculum.plateau", lambda v: isinstance(v, float), "a number (relative error decrease)")
  for field in ("fast", "slow"):
    require(config, f"curriculum.{field}", lambda v: is_positive(v) and v <= 1, "an EMA rate in (0, 1]")
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
                               scores=curiosity.scores_of(config.regimes), distractor=distractor_config(config),
                               **config.learner.to_dict())


def distractor_config(config) -> distractor.DistractorConfig:
  """The config's `distractor` section (none: no distractor)."""
  return distractor.DistractorConfig(**config.distractor.to_dict()) if "distractor" in config else (
      distractor.DistractorConfig())


def round_logs(config) -> tuple[str, ...]:
  """Per-round logs: ROUND_LOGS, and with a distractor the share of each round's envs in its region."""
  return ROUND_LOGS + (("distracted",) if distractor_config(config).share > 0 else ())


def runs_table(config) -> dict:
  """One row per run: regime index (into config.regimes) and seed index, regimes outermost."""
  n_r = len(config.regimes)
  return {"regime": np.repeat(np.arange(n_r), config.seeds).astype(np.int32),
          "seed": np.tile(np.arange(config.seeds), n_r).astype(np.int32)}


def flags_of(config, table) -> curiosity.Flags:
  scores = curiosity.scores_of(config.regimes)
  curious, adaptive, score = zip(*(curiosity.flags(config.regimes[r], scores) for r in table["regime"]))
  return curiosity.Flags(np.array(curious, bool), np.array(adaptive, bool), np.array(score, np.int32))


def dims_of(pcfg):
  specs = [api.spec(s, pcfg) for s in range(len(physics.STAGES))]
  return Dims.of(specs, len(physics.MATERIALS)), tuple(s.action_dim for s in specs)


def fingerprint(config) -> str:
  """What fixes the results: the config less stop_after (a time limit, not a setting)."""
  return checkpoint.fingerprint({k: v for k, v in config.to_dict().items() if k != "stop_after"})


def empty_logs(config, n_runs: int, dims: Dims) -> dict:
  p = config.play
  rounds, evals = p.episodes * p.episode_rounds, p.episodes // p.eval_every
  logs = {k: np.zeros((n_runs, rounds), np.float32) for k in round_logs(config)}
  logs.update(stage=np.zeros((n_runs, p.episodes), np.int32),
              eval_stage=np.zeros((n_runs, evals, dims.stages), np.float32),
              eval_material=np.zeros((n_runs, evals, dims.stages, dims.materials), np.float32))
  return logs


def _fill(logs: dict, chunk: dict, first: int, config) -> None:
  """Writes a chunk's logs (runs first) into the run's logs at its episodes."""
  p = config.play
  at = {k: first * p.episode_rounds for k in round_logs(config)}
  at.update(stage=first, eval_stage=first // p.eval_every, eval_material=first // p.eval_every)
  for k, v in chunk.items():
    logs[k][:, at[k]:at[k] + v.shape[1]] = v


def play(config, workdir: Path, driver, keys, scale, dims, n_runs: int):
  """Every chunk of episodes, resuming from the workdir's checkpoint, or `stop_after` chunks of
  them; returns (host state, logs, episodes done). Its own chunk loop rather than
  `core.sweep.scan_chunked`: with the C backend MuJoCo steps on the host between jitted updates, so
  a chunk is not one jitted program (it shares the checkpoints, metrics and stop path)."""
  p = config.play
  n_chunks = p.episodes // p.episodes_per_chunk
  state, logs, done = driver.init(keys, scale), empty_logs(config, n_runs, dims), 0
  ckpt = checkpoint.Checkpoints(workdir / "checkpoints", fingerprint(config))
  if ckpt.latest_step() is not None:
    saved, meta = ckpt.restore({"learner": driver.host(state), "logs": logs})
    state, logs, done = driver.device(saved["learner"]), jax.tree.map(np.asarray, saved["logs"]), int(meta["done"])
  start = done // p.episodes_per_chunk
  per_chunk = p.episodes_per_chunk * p.episode_rounds * p.envs * n_runs      # interactions of all runs
  lead = jax.process_index() == 0
  with ckpt, train.Metrics(workdir, "train_log") as metrics, tqdm(
      total=n_chunks, initial=start, desc=f"{config.experiment}:{config.variant}", unit="chunk",
      disable=not lead) as bar:
    for c in range(start, n_chunks):
      t0 = time.perf_counter()
      first = c * p.episodes_per_chunk
      state, chunk = driver.play(state, first, p.episodes_per_chunk)
      _fill(logs, chunk, first, config)
      train.check_finite(first + p.episodes_per_chunk, loss_world=np.mean(chunk["loss_world"]),
                         hint="lower model.learning_rate or model.clip_norm")
      done = first + p.episodes_per_chunk
      ckpt.save(c, {"learner": driver.host(state), "logs": logs}, done=done)
      seconds = time.perf_counter() - t0
      metrics.write(done, seconds=seconds, interactions_per_s=per_chunk / seconds, split=driver.seconds(),
                    surprise=float(np.mean(chunk["surprise"])), loss_world=float(np.mean(chunk["loss_world"])),
                    heldout_error=float(np.nanmean(chunk["eval_stage"][:, -1])))
      bar.update(1)
      if config.stop_after and c + 1 - start >= config.stop_after:
        break
  return driver.host(state), logs, done


def run(config, workdir):
  workdir = Path(workdir)
  t_start = time.perf_counter()
  pcfg = physics_config(config)
  dims, action_dims = dims_of(pcfg)
  calibration = evaluation.scene_set(config, pcfg, dims, keys_lib.CALIBRATION)
  heldout = evaluation.scene_set(config, pcfg, dims, keys_lib.HELDOUT)
  lcfg = learner_config(config)
  scale = world_model.delta_scale(calibration, dims.stages, lcfg.model)
  table = runs_table(config)
  n_runs = len(table["seed"])
  population = Population(learner.learner(dims, lcfg, action_dims), n_runs)
  flags = flags_of(config, table)
  if config.backend == "c":   # the backend's driver only: the fused one imports MJX, which costs seconds
    from jaxlab.developmental.play import Driver
  else:
    from jaxlab.developmental.fused import Driver
  monitor = (evaluation.scene_set(config, pcfg, dims, keys_lib.MONITOR) if lcfg.curriculum.signal == "heldout"
             else None)                      # the curriculum's own held-out transitions, apart from the evaluation's
  driver = Driver(config, population, flags, table["seed"], pcfg, heldout, monitor=monitor)
  # Runs of one seed index start from the same weights (paired comparisons across regimes).
  init_keys = keys_lib.round_keys(keys_lib.root(config.seed), table["seed"], 0, keys_lib.INIT)
  t_play = time.perf_counter()
  state, logs, done = play(config, workdir, driver, init_keys, scale, dims, n_runs)
  t_played = time.perf_counter()
  driver.close()
  if done < config.play.episodes:
    raise train.Stopped(f"stopped after {done} of {config.play.episodes} episodes (stop_after); the same command "
                        "resumes")
  probe_seed = int(np.random.SeedSequence([config.seed, keys_lib.PROBE]).generate_state(1)[0])
  probe = evaluation.probe_results(population, population.rows(state), config.eval.probes, config.eval.probe_pairs,
                                   probe_seed, pcfg)
  out = {**logs, **probe, "mastered_at": state.curr.mastered_at, "scale": scale,
         "heldout_objects": heldout.objects, "heldout_next": heldout.next, "heldout_stage": heldout.stage,
         "heldout_mask": heldout.mask}
  results.save(workdir, table, out)
  if jax.process_index() == 0:
    # wall-clock figures stay out of summary.json, so two runs of one config give the same summary
    (workdir / "timing.json").write_text(json.dumps({
        "seconds_total": round(time.perf_counter() - t_start, 1), "seconds_play": round(t_played - t_play, 1),
        "interactions": int(n_runs * analysis.env_steps(config)), "backend": config.backend,
        "devices": jax.device_count()}, indent=1) + "\n")
  return report(workdir) if jax.process_index() == 0 else None


def report(workdir):
  workdir = Path(workdir)
  config, table, res = results.load(workdir)
  summary = analysis.summarize(config, table, res)
  analysis.write(workdir, config, table, res, summary, plots.draw_all(config, table, res, workdir))
  return Path(workdir) / "report.md"
