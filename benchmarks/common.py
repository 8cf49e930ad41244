"""What every benchmark shares: its command line, the fair comparison, scaling curves, the printed line.

A simulation family's benchmark module (org_forms.py, hidden_gems.py, proactive_memory.py,
harness_vs_brain.py) names `NAME`, `UNIT` and `SIZES` ({"tiny" | "cpu" | "gpu": {"runs", "loop",
...}}) and gives three ways to compute runs [start, stop) of the same sweep:

  jax_sweep(size, n)                (batched function, n runs, block or None for the platform's):
                                    the jitted program's parts, also what benchmarks/export.py lowers
  jax_program(size, n)              a function computing n runs: the jitted program, sharded over
                                    every visible device by `jaxlab.core.mesh.map_runs`
  numpy_batched(size, start, stop)  runs on a leading axis in NumPy, random numbers drawn by NumPy
  numpy_loop(size, start, stop)     one run at a time in Python (the reference column)

`compare` times each in a fresh worker process that can use only the cores it is given, so both
sides of a ratio see the same hardware:

  jax, 1 core        taskset -c 0, one CPU device, XLA's intra-op thread pool off
                     (--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1)
  numpy, 1 core      taskset -c 0, OMP / OpenBLAS / MKL at 1 thread
  jax, all cores     one CPU device per core (the runs sharded over them)
  numpy, all cores   the runs split over one pinned 1-thread process per core, which stay alive
                     between timed calls (a pool, as a NumPy user would keep one)
  loop, 1 core       a few runs one at a time; its rate is scaled to runs per second

Each worker reports the CPU seconds it used per wall second, so the pinning is checked, not assumed.
Every timing is the best of `repeats` calls after a first call (for JAX the first call compiles:
its extra time is reported as the compile time). `start`, `report` and `block_for_platform` are
the single-figure helpers that lm.py and developmental.py use.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORES = len(os.sched_getaffinity(0))
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}
SINGLE_CORE_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def start(doc: str, sizes, add_arguments=None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
  parser.add_argument("--size", choices=sorted(sizes), default="cpu")
  parser.add_argument("--cpu-devices", type=int, default=os.cpu_count(),
                      help="CPU devices to force (one per core shards the runs over all cores)")
  if add_arguments:
    add_arguments(parser)
  args = parser.parse_args()
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                             + f" --xla_force_host_platform_device_count={args.cpu_devices}")
  return args


def block_for_platform() -> int:
  """Rows a device vectorizes at once: CPUs like small blocks, accelerators take all their rows."""
  import jax
  return 32 if jax.devices()[0].platform == "cpu" else 0


def mapped_program(fn, runs, block: int | None):
  """A call computing every run of `runs` with `fn` through `jaxlab.core.mesh.map_runs` over every
  visible device (block None: `block_for_platform()`), waiting for the result."""
  import jax
  from jaxlab.core import mesh
  m, block = mesh.make_mesh(), block_for_platform() if block is None else block
  return lambda: jax.block_until_ready(mesh.map_runs(fn, runs, m, block))


def report(unit: str, jax_n: int, jax_s: float, compile_s: float | None, base_n: int, base_s: float,
           base: str = "numpy") -> None:
  """Prints both rates and their ratio; `base` names what jaxlab is measured against."""
  jax_rate, base_rate = jax_n / jax_s, base_n / base_s
  compiled = f"  (compile + first call {compile_s:.1f} s)" if compile_s is not None else ""
  print(f"{'jax':12s}: {jax_n:8d} {unit} in {jax_s:7.3f} s = {jax_rate:10.1f} {unit}/s{compiled}")
  print(f"{base:12s}: {base_n:8d} {unit} in {base_s:7.3f} s = {base_rate:10.1f} {unit}/s")
  print(f"{'ratio':12s}: {jax_rate / base_rate:.1f}x {unit} per second")


# ---------------------------------------------------------------------------------------------
# Workers: one process per measurement, started with the environment and cores it may use.

def _cpu_seconds() -> float:
  own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _best(fn, repeats: int):
  """(seconds of the first call, best seconds of `repeats` more, CPU cores used during those,
  least CPU seconds of one of those calls)."""
  t0 = time.perf_counter()
  fn()
  first = time.perf_counter() - t0
  times, cpus = [], []
  for _ in range(repeats):
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
    cpus.append(_cpu_seconds() - cpu0)
  return first, min(times), sum(cpus) / sum(times), min(cpus)


def _pool_member(module_name, size, start, stop, core, inbox, outbox):
  os.sched_setaffinity(0, {core})
  module = importlib.import_module(module_name)
  while inbox.get():
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    module.numpy_batched(size, start, stop)
    outbox.put((time.perf_counter() - t0, _cpu_seconds() - cpu0))


def _numpy_in_processes(module_name: str, size: str, n: int, procs: int, repeats: int) -> dict:
  """The batched NumPy baseline with its runs split over `procs` pinned processes that stay alive
  between calls; a call's time is the wall time until every process has answered."""
  ctx = multiprocessing.get_context("fork")
  cores = sorted(os.sched_getaffinity(0))
  bounds = [n * i // procs for i in range(procs + 1)]
  members = []
  for i in range(procs):
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_pool_member, args=(module_name, size, bounds[i], bounds[i + 1],
                                               cores[i % len(cores)], inbox, outbox), daemon=True)
    p.start()
    members.append((p, inbox, outbox))

  def call():
    for _, inbox, _ in members:
      inbox.put(True)
    return [outbox.get() for _, _, outbox in members]

  call()                                      # imports and first touches, not timed
  times, cpus = [], []
  for _ in range(repeats):
    t0 = time.perf_counter()
    answers = call()
    times.append(time.perf_counter() - t0)
    cpus.append(sum(c for _, c in answers))
  for p, inbox, _ in members:
    inbox.put(False)
    p.join()
  return dict(seconds=min(times), cores_used=sum(cpus) / sum(times), cpu_s=min(cpus))


