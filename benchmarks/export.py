"""Every family's sweep program and the LM training step, lowered for GPUs and TPUs on this CPU.

  python benchmarks/export.py --out DIR                       # accelerator sizes (5 min): DIR/export.json, export.md
  python benchmarks/export.py --size tiny --out DIR           # small sizes (4 min; the tests lower two of them)
  python benchmarks/export.py --only org_forms lm_1x8x1 --out DIR   # some programs
  python benchmarks/export.py --no-compile --out DIR          # lowering only: no CPU compile, no memory figures

Each program is lowered with `jaxlab.core.export.lower` for `cuda` and for `tpu` from abstract
arguments (nothing of its size is ever allocated), in a fresh process with as many forced CPU
devices as its mesh has, and is then compiled for those CPU devices to read XLA's per-device
buffer assignment (see jaxlab/core/export.py for what each figure means and what it does not
show). Nothing runs on an accelerator: lowering is not running.

The programs, at `--size gpu` (the sizes of `benchmarks/suite.py --size gpu`):

  org_forms, hidden_gems, proactive_memory   the family's jitted sweep (`jax_sweep` of its benchmark)
                                             at its GPU run count, the runs axis sharded over 8
                                             devices, each device taking its whole slice (block 0,
                                             what `map_runs` uses off CPU)
  harness_vs_brain                           the `gpu` variant's sweep (population 65,536), block 4
  developmental                              the fused MJX chunk program (developmental/fused.py) of
                                             the `gpu` variant at 8,192 envs per run, 40 runs on 8
                                             devices; the held-out scenes are zeros of their shape
                                             (their values, recorded on the C engine, do not change
                                             the program). MJX's Cholesky is the pure-JAX one this
                                             CPU host swaps in (physics/cholesky.py)
  developmental_native                       the same, traced as a GPU or TPU host traces it: with
                                             jax.scipy's Cholesky (cuSOLVER's potrf on cuda)
  lm_DxFxT                                   the LM pretraining step (lm_pretrain/train.py:
                                             train_step, AdamW, fp32 parameters and moments as that
                                             experiment trains) at the Qwen3-1.7B shape, on a
                                             (data, fsdp, tensor) mesh of D x F x T devices:
                                             parameters and optimizer state sharded by the logical
                                             axis rules, a batch of 64 rows of 2,048 tokens split
                                             over data x fsdp; `lm_..._remat` rematerializes each
                                             layer (`model.remat=full`)

`--size tiny` lowers the same programs at the benchmarks' tiny sizes (the `smoke` variants, a
2-layer LM) on 8 devices.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SWEEPS = ("org_forms", "hidden_gems", "proactive_memory", "harness_vs_brain", "developmental",
          "developmental_native")
SWEEP_DEVICES = 8
# (data, fsdp, tensor) meshes of the LM step and whether its layers are rematerialized.
LM_PROGRAMS = {
    "gpu": (((1, 8, 1), "none"), ((1, 8, 1), "full"), ((1, 64, 1), "none"), ((1, 64, 1), "full"),
            ((1, 16, 4), "full")),
    "tiny": (((1, 8, 1), "none"), ((1, 4, 2), "full")),
}
LM_BATCH = {"gpu": dict(rows=64, length=2048), "tiny": dict(rows=8, length=32)}
DEVELOPMENTAL = {"gpu": ("gpu", ["--config.play.envs=8192"]), "tiny": ("smoke", ["--config.backend=mjx"])}


def lm_name(mesh_shape, remat: str) -> str:
  return "lm_" + "x".join(map(str, mesh_shape)) + ("_remat" if remat != "none" else "")


def programs(size: str) -> dict[str, int]:
  """{program name: devices it is lowered for}."""
  out = {name: SWEEP_DEVICES for name in SWEEPS}
  for shape, remat in LM_PROGRAMS[size]:
    out[lm_name(shape, remat)] = shape[0] * shape[1] * shape[2]
  return out


# ----------------------------------------------------------------------------- the programs
def sweep_program(name: str, size: str):
  """(jitted program, abstract args, groups, None) of a simulation family's sweep on every device."""
  from jaxlab.core import mesh as mesh_lib
  fam = importlib.import_module(f"benchmarks.{name}")
  fn, runs, block = fam.jax_sweep(size, fam.SIZES[size]["runs"])
  program, (rows, count) = mesh_lib.runs_program(fn, runs, mesh_lib.make_mesh(), 0 if block is None else block)
  return program, (rows, count), {"runs": rows}, None


