"""The one training loop of every host-driven gradient run, and what it is made of.

`fit(loop, state, workdir, fingerprint)` runs a `Loop`: the experiment supplies its state (a
pytree of arrays: parameters and optimizer state), a jitted step that owns its batch (`step(state,
s)`: the batch of step s is a function of the seed and s, so a resumed run repeats it), an
evaluation (`evaluate(state, done, window)` -> a JSON record, given every step's scalars since the
last evaluation) with its cadence, and a `best` rule (a record's score, higher is better). The
loop owns the rest, in the big_vision order: resume from the workdir's named Orbax state (the
metadata and its fingerprint first, then the state into the abstract target, then the position,
the history and the open window of step scalars), the progress bar, the metrics (JSON lines and
TensorBoard, `Metrics`), the evaluation cadence, latest and best checkpoints, the NaN stop
(`check_finite`), preemption (`Preemption`: SIGTERM is saved and ends the call) and a step limit
per call (`stop_after`). A call that ends before the last step saves where it stands and raises
`Stopped`: the one stop path, which `jaxlab run` reports in one line; the same command resumes,
and a resumed run ends bitwise where an uninterrupted one does.

Used by base-model pretraining (`jaxlab.lm_pretrain.train`), encoder pretraining
(`jaxlab.paging.pretrain`) and pager fine-tuning (`jaxlab.paging.train`). Fully jitted learners
whose whole run is one `lax.scan` over chunks (the developmental learner, the evolutionary sweeps)
use `core.sweep.scan_chunked` instead.

**Metrics.** `Metrics(workdir, name)` writes scalars as JSON lines (`workdir/name.jsonl`) and as
TensorBoard event files (`workdir/tb/`, tensorboardX: no TensorFlow), from process 0 only, so
`tensorboard --logdir WORKDIR` shows loss, learning rate, throughput and evaluations.

**Stops.** `check_finite` raises `FloatingPointError` naming the step and the values when loss or
gradient norm is not finite (before anything is saved). `Preemption` turns SIGTERM (what SLURM
and cloud schedulers send before a kill) into a flag the loop polls.
"""

from __future__ import annotations

import dataclasses
import json
import math
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np
from tqdm.auto import tqdm

from jaxlab.core import checkpoint


def _flatten(scalars: dict, prefix: str = "") -> dict:
  out = {}
  for k, v in scalars.items():
    if isinstance(v, dict):
      out.update(_flatten(v, f"{prefix}{k}/"))
    elif isinstance(v, (int, float, np.generic, jax.Array)) and not isinstance(v, bool) and np.ndim(v) == 0:
      out[f"{prefix}{k}"] = float(v)
  return out


def _summary_writer():
  """tensorboardX's SummaryWriter (imported here: only process 0 writes events), imported without
  torch: tensorboardX imports torch, where installed, only to accept torch tensors, which costs
  every process about 2 s; the values written here are Python floats."""
  if "torch" in sys.modules or "tensorboardX" in sys.modules:
    from tensorboardX import SummaryWriter
    return SummaryWriter
  sys.modules["torch"] = None   # `import torch` raises ImportError, which tensorboardX catches
  try:
    from tensorboardX import SummaryWriter
  finally:
    del sys.modules["torch"]
  return SummaryWriter


class Metrics:
  """Scalars as JSON lines (`workdir/name.jsonl`) and TensorBoard events (`workdir/tb/`), process 0.

  `write(step, **values)` takes numbers and nested dicts of numbers (written to TensorBoard as
  `outer/inner`); other values (strings, lists) go to the JSON line only.
  """

  def __init__(self, workdir, name: str = "train_log"):
    self.lead = jax.process_index() == 0
    self.log = self.tb = None
    if self.lead:
      workdir = Path(workdir)
      workdir.mkdir(parents=True, exist_ok=True)
      self.log = (workdir / f"{name}.jsonl").open("a")
      self.tb = _summary_writer()(str(workdir / "tb"), flush_secs=30)

  def write(self, step: int, **values) -> None:
    if not self.lead:
      return
    self.log.write(json.dumps(checkpoint.jsonable({"step": int(step), **values})) + "\n")
    self.log.flush()
    for tag, value in _flatten(values).items():
      self.tb.add_scalar(tag, value, int(step))

  def close(self) -> None:
    if self.lead:
      self.log.close()
      self.tb.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


