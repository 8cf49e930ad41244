"""The roofline of each simulation family's jitted program: how close JAX and batched NumPy come to
what this machine's memory bandwidth and FLOP rate allow, and whether 5x over batched NumPy is possible.

  python benchmarks/roofline.py --json docs/roofline.json    # `cpu` sizes, on 1 core and on all (4 min on 2 cores)
  python benchmarks/roofline.py --cores 1 --json out.json     # 1 core only
  python benchmarks/roofline.py --size tiny --in-process      # small sizes, unpinned (what the tests call; 30 s)

For each family (benchmarks/suite.py's FAMILIES), at the size its benchmark uses:

  work       FLOPs and bytes accessed of the program `jax_sweep` builds, from XLA's cost analysis of the
             executables that are timed, summed over the calls `mesh.map_runs` makes (64 blocks per
             device, then the rest) and over the devices (each runs its own count of blocks). XLA costs
             a while loop's body once, whatever its trip count, so every loop body (the map_runs block
             loop, the scans over periods, raters, ticks, generations) is costed on its own and weighted
             by its trip count (`loop_weighted_cost`).
             XLA counts every elementwise op as a FLOP (threefry's integer bit mixing too) and its
             transcendentals (exp, log, sin, pow) apart; those are shown but left out of the roofline,
             though one costs tens of FLOPs on a CPU. Bytes are each (fused) op's operands and result,
             as if all came from memory: work that stays in cache is charged DRAM bandwidth, so a
             memory-bound figure is an upper bound on the time and a fraction can exceed 100%.
  machine    memory bandwidth: a STREAM triad a = b + s*c over arrays 8 times the L3 cache in float32, in
             NumPy (float64, 3 x 8 bytes per element; one pinned process per core for all cores, as NumPy
             computes on one thread) and jitted in JAX (float32, 3 x 4 bytes; sharded over the devices;
             10 passes in one program, c being the last a); the roofline takes the faster. Peak FLOP rate:
             a float32 matmul in JAX (2 n^3 FLOPs), its rows sharded over the devices. Each figure is the
             best of --repeats calls after a first one.
  time       JAX: the benchmark's program (`common.mapped_program` of `jax_sweep`), best of --repeats calls
             after the compiling one; NumPy: the benchmark's batched NumPy column (`common.measure`).

From those: achieved FLOP/s and bytes/s, the intensity (FLOPs per byte), the roofline time max(FLOPs /
peak, bytes / bandwidth) (the bound min(peak, intensity x bandwidth) in time), each side's fraction of it
(roofline time / achieved time), and whether 5x over batched NumPy is physically possible (NumPy's time / 5
is at least the roofline time). FLOPs / peak alone is the roofline time if every byte came from cache.
NumPy's work is counted with JAX's cost analysis (its own ops are not costed), scaled from the rows JAX
computes (whole blocks) to the runs NumPy computes.

Cores are pinned as in benchmarks/common.py: each setting of --cores runs every measurement in a fresh
process under `taskset` (1 core: one CPU device with XLA's intra-op pool off; N cores: N CPU devices, the
runs sharded over them; batched NumPy on N cores: the runs split over N pinned 1-thread processes).
--in-process measures in this process with the devices and threads it has, unpinned.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common, suite  # noqa: E402

# Machine figures per size: triad elements (None: 8x the L3 cache in float32), matmul order.
SIZES = {"tiny": dict(triad=1 << 20, matmul=256), "cpu": dict(triad=None, matmul=2048)}
TRIAD_CHUNK = 1 << 15
TRIAD_PASSES = 10
GB = 1e9


# ---------------------------------------------------------------------------------------------
# The work: XLA's cost analysis, every loop body weighted by its trip count.

_COMPUTATION = re.compile(r"(ENTRY )?([\w.\-]+) .*\{$")
_WHILE = re.compile(r" while\(.*condition=([\w.\-]+), body=([\w.\-]+)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_CALLS = re.compile(r"(?:calls|to_apply|true_computation|false_computation)=([\w.\-]+)")
_CALL_LISTS = re.compile(r"(?:branch_computations|called_computations)=\{([^}]*)\}")
COSTS = ("flops", "transcendentals", "bytes accessed")
_STANDALONE: dict = {}   # HLO text hash -> {computation: its cost run once}


def xla_cost(compiled) -> dict:
  """`compiled.cost_analysis()` as one dict (JAX has returned a dict, and a list with one per module)."""
  cost = compiled.cost_analysis()
  return dict(cost[0] if isinstance(cost, (list, tuple)) else cost)


def _computations(text: str) -> tuple[dict, str]:
  """{computation name: its lines} of an HLO module's text, and the entry's name."""
  out, current, entry = {}, None, None
  for line in text.splitlines():
    if current is None:
      m = _COMPUTATION.match(line)
      if m and not line.startswith("HloModule"):
        current, out[m.group(2)] = m.group(2), [line]
        entry = m.group(2) if m.group(1) else entry
    else:
      out[current].append(line)
      current = None if line == "}" else current
  return out, entry


def loop_weighted_cost(compiled, unknown_trips: int = 1, inner_trips: int = 1) -> dict:
  """FLOPs, transcendentals and bytes accessed of one execution of `compiled` (per device), every while
  loop's body and condition counted as often as they run. Loops without a trip count known to XLA
  count `unknown_trips` times in the entry computation (the map_runs block loop, whose count is a
  runtime argument), `inner_trips` times elsewhere (a solver's iterations until it converges: give
  its limit for an upper bound); `uncounted_loops` says how many of those there were.

  XLA's cost analysis has no trip counts, so each loop body is costed by XLA as a module of its own
  (jaxlib's HLO parser and module cost analysis, which JAX does not export)."""
  from jax._src.lib import _jax
  from jaxlib import _hlo

  executable = compiled.runtime_executable()
  options = _hlo.HloPrintOptions.short_parsable()
  options.print_metadata = False
  text = executable.hlo_modules()[0].to_string(options)
  comps, entry = _computations(text)
  names = list(comps)
  standalone = _STANDALONE.setdefault(hash(text), {})   # shared by calls on one program with other trip counts

  def called(line):   # the computations an instruction calls, loops aside
    listed = [c.strip() for group in _CALL_LISTS.findall(line) for c in group.split(",")]
    return [c for c in _CALLS.findall(line) + listed if c in comps]

  def callees(name):   # the computations `name` calls directly: loop conditions and bodies, calls, branches
    out = []
    for line in comps[name]:
      m = _WHILE.search(line)
      out += [m.group(1), m.group(2)] if m else called(line)
    return out

  def reachable(name):
    seen, todo = {name}, [name]
    while todo:
      for c in callees(todo.pop()):
        if c not in seen:
          seen.add(c)
          todo.append(c)
    return seen

  def alone(name):   # XLA's cost of `name` run once, its loops' bodies once (a module of what it calls)
    if name not in standalone:
      lines, keep = [f"HloModule {name}"], reachable(name)
      for other in (n for n in names if n in keep):
        head, *rest = comps[other]
        head = head.removeprefix("ENTRY ")
        lines += [("ENTRY " + head) if other == name else head, *rest, ""]
      cost = _jax.hlo_module_cost_analysis(executable.client, _hlo.hlo_module_from_text("\n".join(lines)))
      standalone[name] = np.array([cost.get(k, 0.0) for k in COSTS])
    return standalone[name]

  uncounted = set()

  def loops(name, top):   # (condition, body, trips) of every loop `name` runs, through calls and branches
    for line in comps[name]:
      m = _WHILE.search(line)
      if m:
        known = _TRIPS.search(line)
        if known:
          trips = int(known.group(1))
        elif top:
          trips = unknown_trips
        else:
          trips = inner_trips
          uncounted.add(line)
        yield m.group(1), m.group(2), trips
        continue
      for callee in called(line):
        yield from loops(callee, False)

  memo = {}

  def weighted(name, top=False):
    if (name, top) not in memo:
      total = alone(name).copy()
      for condition, body, trips in loops(name, top):
        total += trips * weighted(body) - alone(body) + (trips + 1) * weighted(condition) - alone(condition)
      memo[name, top] = total
    return memo[name, top]

  total = weighted(entry, top=True)
  return {**dict(zip(COSTS, map(float, total))), "uncounted_loops": len(uncounted)}


def _calls(n: int, m, block: int) -> list[tuple[int, np.ndarray]]:
  """(rows, blocks each device computes) of every call `mesh.map_runs` makes for n runs, split as it
  splits them (block 0: one call, each device's whole slice once)."""
  from jaxlab.core import mesh

  if block == 0:
    return [(mesh.padded_size(n, m, 0), np.ones(m.size, np.int32))]
  return [(m.size * blocks * block, (-(-counts // block)).astype(np.int32))
          for _, blocks, _, counts in mesh.calls(n, m, block)]


def program_figures(module: str, size: str, repeats: int) -> dict:
  """The family's jitted program at `size` on this process's devices: its time as the benchmark takes it
  (the best of `repeats` calls after the compiling one) and its loop-weighted work, summed over the
  calls map_runs makes and the devices (each running its own count of blocks)."""
  import jax
  from jaxlab.core import mesh

  fam = importlib.import_module(module)
  n = fam.SIZES[size]["runs"]
  fn, runs, block = fam.jax_sweep(size, n)
  first, best, used, cpu = common._best(common.mapped_program(fn, runs, block), repeats)
  block = common.block_for_platform() if block is None else block
  m = mesh.make_mesh()
  compiled, tally, once, computed = {}, collections.Counter(), np.zeros(len(COSTS)), 0
  for rows, counts in _calls(n, m, block):
    if rows not in compiled:
      shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct((rows, *np.shape(x)[1:]), np.asarray(x).dtype), runs)
      program, args = mesh.runs_program(fn, shapes, m, block)
      compiled[rows] = program.lower(*args).compile()   # an executable just timed, from JAX's cache
    once += m.size * np.array([xla_cost(compiled[rows]).get(k, 0.0) for k in COSTS])
    tally.update((rows, int(b)) for b in counts)        # one program run per device and call
    computed += int(counts.sum()) * block if block else rows
  work, uncounted = np.zeros(len(COSTS)), 0
  for (rows, blocks), times in tally.items():
    cost = loop_weighted_cost(compiled[rows], blocks)
    work += times * np.array([cost[k] for k in COSTS])
    uncounted = max(uncounted, cost["uncounted_loops"])
  flops, transcendentals, nbytes = map(float, work)
  return dict(runs=n, computed=computed, devices=m.size, block=block, seconds=best, compile_s=max(first - best, 0.0),
              cores_used=used, cpu_s=cpu, flops=flops, bytes=nbytes, transcendentals=transcendentals,
              uncounted_loops=uncounted, xla_flops_loops_once=float(once[0]), xla_bytes_loops_once=float(once[2]))


def numpy_figures(module: str, size: str, repeats: int) -> dict:
  """The family's batched NumPy baseline at `size` in this process, best of `repeats` calls after a first."""
  fam = importlib.import_module(module)
  n = fam.SIZES[size]["runs"]
  _, best, used, cpu = common._best(lambda: fam.numpy_batched(size, 0, n), repeats)
  return dict(runs=n, seconds=best, cores_used=used, cpu_s=cpu)


# ---------------------------------------------------------------------------------------------
# The machine: STREAM triad bandwidth and matmul FLOP rate.

def triad_elements(size: str) -> int:
  if SIZES[size]["triad"]:
    return SIZES[size]["triad"]
  try:
    text = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
    l3 = int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20}[text[-1]]
  except (OSError, ValueError, KeyError):
    l3 = 32 << 20
  return 8 * l3 // 4


def _triad(n: int):
  """A call of the float64 triad a = b + s*c over n elements, its arrays allocated and touched here."""
  a, b, c, tmp = np.zeros(n), np.full(n, 1.0), np.full(n, 2.0), np.empty(TRIAD_CHUNK)

  def call():
    # NumPy has no fused triad (b + s*c makes an array-sized temporary: more traffic), so it runs in
    # chunks whose temporary stays in cache.
    for i in range(0, n, TRIAD_CHUNK):
      t = tmp[:min(TRIAD_CHUNK, n - i)]
      np.multiply(c[i:i + TRIAD_CHUNK], 3.0, out=t)
      np.add(b[i:i + TRIAD_CHUNK], t, out=a[i:i + TRIAD_CHUNK])
  return call


def _triad_member(n, repeats, core, barrier, outbox):
  os.sched_setaffinity(0, {core})
  call, times = _triad(n), []
  for _ in range(repeats + 1):    # every round starts together; the first is not counted
    barrier.wait()
    t0 = time.perf_counter()
    call()
    times.append(time.perf_counter() - t0)
  outbox.put(times[1:])


def numpy_triad(n: int, repeats: int, procs: int = 1) -> dict:
  """GB/s of the NumPy triad over n float64 elements in all (3 x 8 bytes each): in this process, or in
  `procs` processes pinned one per core, each on n / procs elements, a round lasting until the slowest
  is done. Forks: call it before JAX starts its threads."""
  figures = dict(procs=procs, dtype="float64", bytes_per_element=24)
  if procs == 1:
    _, best, used, _ = common._best(_triad(n), repeats)
    return dict(figures, gb_s=24 * n / best / GB, cores_used=used)
  ctx = multiprocessing.get_context("fork")
  cores, barrier, outbox, share = sorted(os.sched_getaffinity(0)), ctx.Barrier(procs), ctx.Queue(), n // procs
  members = [ctx.Process(target=_triad_member, args=(share, repeats, cores[i % len(cores)], barrier, outbox))
             for i in range(procs)]
  for p in members:
    p.start()
  times = [outbox.get() for _ in members]
  for p in members:
    p.join()
  return dict(figures, gb_s=24 * share * procs / min(map(max, zip(*times))) / GB)


def jax_triad(n: int, repeats: int) -> dict:
  """GB/s of the jitted float32 triad over n elements (3 x 4 bytes each), sharded over every device."""
  import jax
  import jax.numpy as jnp
  from jax.sharding import NamedSharding, PartitionSpec as P
  from jaxlab.core import mesh

  m = mesh.make_mesh()
  n -= n % m.size
  fill = lambda v: jax.jit(lambda: jnp.full(n, v, jnp.float32), out_shardings=NamedSharding(m, P(mesh.AXIS)))()
  state, b = [fill(2.0)], fill(1.0)
  # TRIAD_PASSES triads a = b + s*c with c the last a, in one program: each call's output is a fresh
  # buffer whose pages the kernel faults in, which a single pass would time as if it were bandwidth.
  passes = jax.jit(lambda a, b: jax.lax.fori_loop(0, TRIAD_PASSES, lambda i, a: b + 0.5 * a, a), donate_argnums=0)

  def call():
    state[0] = jax.block_until_ready(passes(state[0], b))
  _, best, used, _ = common._best(call, repeats)
  return dict(gb_s=12 * n * TRIAD_PASSES / best / GB, devices=m.size, dtype="float32", bytes_per_element=12,
              cores_used=used)


def matmul(n: int, repeats: int) -> dict:
  """GFLOP/s of a jitted float32 n x n matmul (2 n^3 FLOPs), its rows sharded over every device."""
  import jax
  import jax.numpy as jnp
  from jax.sharding import NamedSharding, PartitionSpec as P
  from jaxlab.core import mesh

  m = mesh.make_mesh()
  n -= n % m.size
  a = jax.jit(lambda: jnp.full((n, n), 0.5, jnp.float32), out_shardings=NamedSharding(m, P(mesh.AXIS)))()
  b = jax.jit(lambda: jnp.full((n, n), 0.25, jnp.float32), out_shardings=NamedSharding(m, P()))()
  product = jax.jit(lambda a, b: a @ b)
  _, best, used, _ = common._best(lambda: jax.block_until_ready(product(a, b)), repeats)
  return dict(gflop_s=2 * n ** 3 / best / GB, n=n, devices=m.size, dtype="float32", cores_used=used)


def machine_figures(size: str, repeats: int, procs: int = 1) -> dict:
  """The triads and the matmul in this process (NumPy's triad in `procs` processes); the roofline's
  bandwidth is the faster triad, its peak the matmul's rate."""
  n = triad_elements(size)
  out = {"triad_elements": n, "numpy_triad": numpy_triad(n, repeats, procs)}
  out["jax_triad"] = jax_triad(n, repeats)
  out["matmul"] = matmul(SIZES[size]["matmul"], repeats)
  out["bandwidth_gb_s"] = max(out["numpy_triad"]["gb_s"], out["jax_triad"]["gb_s"])
  out["peak_gflop_s"] = out["matmul"]["gflop_s"]
  return out


# ---------------------------------------------------------------------------------------------
# Fresh pinned processes, the roofline of each family, the table.

def worker(spec: dict) -> dict:
  if spec["do"] == "machine":
    return machine_figures(spec["size"], spec["repeats"], spec["procs"])
  return program_figures(spec["module"], spec["size"], spec["repeats"])


def fresh(spec: dict, cores: int) -> dict:
  """`worker(spec)` in a fresh process limited to `cores` cores, with the environment common.measure gives
  a JAX column (common.measure runs only its own worker)."""
  env = {**os.environ, **common.ONE_THREAD, "PYTHONPATH": str(common.ROOT), "JAX_PLATFORMS": "cpu",
         "XLA_FLAGS": common.xla_flags(cores, single_core=cores == 1)}
  allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
  command = ["taskset", "-c", allowed, sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
  done = subprocess.run(command, env=env, cwd=common.ROOT, capture_output=True, text=True)
  if done.returncode != 0:
    raise RuntimeError(f"roofline worker {spec} on {cores} cores failed:\n"
                       f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
  return json.loads(done.stdout.strip().splitlines()[-1])


def roofline(name: str, unit: str, jx: dict, npy: dict, machine: dict) -> dict:
  """One family's roofline figures from its JAX and NumPy measurements and the machine's."""
  peak, bandwidth = machine["peak_gflop_s"] * GB, machine["bandwidth_gb_s"] * GB
  flops, nbytes = jx["flops"], jx["bytes"]
  intensity = flops / nbytes
  roof_s = max(flops / peak, nbytes / bandwidth)      # flops / min(peak, intensity x bandwidth)
  share = npy["runs"] / jx["computed"]                # NumPy computes the runs, JAX whole blocks of them
  numpy_roof_s = roof_s * share
  kept = ("runs", "computed", "devices", "transcendentals", "uncounted_loops", "xla_flops_loops_once",
          "xla_bytes_loops_once")
  return dict(family=name, unit=unit, **{k: jx[k] for k in kept}, flops=flops, bytes=nbytes, intensity=intensity,
              bound="compute" if flops / peak >= nbytes / bandwidth else "memory",
              bound_gflop_s=min(peak, intensity * bandwidth) / GB, roofline_s=roof_s, compute_s=flops / peak,
              jax_s=jx["seconds"], jax_compile_s=jx["compile_s"], jax_cores_used=jx["cores_used"],
              jax_gflop_s=flops / jx["seconds"] / GB, jax_gb_s=nbytes / jx["seconds"] / GB,
              jax_fraction=roof_s / jx["seconds"],
              numpy_s=npy["seconds"], numpy_cores_used=npy["cores_used"],
              numpy_gflop_s=flops * share / npy["seconds"] / GB, numpy_gb_s=nbytes * share / npy["seconds"] / GB,
              numpy_fraction=numpy_roof_s / npy["seconds"], max_speedup=npy["seconds"] / numpy_roof_s,
              five_x_possible=npy["seconds"] / 5 >= numpy_roof_s)


def run(size: str, cores=None, repeats: int = 2, in_process: bool = False, log=print) -> dict:
  """Every family's roofline at `size`, for each core count of `cores` (default 1 and all) in fresh pinned
  processes, or once in this process (`in_process`)."""
  t0 = time.perf_counter()
  result = dict(size=size, repeats=repeats, machine=suite.machine(), settings=[])
  for c in ([None] if in_process else cores or sorted({1, common.CORES})):
    label = "this process" if c is None else f"{c} core" + "s" * (c > 1)
    machine = (machine_figures(size, repeats) if c is None
               else fresh(dict(do="machine", size=size, repeats=repeats, procs=c), c))
    log(f"{label}: triad {machine['numpy_triad']['gb_s']:.1f} GB/s (NumPy, float64), "
        f"{machine['jax_triad']['gb_s']:.1f} GB/s (JAX, float32); matmul {machine['peak_gflop_s']:.1f} GFLOP/s "
        f"(JAX, float32, n={machine['matmul']['n']})")
    rows = []
    for module in suite.FAMILIES:
      fam = importlib.import_module(module)
      if c is None:
        jx, npy = program_figures(module, size, repeats), numpy_figures(module, size, repeats)
      else:
        jx = fresh(dict(do="program", module=module, size=size, repeats=repeats), c)
        npy = common.measure(module, "numpy", size, fam.SIZES[size]["runs"], c, repeats)
      rows.append(r := roofline(fam.NAME, fam.UNIT, jx, npy, machine))
      log(f"  {r['family']}: {r['flops'] / GB:.3g} GFLOP, {r['bytes'] / GB:.3g} GB, roofline {r['roofline_s']:.3g} s "
          f"({r['bound']}); JAX {r['jax_s']:.3g} s ({r['jax_fraction']:.1%}), NumPy {r['numpy_s']:.3g} s "
          f"({r['numpy_fraction']:.1%}); 5x over NumPy {'possible' if r['five_x_possible'] else 'impossible'}")
    result["settings"].append(dict(cores=c, label=label, machine=machine, families=rows))
  result["machine"]["load_end"] = os.getloadavg()[0]
  result["seconds"] = time.perf_counter() - t0
  return result


def markdown(result: dict) -> str:
  """The machine's figures per core setting, then one table row per family and setting."""
  m = result["machine"]
  lines = [f"Measured {m['date']} on {m['cpu']} ({m['cores']} cores), load average {m['load_start']:.1f} at the start "
           f"and {m['load_end']:.1f} at the end; `--size {result['size']}`, best of {result['repeats']} calls.", ""]
  for s in result["settings"]:
    mach = s["machine"]
    lines.append(f"- {s['label']}: triad {mach['numpy_triad']['gb_s']:.1f} GB/s in NumPy (float64, 3 x 8 bytes per "
                 f"element, {mach['numpy_triad']['procs']} process(es)), {mach['jax_triad']['gb_s']:.1f} GB/s in JAX "
                 f"(float32, 3 x 4 bytes); matmul {mach['peak_gflop_s']:.1f} GFLOP/s (JAX, float32, "
                 f"n = {mach['matmul']['n']}).")
  lines += ["", "| family | cores | GFLOP | GB accessed | transcendentals (M) | FLOP/byte | bound | roofline s "
            "| FLOPs / peak s | JAX s | JAX GFLOP/s | JAX GB/s | JAX % of roofline | NumPy s | NumPy % of roofline "
            "| NumPy s / roofline s | 5x over NumPy possible |", "|" + "---|" * 17]
  for s in result["settings"]:
    for r in s["families"]:
      cells = [f"{r['family']} ({r['runs']:,} {r['unit']})", s["label"], f"{r['flops'] / GB:.3g}",
               f"{r['bytes'] / GB:.3g}", f"{r['transcendentals'] / 1e6:.3g}", f"{r['intensity']:.2f}", r["bound"],
               f"{r['roofline_s']:.3g}", f"{r['compute_s']:.3g}", f"{r['jax_s']:.3g}", f"{r['jax_gflop_s']:.2f}",
               f"{r['jax_gb_s']:.2f}", f"{r['jax_fraction']:.1%}", f"{r['numpy_s']:.3g}", f"{r['numpy_fraction']:.1%}",
               f"{r['max_speedup']:.1f}x", "yes" if r["five_x_possible"] else "no"]
      lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=sorted(SIZES), default="cpu")
  parser.add_argument("--cores", type=int, nargs="+", help=f"core counts to pin to (default: 1 and {common.CORES})")
  parser.add_argument("--repeats", type=int, default=2, help="timed calls per figure (the best counts)")
  parser.add_argument("--in-process", action="store_true", help="measure in this process, unpinned")
  parser.add_argument("--json", metavar="PATH", help="write every figure here")
  args = parser.parse_args(argv)
  result = run(args.size, args.cores, args.repeats, args.in_process)
  print(markdown(result))
  if args.json:
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
  return result


if __name__ == "__main__":
  if len(sys.argv) == 3 and sys.argv[1] == "--worker":
    print(json.dumps(worker(json.loads(sys.argv[2]))))
  else:
    main()