def developmental_program(size: str, variant: tuple[str, list[str]] | None = None):
  """The fused MJX chunk program of the developmental experiment, over its whole population, at the
  size's variant (or `variant`: a config variant's name and its overrides)."""
  import jax
  import jax.numpy as jnp
  from jaxlab.core import config as config_lib, mesh as mesh_lib
  from jaxlab.developmental import batch as batch_lib, experiment, fused, learner as learner_lib
  from jaxlab.physics import STAGES
  from jaxlab.physics.api import OBJ_DIM

  name, overrides = variant or DEVELOPMENTAL[size]
  config = config_lib.load(f"configs/developmental.py:{name}", overrides, experiment.validate)
  p = config.play
  pcfg = experiment.physics_config(config)
  dims, action_dims = experiment.dims_of(pcfg)
  learner = learner_lib.learner(dims, experiment.learner_config(config), action_dims)
  heldout = batch_lib.empty(len(STAGES) * p.episode_rounds * config.eval.heldout_envs, dims)
  mesh = mesh_lib.make_mesh()
  program = fused.Fused(learner, fused.MjxWorld(pcfg, p.envs, dims), heldout, seed=config.seed, envs=p.envs,
                        rounds=p.episode_rounds, episodes_per_chunk=p.episodes_per_chunk, eval_every=p.eval_every,
                        n_episodes=p.episodes, mesh=mesh)
  table = experiment.runs_table(config)
  n = len(table["seed"])
  state = jax.eval_shape(lambda: jax.vmap(learner.init, in_axes=(0, None))(
      jax.random.split(jax.random.key(0), n), jnp.ones((dims.stages, OBJ_DIM), jnp.float32)))
  runs = fused.rows_of(state, experiment.flags_of(config, table), table["seed"], 0)
  fn, (rows, count) = mesh_lib.runs_program(program.fn, runs, mesh, block=1)
  params, opt = rows["state"].params, rows["state"].opt
  rest = {**rows, "state": rows["state"]._replace(params=None, opt=None)}
  return fn, (rows, count), {"params": params, "optimizer": opt, "runs": rest}, None


def lm_program(size: str, mesh_shape, remat: str):
  """The LM pretraining step at the Qwen3-1.7B shape (`--size gpu`) on a (data, fsdp, tensor) mesh."""
  import jax
  import jax.numpy as jnp
  from jax.sharding import NamedSharding, PartitionSpec as P
  from benchmarks import lm
  from jaxlab.core import checkpoint, config as config_lib, mesh as mesh_lib
  from jaxlab.lm_pretrain import experiment, train

  s = lm.FAMILY["Qwen3-1.7B"] if size == "gpu" else lm.SIZES["tiny"]
  model = dict(hidden_size=s["hidden"], intermediate_size=s["ffn"], num_hidden_layers=s["layers"],
               num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"],
               tie_word_embeddings=s["tie"], rope_theta=1e6, remat=remat)
  b = LM_BATCH[size]
  overrides = [f"--config.model.{k}={v}" for k, v in model.items()] + [f"--config.batch_size={b['rows']}"]
  config = config_lib.load("configs/lm_pretrain.py:gpu", overrides, experiment.validate)
  mesh = mesh_lib.training_mesh(dict(zip(mesh_lib.TRAINING_AXES, mesh_shape)))
  graphdef, abstract, shardings = train.abstract_state(config, s["vocab"], mesh)
  state = checkpoint.abstract_like(abstract, shardings)
  shape = (b["rows"], b["length"])
  rows = NamedSharding(mesh, mesh_lib.fitted_spec(("batch",), shape, dict(mesh.shape)))
  ids = jax.ShapeDtypeStruct(shape, jnp.int32, sharding=rows)
  flags = jax.ShapeDtypeStruct(shape, jnp.bool_, sharding=rows)
  weight = jax.ShapeDtypeStruct((), jnp.float32, sharding=NamedSharding(mesh, P()))
  args = (graphdef, train.optimizer(config), state["params"], state["opt_state"], ids, flags, weight)
  return train.train_step, args, {"params": state["params"], "optimizer": state["opt_state"],
                                  "batch": (ids, flags)}, mesh


