"""Made-up worlds the developmental tests train learners on (imported by the test files)."""

from __future__ import annotations

import numpy as np

from jaxlab.developmental import batch as batch_lib


def noisy_push(dims, rng, n_runs, n_env, action):
  """Transitions of a made-up stage-2 world: a push moves object 0 by 0.1 action[0] m, and where
  action[1] > 0 the object also jumps to a random height (an unpredictable outcome)."""
  objects = np.zeros((n_runs, n_env, dims.objects, 13), np.float32)
  objects[..., 3] = 1.0
  nxt = objects.copy()
  nxt[..., 0, 0] += 0.1 * action[..., 0]
  noisy = action[..., 1] > 0
  nxt[..., 0, 2] += np.where(noisy, rng.normal(0, 0.2, noisy.shape), 0.0)
  shape = (n_runs, n_env)
  return batch_lib.Batch(objects=objects, next=nxt, mask=np.ones(shape + (dims.objects,), bool),
                         context=np.zeros(shape + (dims.context,), np.float32), hand=np.zeros(shape + (6,), np.float32),
                         action=action.astype(np.float32), stage=np.ones(shape, np.int32),
                         broken=np.zeros(shape + (dims.objects,), bool),
                         contact=np.zeros(shape + (dims.objects,), bool),
                         valid=np.ones(shape, bool), material=np.zeros(shape + (dims.objects,), np.int32))
