"""The learner population on the runs mesh, for the host loop of the C backend (play.py).

Every program here is the per-run function of learner.Learner, vmapped over the runs axis and run
under `shard_map` over core.mesh's `runs` axis: the population's state stays on the devices,
sharded by run, between rounds (only observations, actions and small metrics cross to the host,
where MuJoCo's C engine steps the envs). Rows are padded to whole rows per device with copies of
row 0 (core.mesh.pad_rows); padded runs compute and are dropped.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxlab.core import mesh as mesh_lib
from jaxlab.developmental.learner import Clock, Learner


class Population:
  """n runs of one Learner, sharded over `mesh` (default: every device of every process)."""

  def __init__(self, learner: Learner, n: int, mesh=None):
    self.learner, self.n = learner, n
    self.mesh = mesh or mesh_lib.make_mesh()
    self.size = mesh_lib.padded_size(n, self.mesh)
    rows, shared = P(mesh_lib.AXIS), P()
    program = functools.partial(jax.shard_map, mesh=self.mesh, check_vma=False)
    self._init = jax.jit(program(jax.vmap(learner.init, in_axes=(0, None)), in_specs=(rows, shared), out_specs=rows))
    self._act = jax.jit(program(jax.vmap(learner.act), in_specs=rows, out_specs=rows))
    self._learn = jax.jit(program(jax.vmap(learner.learn, in_axes=(0, 0, 0, None, 0)),
                                  in_specs=(rows, rows, rows, shared, rows), out_specs=rows), donate_argnums=0)
    self._evaluate = jax.jit(program(jax.vmap(learner.evaluate, in_axes=(0, None)), in_specs=(rows, shared),
                                     out_specs=rows))
    self._heldout = jax.jit(program(jax.vmap(learner.heldout, in_axes=(0, None)), in_specs=(rows, shared),
                                    out_specs=rows))
    self._monitor = jax.jit(program(jax.vmap(learner.monitor, in_axes=(0, None)), in_specs=(rows, shared),
                                    out_specs=rows), donate_argnums=0)

  def rows(self, tree):
    """Host rows of the n runs -> padded global arrays sharded by run."""
    return mesh_lib.shard_rows(mesh_lib.pad_rows(tree, self.size), self.mesh)

  def host(self, tree):
    """Sharded rows -> NumPy of the n real runs, on every process."""
    return jax.tree.map(lambda x: x[:self.n], mesh_lib.gather_rows(tree))

  def _keys(self, keys):
    """Typed keys cross as their raw data (NumPy has no key dtype)."""
    return jax.random.wrap_key_data(self.rows(np.asarray(jax.random.key_data(keys))))

  def init(self, keys, scale):
    """The initial state of the runs, one key each; `scale` [stages, 13] is shared."""
    return self._init(self._keys(keys), scale)

  def act(self, state, obs, keys, flags):
    """(actions [n, envs, A], scores [n, envs]) as NumPy; `flags` are rows (self.rows(flags))."""
    return self.host(self._act(state, self.rows(obs), self._keys(keys), flags))

  def learn(self, state, batch, keys, clock: Clock, flags):
    """(new state, per-run metrics as NumPy); the old state is donated."""
    state, metrics = self._learn(state, self.rows(batch), self._keys(keys), clock, flags)
    return state, self.host(metrics)

  def evaluate(self, state, batch):
    return self.host(self._evaluate(state, batch))

  def heldout(self, state, heldout):
    return self.host(self._heldout(state, heldout))

  def monitor(self, state, monitor):
    """The state with every stage's monitor error folded into its curriculum (the old state is donated)."""
    return self._monitor(state, monitor)