def build(name: str, size: str):
  """(jitted program, abstract args, byte groups, mesh to trace under or None) of one program."""
  if name in ("developmental", "developmental_native"):
    return developmental_program(size)
  if name in SWEEPS:
    return sweep_program(name, size)
  for shape, remat in LM_PROGRAMS[size]:
    if lm_name(shape, remat) == name:
      return lm_program(size, shape, remat)
  raise ValueError(f"no program {name!r} at size {size!r}; the programs: {sorted(programs(size))}")


def export_one(name: str, size: str, compile: bool = True) -> dict:
  """One program's record (jaxlab.core.export.lower), in this process, on its devices."""
  from jaxlab.core import export
  from jaxlab.physics import cholesky
  t0 = time.perf_counter()
  fn, args, groups, mesh = build(name, size)
  with cholesky.native() if name.endswith("_native") else contextlib.nullcontext():
    record = export.lower(name, fn, args, groups=groups, mesh=mesh, compile=compile)
  record["build_seconds"] = round(time.perf_counter() - t0, 2)
  record["size"] = size
  return record


# ----------------------------------------------------------------------------- processes
def run_worker(name: str, size: str, devices: int, compile: bool, timeout: float) -> dict:
  """export_one in a fresh process with `devices` forced CPU devices; its record, or a failure."""
  from jaxlab.core import cpu_threads
  env = {**os.environ, "PYTHONPATH": str(common.ROOT), "JAX_PLATFORMS": "cpu"}
  env["XLA_FLAGS"] = common.xla_flags(devices, single_core=False)
  env.pop("NPROC", None)
  cpu_threads.ensure(env)
  command = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--size", size]
  command += [] if compile else ["--no-compile"]
  t0 = time.perf_counter()
  try:
    done = subprocess.run(command, env=env, cwd=common.ROOT, capture_output=True, text=True, timeout=timeout)
  except subprocess.TimeoutExpired:
    return {"name": name, "size": size, "devices": devices, "failed": f"stopped after {timeout:.0f} s",
            "seconds": round(time.perf_counter() - t0, 1)}
  if done.returncode != 0:
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return {"name": name, "size": size, "devices": devices, "failed": lines[-1] if lines else f"exit {done.returncode}",
            "stderr": done.stderr[-3000:], "seconds": round(time.perf_counter() - t0, 1)}
  record = json.loads(done.stdout.strip().splitlines()[-1])
  record["seconds"] = round(time.perf_counter() - t0, 1)
  return record


def _bytes(x) -> str:
  if x is None:
    return "-"
  for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
    if x >= scale:
      return f"{x / scale:.2f} {unit}"
  return f"{x} B"


def _status(record: dict, platform: str) -> str:
  if "failed" in record:
    return f"not lowered: {record['failed']}"
  p = record["platforms"][platform]
  if not p["ok"]:
    return f"fails: {p['error'][:160]}"
  calls = f" (custom calls: {', '.join(p['custom_calls'])})" if p["custom_calls"] else ""
  return f"lowers, {p['seconds']:.0f} s{calls}"


