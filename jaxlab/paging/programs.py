"""Compile-once programs. Every jitted call the two systems make at evaluation (the frozen forward
over chunks, the pager's soft tokens, generation) goes through `call`, which keeps one compiled
executable per (name, static part, argument shapes, dtypes and shardings). Nothing compiles twice, and XLA's
memory account of the very program that ran is at hand for `timing` (no second compile to ask it).
"""

from __future__ import annotations

from typing import Callable, Hashable

import jax

_COMPILED: dict = {}


def _key(name: str, static: Hashable, args) -> tuple:
  # Shardings are part of the key: an executable compiled for arrays on one mesh refuses another's.
  leaves, tree = jax.tree.flatten(args)
  return name, static, tree, tuple((tuple(x.shape), str(x.dtype), str(getattr(x, "sharding", None))) for x in leaves)


def compiled(name: str, static: Hashable, fn: Callable, *args):
  """The executable of `fn(*args)` (`static` names what `fn` closes over)."""
  key = _key(name, static, args)
  if key not in _COMPILED:
    _COMPILED[key] = jax.jit(fn).lower(*args).compile()
  return _COMPILED[key]


def call(name: str, static: Hashable, fn: Callable, *args):
  return compiled(name, static, fn, *args)(*args)


def peak_bytes(name: str, static: Hashable, fn: Callable, *args) -> int:
  """Device memory of the program: arguments + outputs + temporaries - aliased buffers."""
  m = compiled(name, static, fn, *args).memory_analysis()
  return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)