def worker(spec: dict) -> dict:
  """One measurement, in this process: spec = {module, kind (jax | numpy | loop), size, runs,
  procs, repeats}. Returns seconds for `runs` runs and what was learned on the way."""
  module = importlib.import_module(spec["module"])
  size, n, repeats = spec["size"], spec["runs"], spec["repeats"]
  if spec["kind"] == "jax":
    import jax
    program = module.jax_program(size, n)
    first, best, used, cpu = _best(program, repeats)
    return dict(seconds=best, compile_s=max(first - best, 0.0), cores_used=used, cpu_s=cpu,
                devices=jax.device_count(), platform=jax.devices()[0].platform,
                device_kind=jax.devices()[0].device_kind)
  if spec["kind"] == "numpy":
    if spec["procs"] > 1:
      return _numpy_in_processes(spec["module"], size, n, spec["procs"], repeats)
    _, best, used, cpu = _best(lambda: module.numpy_batched(size, 0, n), repeats)
    return dict(seconds=best, cores_used=used, cpu_s=cpu)
  cpu0, t0 = _cpu_seconds(), time.perf_counter()
  module.numpy_loop(size, 0, n)
  seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
  return dict(seconds=seconds, cores_used=cpu / seconds, cpu_s=cpu)


def xla_flags(devices: int | None, single_core: bool) -> str:
  """This process's XLA_FLAGS with the device count and thread flags replaced (None: JAX's default)."""
  kept = [f for f in os.environ.get("XLA_FLAGS", "").split()
          if not f.startswith("--xla_force_host_platform_device_count")
          and not f.startswith("--xla_cpu_multi_thread_eigen") and not f.startswith("intra_op")]
  if devices:
    kept.append(f"--xla_force_host_platform_device_count={devices}")
  if single_core:
    kept += SINGLE_CORE_XLA.split()
  return " ".join(kept)


