"""Compile-once programs. Every jitted call the systems make at evaluation (the frozen forward over
chunks, the pager's soft tokens and sufficiency head, generation) is a `Program`: one compiled
executable per argument signature (tree, shapes, dtypes and shardings), shared by every program of
the same name and static part. Nothing compiles twice, and XLA's memory account of the very
program that ran is at hand for `timing` (no second compile to ask it).

A `Program` hashes its static part (the graph definitions it closes over, which are large) once,
when it is made; a call only reads its arguments' signature. Systems that answer question after
question make their programs once and call them, so the time `timing` measures is the programs'
and the host work a question needs, not bookkeeping.
"""

from __future__ import annotations

from typing import Callable, Hashable

import jax

from jaxlab.core import compile_cache

_EXECUTABLES: dict = {}


@compile_cache.on_release
def _forget() -> None:
  # Live `Program`s hold their table, found once by hashing their static part: keep the index.
  for table in _EXECUTABLES.values():
    table.clear()


def _signature(args) -> tuple:
  # Shardings are part of the key: an executable compiled for arrays on one mesh refuses another's.
  leaves, tree = jax.tree.flatten(args)
  return tree, tuple((x.shape, x.dtype, getattr(x, "sharding", None)) for x in leaves)


class Program:
  """`fn(*args)` compiled once per signature; `static` names what `fn` closes over."""

  def __init__(self, name: str, static: Hashable, fn: Callable):
    self.name, self.fn = name, fn
    self._executables = _EXECUTABLES.setdefault((name, static), {})

  def compiled(self, *args):
    key = _signature(args)
    exe = self._executables.get(key)
    if exe is None:
      exe = self._executables[key] = jax.jit(self.fn).lower(*args).compile()
    return exe

  def __call__(self, *args):
    return self.compiled(*args)(*args)

  def peak_bytes(self, *args) -> int:
    """Device memory of the program: arguments + outputs + temporaries - aliased buffers."""
    m = self.compiled(*args).memory_analysis()
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)