def check_finite(step: int, hint: str = "", **values) -> None:
  """Raises FloatingPointError naming the step and every value when one is NaN or infinite."""
  values = {k: float(v) for k, v in values.items()}
  if all(math.isfinite(v) for v in values.values()):
    return
  shown = ", ".join(f"{k}={v}" for k, v in values.items())
  raise FloatingPointError(f"training diverged at step {step}: {shown}; nothing from this step was saved."
                           f"{' ' + hint if hint else ''}")


class Preemption:
  """A context in which SIGTERM sets `.requested` instead of killing the process, so a loop can
  save and return; outside the main thread (where signals cannot be caught) it never fires."""

  def __init__(self):
    self.requested = False
    self._old = None

  def _handle(self, signum, frame):
    self.requested = True

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._old = signal.signal(signal.SIGTERM, self._handle)
    return self

  def should_stop(self) -> bool:
    """Whether any process was asked to stop (every process must call it at the same steps)."""
    if jax.process_count() == 1:
      return self.requested
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.array(self.requested))))

  def __exit__(self, *exc):
    if self._old is not None:
      signal.signal(signal.SIGTERM, self._old)


class Stopped(Exception):
  """A run ended before its last step (SIGTERM, or its per-call step limit) and saved where it
  stood; the same command resumes it. `result`: where it stood (a `Result`)."""

  def __init__(self, message: str, result=None):
    super().__init__(message)
    self.result = result


class Unfinished(RuntimeError):
  """A `fit(..., restore_only=True)` found a run that has not reached its last step (or never
  started): reading its result back would need training, which that call must not do."""


BEST = "score"   # the checkpoint metric the best step is kept by


@dataclasses.dataclass
class Loop:
  """What an experiment hands `fit`: its step, its evaluation and their cadences."""
  step: Callable[[Any, int], tuple[Any, dict]]   # (state, s) -> (state after step s, scalars)
  total: int                                     # steps of the whole run
  evaluate: Callable[[Any, int, list], dict] | None = None   # (state, done, window) -> JSON record
  eval_every: int = 0          # evaluate every this many steps and at the last (0: at the last only)
  eval_at_start: bool = False  # also evaluate a fresh run's initial state (step 0)
  best: Callable[[dict], float] | None = None    # a record's score; keeps the best step's state too
  save_every: int = 0          # checkpoints between evaluations (0: at evaluations and stops only)
  log_every: int = 0           # step scalars to the metrics every this many steps (0: never)
  poll_every: int = 1          # steps between preemption polls (a collective on several processes)
  stop_after: int = 0          # steps one call may run (a job's time limit; 0: no limit)
  name: str = "train"          # the progress bar's label and the message of a stop
  log_name: str = "train_log"  # the metrics file (`WORKDIR/{log_name}.jsonl`)
  folder: str = "checkpoints"  # the Orbax folder under the workdir
  diverged_hint: str = ""      # what to change when the loss turns NaN
  shown: tuple = ("loss",)     # step scalars on the progress bar


@dataclasses.dataclass
class Result:
  state: Any         # after the last step run
  best: Any          # the best evaluation's state (with `Loop.best`; else the last state)
  history: list      # every evaluation's record, this call's and the resumed ones'
  start: int         # the step this call began at (> 0 when it resumed)
  scalars: list      # every step's scalars of this call

  @property
  def step(self) -> int:
    """The step this call ended at."""
    return self.start + len(self.scalars)


def _host(scalars: dict) -> dict:
  return {k: (float(v) if np.ndim(v) == 0 and not isinstance(v, (str, bool)) else v) for k, v in scalars.items()}