def markdown(result: dict) -> str:
  """The table of docs/scaling.md: one row per program, both platforms, bytes per device."""
  from jaxlab.core import export
  chips = list(export.ACCELERATORS)
  head = ("| program | devices (mesh) | cuda | tpu | parameters | optimizer state | other inputs | largest array "
          "| XLA temporaries | peak | " + " | ".join(f"fits {c}" for c in chips) + " |\n"
          + "|---" * (10 + len(chips)) + "|\n")
  rows = []
  for r in result["programs"]:
    mesh = f" ({'x'.join(str(v) for v in r['mesh'].values())})" if r.get("mesh") else ""
    if "failed" in r:
      rows.append(f"| {r['name']} | {r['devices']}{mesh} | {_status(r, 'cuda')} | {_status(r, 'tpu')} |"
                  + " - |" * (6 + len(chips)))
      continue
    g, m = r["groups"], r.get("memory") or {}
    other = sum(v["per_device"] for k, v in g.items() if k not in ("params", "optimizer"))
    fit = [("yes" if r["fits"][c] else "**no**") + ("" if m else " (arguments only)") for c in chips]
    state = [_bytes(g[k]["per_device"]) if k in g else "-" for k in ("params", "optimizer")]
    rows.append(f"| {r['name']} | {r['devices']}{mesh} | {_status(r, 'cuda')} | {_status(r, 'tpu')} "
                f"| {state[0]} | {state[1]} "
                f"| {_bytes(other)} | {_bytes(m.get('largest'))} | {_bytes(m.get('temporaries'))} "
                f"| {_bytes(m.get('peak'))} | " + " | ".join(fit) + " |")
  notes = [f"- {r['name']}: memory figures unavailable ({r['memory_error']})" for r in result["programs"]
           if r.get("memory_error")]
  return (f"Lowered {result['date']} on {result['machine']} with jax {result['jax']}, size `{result['size']}`, "
          f"in {result['seconds']:.0f} s; bytes per device. Nothing ran on an accelerator.\n\n"
          + head + "\n".join(rows) + "\n" + ("\n" + "\n".join(notes) + "\n" if notes else ""))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=("tiny", "gpu"), default="gpu")
  parser.add_argument("--out", default="export", help="folder for export.json and export.md")
  parser.add_argument("--only", nargs="+", metavar="PROGRAM", help="these programs only")
  parser.add_argument("--no-compile", action="store_true", help="lower only: no CPU compile, no memory figures")
  parser.add_argument("--timeout", type=float, default=1800, help="seconds one program may take")
  parser.add_argument("--worker", metavar="PROGRAM", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    from jaxlab.core import cpu_threads
    cpu_threads.ensure()
    print(json.dumps(export_one(args.worker, args.size, compile=not args.no_compile)))
    return
  import jax
  wanted = programs(args.size)
  unknown = set(args.only or ()) - set(wanted)
  if unknown:
    parser.error(f"no programs {sorted(unknown)}; the programs: {sorted(wanted)}")
  t0 = time.perf_counter()
  result = {"size": args.size, "date": datetime.date.today().isoformat(), "jax": jax.__version__,
            "machine": f"{os.cpu_count()} CPU cores", "programs": []}
  for name, devices in wanted.items():
    if args.only and name not in args.only:
      continue
    record = run_worker(name, args.size, devices, not args.no_compile, args.timeout)
    result["programs"].append(record)
    status = record.get("failed") or ", ".join(f"{p} {'ok' if v['ok'] else 'FAILS'}"
                                               for p, v in record["platforms"].items())
    print(f"{name} on {devices} devices: {status} ({record['seconds']:.0f} s)", flush=True)
  result["seconds"] = time.perf_counter() - t0
  out = Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  (out / "export.json").write_text(json.dumps(result, indent=1) + "\n")
  (out / "export.md").write_text(markdown(result))
  print(f"export ({args.size}): {result['seconds']:.0f} s; {out / 'export.json'}, {out / 'export.md'}")


if __name__ == "__main__":
  main()
