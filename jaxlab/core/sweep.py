"""Chunked sweeps that save with Orbax after every chunk and resume by themselves.

`run_chunked` cuts the runs table into chunks of a fixed size (the last one padded, so a whole
sweep compiles once), maps each chunk over the mesh, and after each chunk saves the results so
far to `workdir/checkpoints`; `scan_chunked` does the same for a state carried over steps. Both
save through `checkpoint.Checkpoints`, the one Orbax mechanism of the codebase: results and state as
pytrees saved under their own names, the sweep's fingerprint and progress as JSON metadata.
Started again on the same workdir a loop restores the latest step and goes on from the next
chunk. Each run's randomness comes from its own key, so a resumed sweep returns exactly what an
uninterrupted one returns.

Restore order: the metadata first (its fingerprint must match: a workdir holds one sweep, and a
different config raises `checkpoint.CheckpointMismatch`, never a silent mix), which says where the
loop stands, then the results (and the carried state, read into the caller's structure).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from jaxlab.core import checkpoint, mesh as mesh_lib, train
from jaxlab.core.checkpoint import fingerprint


class Chunks:
  """What both chunked loops share: one `checkpoint.Checkpoints` per loop (each chunk's results as a
  named pytree, the sweep's fingerprint and the chunk count as JSON metadata), the progress bar
  and progress.jsonl (process 0 only)."""

  def __init__(self, workdir: Path, folder: str, key: str, total: int, desc: str):
    self.workdir, self.key, self.total, self.desc = Path(workdir), key, total, desc
    self.ckpt = checkpoint.Checkpoints(self.workdir / folder, key)
    self.meta = None

  def restore(self, target=None):
    """The latest chunk's pytree, or None before the first save; its metadata goes to `self.meta`.

    The fingerprint is checked first (`checkpoint.CheckpointMismatch` when another sweep made the
    folder). With `target` (a pytree of NumPy arrays) the save is read into its structure and
    dtypes; without, as the dicts of NumPy arrays it was saved as.
    """
    self.meta = self.ckpt.meta()
    if self.meta is None:
      return None
    tree, _ = self.ckpt.restore(target)
    return tree

  def __call__(self, initial: int):
    lead = jax.process_index() == 0
    self.log = (self.workdir / "progress.jsonl").open("a") if lead else None
    self.bar = tqdm(total=self.total, initial=initial, desc=self.desc, unit="chunk", disable=not lead)
    return self

  def __enter__(self):
    return self

  def save(self, c: int, t0: float, tree, **record) -> None:
    """Saves chunk `c` (0-based): `tree` as named state, `record` (JSON) beside the fingerprint."""
    self.ckpt.save(c, tree, chunk=c + 1, of=self.total, **record)
    self.bar.update(1)
    if self.log:
      self.log.write(json.dumps({"chunk": c + 1, "of": self.total, **record,
                                 "seconds": round(time.perf_counter() - t0, 3)}) + "\n")
      self.log.flush()

  def __exit__(self, *exc):
    self.bar.close()
    if self.log:
      self.log.close()
    self.ckpt.close()


def run_chunked(fn: Callable, runs, workdir, chunk_size: int, *, key: str, desc: str = "runs",
                mesh=None, block: int = 32):
  """Maps batched `fn` over the rows of `runs` chunk by chunk, checkpointed; returns NumPy outputs.

  `key` identifies the sweep (use `fingerprint(config, runs)`): a checkpoint in `workdir` made by
  another sweep raises `checkpoint.CheckpointMismatch` instead of being mixed in. Chunks are rounded
  up to whole blocks per device (see `mesh.map_runs`).
  """
  mesh = mesh or mesh_lib.make_mesh()
  workdir = Path(workdir)
  n = len(jax.tree.leaves(runs)[0])
  chunk = mesh_lib.padded_size(min(chunk_size, n), mesh, block)
  n_chunks = -(-n // chunk)
  chunks = Chunks(workdir, "checkpoints", key, n_chunks, desc)
  saved = chunks.restore()
  start = 0 if saved is None else chunks.meta["chunk"]
  parts = [] if saved is None else [saved]
  with chunks(start):
    for c in range(start, n_chunks):
      t0 = time.perf_counter()
      rows = jax.tree.map(lambda x: np.asarray(x)[c * chunk:(c + 1) * chunk], runs)
      real = len(jax.tree.leaves(rows)[0])
      out = mesh_lib.map_runs(fn, mesh_lib.pad_rows(rows, chunk), mesh, block)
      parts = [jax.tree.map(lambda *xs: np.concatenate(xs), *parts, jax.tree.map(lambda x: x[:real], out))]
      chunks.save(c, t0, parts[0], rows=int(min(n, (c + 1) * chunk)))
  return parts[0]


def sweep(config, fn: Callable, table: dict, inputs: dict, workdir):
  """`run_chunked` as experiments call it: keyed by the config and its runs table, chunked by
  `config.chunk_size`, blocks of `config.block` rows (32 when the config has none)."""
  return run_chunked(fn, inputs, workdir, config.chunk_size, key=fingerprint(config.to_dict(), table),
                     desc=f"{config.experiment}:{config.variant}", block=config.get("block", 32))


@functools.lru_cache(maxsize=None)
def _scan_program(step_fn: Callable, chunk: int, n_steps: int):
  """A batched function of {"state", "t0"} rows that scans `chunk` steps from t0: long-lived, so
  `mesh.map_runs` compiles it once per (step_fn, chunk, n_steps)."""
  def program(rows):
    def body(state, t):
      new, out = step_fn(state, t)
      # Steps past n_steps (the last chunk's tail) leave the state alone, so every chunk has
      # one shape and the sweep compiles once; their outputs are cut off on the host.
      new = jax.tree.map(lambda a, b: jnp.where(t < n_steps, a, b), new, state)
      return new, out
    steps = rows["t0"][0] + jnp.arange(chunk, dtype=jnp.int32)  # every row of a call shares t0
    state, out = jax.lax.scan(body, rows["state"], steps)
    return {"state": state, "out": jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)}
  return program


def scan_chunked(step_fn: Callable, state, n_steps: int, chunk: int, workdir, *, key: str,
                 desc: str = "steps", mesh=None, block: int = 32, stop_after: int | None = None,
                 checkpoints: str = "checkpoints"):
  """Runs `state, out = step_fn(state, t)` for t = 0 .. n_steps - 1 on every row, checkpointed.

  `state` is a pytree of arrays whose leading axis is the runs axis (PRNG keys as raw key data);
  `step_fn` maps a batch of rows and a scalar step index to the new batch state and a dict of
  per-row outputs. Steps run `chunk` at a time as one jitted `lax.scan`, sharded over the mesh
  by `mesh.map_runs`; after each chunk the carried state and the outputs so far are saved with
  Orbax, and a call on the same workdir restores them and goes on from the next chunk, so the
  result is bitwise what an uninterrupted call returns. `stop_after` ends this call after that
  many chunks, saved, by raising `train.Stopped` (a job's time limit; the tests' interruption).

  Returns (final state, outputs with shape (rows, n_steps, ...)) as NumPy. `key` identifies the
  sweep as in `run_chunked`. Restore order: fingerprint and steps done (metadata), then the state,
  read by name into `state`'s structure and dtypes, and the outputs. `checkpoints` is the Orbax folder
  under `workdir` (several scans of one experiment, e.g. row kinds with different states, each
  get their own).
  """
  mesh = mesh or mesh_lib.make_mesh()
  workdir = Path(workdir)
  chunk = max(1, min(chunk, n_steps))
  n_chunks = -(-n_steps // chunk)
  n_rows = len(jax.tree.leaves(state)[0])
  state = jax.tree.map(np.asarray, state)
  outputs, done = None, 0
  chunks = Chunks(workdir, checkpoints, key, n_chunks, desc)
  saved = chunks.restore()
  if saved is not None:
    # The saved state is read back into the caller's structure, by name; outputs come as saved.
    done = chunks.meta["steps"]
    state = chunks.restore({"state": state, "outputs": saved["outputs"]})["state"]
    outputs = saved["outputs"]
  program = _scan_program(step_fn, chunk, n_steps)
  ran = 0
  with chunks(done // chunk):
    for c in range(done // chunk, n_chunks):
      if stop_after is not None and ran >= stop_after:
        break
      t0 = time.perf_counter()
      rows = {"state": state, "t0": np.full(n_rows, c * chunk, np.int32)}
      result = mesh_lib.map_runs(program, rows, mesh, block)
      state = result["state"]
      done = min(n_steps, (c + 1) * chunk)
      new = jax.tree.map(lambda x: x[:, :done - c * chunk], result["out"])
      outputs = new if outputs is None else jax.tree.map(lambda a, b: np.concatenate([a, b], 1), outputs, new)
      chunks.save(c, t0, {"state": state, "outputs": outputs}, steps=done)
      ran += 1
  if done < n_steps:
    raise train.Stopped(f"{desc} stopped after {done} of {n_steps} steps (stop_after); the same command resumes")
  return state, outputs