def fit(loop: Loop, state, workdir, fingerprint: str, target=None, restore_only: bool = False) -> Result:
  """Runs `loop` from the workdir's latest checkpoint, or from `state`, to `loop.total` steps.

  `state`: the initial state, or a function that makes it (called only when there is no checkpoint
  to resume: a large model is then never built twice). `target`: the abstract state a checkpoint
  is read into (`checkpoint.abstract_like` with the state's shardings; default: `state`'s own).
  `restore_only`: read a finished run's result back; no step runs and nothing is written to the
  workdir (no metrics, no checkpoint), and a run short of its last step raises `Unfinished`.
  Raises `Stopped` when this call ends first (after saving), `checkpoint.CheckpointMismatch` when
  the workdir holds another run's checkpoints, `FloatingPointError` when a step's loss or gradient
  norm is not finite (nothing of it saved).
  """
  workdir = Path(workdir)
  if restore_only and not (workdir / loop.folder).is_dir():  # checked first: the manager would create it
    raise Unfinished(f"{workdir} has no {loop.folder}/: {loop.name} training never started there, so there is "
                     "nothing to restore")
  with checkpoint.Checkpoints(workdir / loop.folder, fingerprint, best=BEST if loop.best else None) as ckpt:
    if restore_only:
      latest = ckpt.latest_step()
      if latest is None or latest < loop.total:
        raise Unfinished(f"{loop.name} training in {workdir} is at step {latest or 0} of {loop.total}; finish it "
                         "with the `jaxlab run` command that started it")
      state = state() if callable(state) else state
      target = checkpoint.abstract_like(state) if target is None else target
      last, meta = ckpt.restore(target)
      best = ckpt.restore(target, step=ckpt.best_step())[0] if loop.best else last
      return Result(last, best, meta.get("history", []), latest, [])
    history, window, start = [], [], 0
    if target is None:
      state = state() if callable(state) else state
      target = checkpoint.abstract_like(state)
    if ckpt.latest_step() is not None:
      state, meta = ckpt.restore(target)
      start, history, window = int(meta["step"]), meta.get("history", []), meta.get("window", [])
    elif callable(state):
      state = state()
    end = loop.total if not loop.stop_after else min(loop.total, start + loop.stop_after)
    eval_every = loop.eval_every or loop.total
    lead = jax.process_index() == 0
    metrics = Metrics(workdir, loop.log_name)
    bar = tqdm(total=loop.total, initial=start, desc=loop.name, unit="step", disable=not lead)
    scalars, t_start = [], time.perf_counter()

    def save(done, score):
      ckpt.save(done, state, metrics={BEST: score} if loop.best else None, history=history, window=window)

    def evaluate(done):
      record = loop.evaluate(state, done, window)
      window.clear()
      history.append(record)
      metrics.write(done, **{k: v for k, v in record.items() if k != "step"},
                    elapsed_s=round(time.perf_counter() - t_start, 1))
      if lead:
        bar.write(json.dumps(checkpoint.jsonable(record)))
      save(done, loop.best(record) if loop.best else None)

    done = start
    try:
      with Preemption() as preemption:
        if start == 0 and loop.eval_at_start and loop.evaluate and not history:
          evaluate(0)
        for s in range(start, end):
          state, out = loop.step(state, s)
          out = _host(out)
          check_finite(s + 1, loop.diverged_hint, **{k: out[k] for k in ("loss", "grad_norm") if k in out})
          scalars.append(out)
          window.append(out)
          done = s + 1
          bar.update(1)
          bar.set_postfix({k: (f"{out[k]:.3f}" if isinstance(out[k], float) else out[k])
                           for k in loop.shown if k in out})
          if loop.log_every and (done % loop.log_every == 0 or done == end):
            metrics.write(done, **out, elapsed_s=round(time.perf_counter() - t_start, 1))
          evaluated = loop.evaluate is not None and (done % eval_every == 0 or done == loop.total)
          if evaluated:
            evaluate(done)
          stop = done % loop.poll_every == 0 and preemption.should_stop()
          if not evaluated and (stop or done == end or (loop.save_every and done % loop.save_every == 0)):
            save(done, -math.inf)   # between evaluations: the latest step, never the best
          if stop:
            break
    finally:
      bar.close()
      metrics.close()
    if done < loop.total:
      raise Stopped(f"{loop.name} stopped at step {done} of {loop.total} "
                    f"({'SIGTERM' if done < end else 'its per-call step limit'}); the same command resumes",
                    Result(state, state, history, start, scalars))
    best = ckpt.restore(target, step=ckpt.best_step())[0] if loop.best else state
  return Result(state, best, history, start, scalars)