def measure(module: str, kind: str, size: str, runs: int, cores: int | None = None, repeats: int = 2,
            cpu: bool = True, timeout: float | None = None) -> dict:
  """Runs one `worker` measurement in a fresh process limited to `cores` cores (None: as many as
  this process has). `cpu=False` leaves the device choice to JAX (the accelerator suite); past
  `timeout` seconds the process is killed (subprocess.TimeoutExpired)."""
  cores = cores or CORES
  env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
  if kind == "jax":
    env["XLA_FLAGS"] = xla_flags(cores if cpu else None, single_core=cpu and cores == 1)
    if cpu:
      env["JAX_PLATFORMS"] = "cpu"
  spec = dict(module=module, kind=kind, size=size, runs=runs, repeats=repeats,
              procs=cores if kind == "numpy" else 1)
  allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
  command = ["taskset", "-c", allowed, sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
  done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
  if done.returncode != 0:
    raise RuntimeError(f"{kind} worker for {module} ({runs} {size} runs on {cores} cores) failed:\n"
                       f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
  return dict(json.loads(done.stdout.strip().splitlines()[-1]), runs=runs, cores=cores)


# ---------------------------------------------------------------------------------------------
# The fair comparison and the scaling curve of one family.

def _rate(m: dict) -> float:
  return m["runs"] / m["seconds"]


def ratio_line(name: str, r: dict) -> str:
  """The benchmark's last line; a ratio below 1 says plainly that JAX does not win there."""
  line = (f"{name}: jax/numpy-batched = {r['ratio_1core']:.1f}x (1 core), {r['ratio_all']:.1f}x (all cores); "
          f"jax/numpy-loop = {r['ratio_loop']:.1f}x")
  losses = [where for where, x in (("on 1 core", r["ratio_1core"]), ("on all cores", r["ratio_all"])) if x < 1]
  if losses:
    line += f" (JAX does not beat batched NumPy {' or '.join(losses)} on this CPU)"
  return line


def compare(module: str, size: str, repeats: int = 2, log=print) -> dict:
  """Every column of the fair comparison for one family at `size`, measured one after another."""
  fam = importlib.import_module(module)
  s = fam.SIZES[size]
  cols = {}
  for key, kind, cores, runs in (("loop", "loop", 1, s["loop"]), ("numpy_1core", "numpy", 1, s["runs"]),
                                 ("jax_1core", "jax", 1, s["runs"]), ("numpy_all", "numpy", CORES, s["runs"]),
                                 ("jax_all", "jax", CORES, s["runs"])):
    cols[key] = m = measure(module, kind, size, runs, cores, repeats if kind != "loop" else 1)
    compiled = f", compile {m['compile_s']:.1f} s" if "compile_s" in m else ""
    log(f"  {key:12s} {runs:7d} {fam.UNIT} in {m['seconds']:8.3f} s = {_rate(m):11.1f} {fam.UNIT}/s "
        f"({m['cores_used']:.2f} cores busy{compiled})")
  r = dict(family=fam.NAME, unit=fam.UNIT, size=size, cores=CORES, columns=cols,
           rates={k: _rate(m) for k, m in cols.items()},
           ratio_1core=_rate(cols["jax_1core"]) / _rate(cols["numpy_1core"]),
           ratio_all=_rate(cols["jax_all"]) / _rate(cols["numpy_all"]),
           ratio_loop=_rate(cols["jax_1core"]) / _rate(cols["loop"]))
  # On a shared machine a 1-core column may get a fraction of its core; its CPU seconds do not
  # depend on that share, so the same ratio on CPU time is printed beside the wall-clock one.
  cpu_rate = lambda m: m["runs"] / m["cpu_s"]
  r["ratio_1core_cpu"] = cpu_rate(cols["jax_1core"]) / cpu_rate(cols["numpy_1core"])
  r["ratio_loop_cpu"] = cpu_rate(cols["jax_1core"]) / cpu_rate(cols["loop"])
  log(f"  on CPU seconds instead of wall time: jax/numpy-batched = {r['ratio_1core_cpu']:.1f}x (1 core); "
      f"jax/numpy-loop = {r['ratio_loop_cpu']:.1f}x")
  r["line"] = ratio_line(fam.NAME, r)
  return r


def scaling(module: str, size: str, powers=range(6, 15), cap_s: float = 60.0, log=print) -> dict:
  """Runs per second against batch size on one core, JAX and batched NumPy, with JAX's compile
  time per size, then any curves the family adds (`extra_curves(size, cap_s, log)`: org forms'
  Mesa). A side stops growing once one call took longer than `cap_s` seconds."""
  fam = importlib.import_module(module)
  curve = {"jax": [], "numpy": []}
  for p in powers:
    for kind in ("numpy", "jax"):
      if curve[kind] and curve[kind][-1]["seconds"] > cap_s:
        continue
      m = measure(module, kind, size, 2 ** p, 1, repeats=1)
      curve[kind].append(dict(runs=2 ** p, seconds=m["seconds"], rate=_rate(m), compile_s=m.get("compile_s")))
      compiled = f", compile {m['compile_s']:.1f} s" if "compile_s" in m else ""
      log(f"  {kind:5s} {2 ** p:6d} {fam.UNIT}: {_rate(m):11.1f} {fam.UNIT}/s{compiled}")
  if hasattr(fam, "extra_curves"):   # a family's other peers (org forms: Mesa), at batches of their own
    curve.update(fam.extra_curves(size, cap_s, log=log))
  return dict(family=fam.NAME, unit=fam.UNIT, cap_s=cap_s, curve=curve)


def plot_scaling(result: dict, path) -> list[str]:
  """Plots every curve of `result` at `path`; returns the legend's labels."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(5.2, 3.4), dpi=100)
  labels = {"jax": ("o-", "JAX, 1 core"), "numpy": ("s--", "batched NumPy, 1 core"),
            "mesa_1core": ("^:", "Mesa batch_run, 1 process"), "mesa_all": ("v:", "Mesa batch_run, 1 process per core")}
  for kind, pts in result["curve"].items():
    style, label = labels.get(kind, (".-", kind))
    ax.plot([p["runs"] for p in pts], [p["rate"] for p in pts], style, label=label)
  for p in result["curve"]["jax"]:
    ax.annotate(f"{p['compile_s']:.1f}s", (p["runs"], p["rate"]), textcoords="offset points",
                xytext=(0, 6), ha="center", fontsize=6)
  ax.set(xscale="log", yscale="log", xlabel=f"batch ({result['unit']})", ylabel=f"{result['unit']} per second",
         title=f"{result['family']}: throughput vs batch (labels: JAX compile s)")
  ax.title.set_fontsize(9)
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3, which="both")
  fig.tight_layout()
  fig.savefig(path)
  labels = [line.get_label() for line in ax.get_lines()]
  plt.close(fig)
  return labels


def main_for(module: str, doc: str, more=None) -> None:
  """A family benchmark's command line: the fair comparison at --size, optionally the scaling curve.
  `more(size, result)`, if given, adds columns after the comparison and returns the last line."""
  fam = importlib.import_module(module)
  parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
  parser.add_argument("--size", choices=sorted(fam.SIZES), default="cpu")
  parser.add_argument("--repeats", type=int, default=2, help="timed calls per column (the best counts)")
  parser.add_argument("--scaling", metavar="PNG", help="also measure runs/s against batch size; plot here")
  parser.add_argument("--powers", type=int, nargs="+", default=list(range(6, 15)),
                      help="batches of the scaling curve: 2^p runs for each p")
  parser.add_argument("--json", metavar="PATH", help="write every figure here")
  args = parser.parse_args()
  print(f"{fam.NAME} ({args.size}): {fam.SIZES[args.size]['runs']} {fam.UNIT}, loop on "
        f"{fam.SIZES[args.size]['loop']}; {CORES} cores")
  result = {"compare": compare(module, args.size, args.repeats)}
  last = result["compare"]["line"] if more is None else more(args.size, result)
  if args.scaling:
    result["scaling"] = scaling(module, args.size, args.powers)
    plot_scaling(result["scaling"], args.scaling)
  if args.json:
    Path(args.json).write_text(json.dumps(result, indent=1))
  print(last)


if __name__ == "__main__":
  if len(sys.argv) == 3 and sys.argv[1] == "--worker":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(worker(json.loads(sys.argv[2]))))
