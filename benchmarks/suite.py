"""Every benchmark in one command, with one JSON of figures: the accelerator suite and the CPU table.

  python benchmarks/suite.py --size gpu --out results.json     # one accelerator (docs/benchmarks.md)
  python benchmarks/suite.py --size tiny --out /tmp/tiny.json  # the same code paths on CPU, in the tests
  python benchmarks/suite.py --size cpu --out docs/benchmarks.json --markdown docs/benchmarks_table.md \
      --scaling docs                                           # the fair CPU table (and curves) of the docs

`gpu` and `tiny` run each simulation family's jitted program at that size on the devices JAX
finds (every figure: runs per second and the compile time, measured in a fresh process, see
common.py), then `benchmarks/developmental.py` (MJX env-steps/s) and `benchmarks/lm.py` (MFU) at the
same size, whose printed lines are kept and parsed. `cpu` runs the fair comparison of every family
(loop, batched NumPy and JAX on 1 core and on all cores) and, with --scaling DIR, the runs/s
against batch size curves as DIR/benchmarks_<family>.png. The JSON records the device, the date
and the machine's load average at the start and end, since timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

FAMILIES = ("benchmarks.org_forms", "benchmarks.hidden_gems", "benchmarks.proactive_memory",
            "benchmarks.harness_vs_brain")
SCRIPTS = ("developmental", "lm")     # their own scripts; the suite runs them and reads what they print
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?")   # not the 16 of "bf16"


def parse_figures(text: str) -> dict:
  """A printed benchmark's figures: for every `label: ...` line, the numbers in it, in order.
  (Kept beside the raw lines, so a changed format loses no information.)"""
  figures = {}
  for line in text.splitlines():
    if ":" not in line:
      continue
    label, rest = line.split(":", 1)
    numbers = [float(x.replace(",", "")) for x in NUMBER.findall(rest) if x.replace(",", "").strip(".")]
    if numbers:
      figures[" ".join(label.split())] = numbers
  return figures


def run_script(name: str, size: str, log=print, timeout: float | None = None) -> dict:
  """benchmarks/<name>.py --size SIZE in a fresh process; its lines and parsed figures (those it
  printed before `timeout` seconds, when it runs longer)."""
  module = importlib.import_module(f"benchmarks.{name}")
  if size not in module.SIZES:
    log(f"  {name}: no `{size}` size in benchmarks/{name}.py, skipped")
    return dict(skipped=f"benchmarks/{name}.py has no --size {size}")
  env = {**os.environ, "PYTHONPATH": str(common.ROOT)}
  env["XLA_FLAGS"] = common.xla_flags(None, single_core=False)
  t0 = time.perf_counter()
  try:
    done = subprocess.run([sys.executable, str(common.ROOT / "benchmarks" / f"{name}.py"), "--size", size],
                          env=env, cwd=common.ROOT, capture_output=True, text=True, timeout=timeout)
    text = done.stdout
  except subprocess.TimeoutExpired as e:   # what it printed so far comes as bytes
    done, text = None, e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
  seconds = time.perf_counter() - t0
  lines = text.strip().splitlines()
  for line in lines:
    log(f"  {name}: {line}")
  if done is None:
    log(f"  {name}: stopped after {timeout:.0f} s")
    return dict(timed_out=timeout, lines=lines, figures=parse_figures(text))
  if done.returncode != 0:
    log(done.stderr[-3000:])
    return dict(failed=done.returncode, stderr=done.stderr[-3000:], lines=lines, seconds=seconds)
  return dict(lines=lines, figures=parse_figures(text), seconds=seconds)


def device_suite(size: str, log=print, timeout: float | None = None, saved=lambda out: None,
                 only=None) -> dict:
  """Each family's jitted program at `size` on the devices JAX finds, then the two scripts; each
  stopped after `timeout` seconds (recorded as `timed_out`, and the next one runs), and `saved`
  called with the figures so far after each, so a stopped suite keeps what it measured. `only`:
  the names (`hidden_gems`, `lm`, ...) of the families and scripts to run, None for all."""
  chosen = lambda name: only is None or name.rsplit(".", 1)[-1] in only
  out = {}
  for module in filter(chosen, FAMILIES):
    fam = importlib.import_module(module)
    n = fam.SIZES[size]["runs"]
    try:   # one timed call after the compiling one
      m = common.measure(module, "jax", size, n, repeats=1, cpu=False, timeout=timeout)
    except subprocess.TimeoutExpired:
      out[fam.NAME] = dict(unit=fam.UNIT, runs=n, timed_out=timeout)
      log(f"{fam.NAME}: {n} {fam.UNIT} not done after {timeout:.0f} s (compiling and one call), stopped")
      saved(out)
      continue
    out[fam.NAME] = dict(unit=fam.UNIT, runs=n, seconds=m["seconds"], rate=n / m["seconds"],
                         compile_s=m["compile_s"], devices=m["devices"], device_kind=m["device_kind"],
                         platform=m["platform"])
    log(f"{fam.NAME}: {n} {fam.UNIT} in {m['seconds']:.3f} s = {n / m['seconds']:,.1f} {fam.UNIT}/s on "
        f"{m['devices']} x {m['device_kind']} (compile {m['compile_s']:.1f} s)")
    saved(out)
  for name in filter(chosen, SCRIPTS):
    out[name] = run_script(name, size, log, timeout)
    saved(out)
  return out


def cpu_suite(size: str, scaling_dir: str | None, powers, cap_s: float, log=print) -> dict:
  out = {}
  for module in FAMILIES:
    fam = importlib.import_module(module)
    log(f"{fam.NAME}: {fam.SIZES[size]['runs']} {fam.UNIT} (loop on {fam.SIZES[size]['loop']})")
    out[fam.NAME] = {"compare": common.compare(module, size, log=log)}
    log(out[fam.NAME]["compare"]["line"])
    if scaling_dir:
      curve = common.scaling(module, size, powers, cap_s, log=log)
      path = Path(scaling_dir) / f"benchmarks_{module.split('.')[-1]}.png"
      common.plot_scaling(curve, path)
      out[fam.NAME]["scaling"] = dict(curve, png=str(path))
  return out


def markdown(result: dict) -> str:
  """The docs' table: per family every column's rate, JAX's compile time and the three ratios."""
  head = ("| family | loop, 1 core | batched NumPy, 1 core | JAX, 1 core | batched NumPy, all cores "
          "| JAX, all cores | JAX compile (1 core / all) | jax/numpy-batched, 1 core | 1 core, CPU seconds "
          "| all cores | jax/numpy-loop |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
  rows = []
  for name, fam in result["families"].items():
    c = fam["compare"]
    r, cols, u = c["rates"], c["columns"], c["unit"]
    rows.append(f"| {name} ({cols['numpy_1core']['runs']:,} {u}) | {r['loop']:,.1f} | {r['numpy_1core']:,.1f} "
                f"| {r['jax_1core']:,.1f} | {r['numpy_all']:,.1f} | {r['jax_all']:,.1f} "
                f"| {cols['jax_1core']['compile_s']:.1f} s / {cols['jax_all']['compile_s']:.1f} s "
                f"| **{c['ratio_1core']:.1f}x** | {c['ratio_1core_cpu']:.1f}x | **{c['ratio_all']:.1f}x** "
                f"| {c['ratio_loop']:.1f}x |")
  m = result["machine"]
  busy = [col["cores_used"] for f in result["families"].values() for key, col in f["compare"]["columns"].items()
          if key.endswith("_all")]
  units = "/".join(sorted({f["compare"]["unit"] for f in result["families"].values()}))
  return (f"Measured {m['date']} on {m['cpu']} ({m['cores']} cores), load average {m['load_start']:.1f} at the "
          f"start and {m['load_end']:.1f} at the end (the all-cores columns kept {min(busy):.2f} to "
          f"{max(busy):.2f} cores busy); rates in {units} per second, best of 2 calls.\n\n"
          + head + "\n".join(rows) + "\n")


def machine() -> dict:
  cpu = platform.processor() or platform.machine()
  try:
    cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
  except (OSError, StopIteration):
    pass
  return dict(date=datetime.date.today().isoformat(), cpu=cpu, cores=common.CORES, load_start=os.getloadavg()[0])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size", choices=("tiny", "cpu", "gpu"), default="gpu")
  parser.add_argument("--out", default="results.json", help="where the JSON of every figure goes")
  parser.add_argument("--markdown", metavar="PATH", help="(--size cpu) also write the docs' table here")
  parser.add_argument("--scaling", metavar="DIR", help="(--size cpu) also measure and plot the scaling curves")
  parser.add_argument("--powers", type=int, nargs="+", default=list(range(6, 15)),
                      help="scaling batches: 2^p runs for each p")
  parser.add_argument("--table-from", metavar="JSON", help="only rebuild --markdown from a saved --size cpu JSON")
  parser.add_argument("--timeout", type=float, default=300.0,
                      help="(--size gpu | tiny) seconds each family's program or script may take before it is stopped")
  parser.add_argument("--only", nargs="+", metavar="NAME",
                      choices=[m.rsplit(".", 1)[-1] for m in FAMILIES] + list(SCRIPTS),
                      help="(--size gpu | tiny) run only these families and scripts")
  parser.add_argument("--cap", type=float, default=60.0,
                      help="a scaling curve stops growing after a call longer than this (seconds)")
  args = parser.parse_args(argv)
  if args.table_from:
    Path(args.markdown).write_text(markdown(json.loads(Path(args.table_from).read_text())))
    return
  t0 = time.perf_counter()
  result = {"size": args.size, "machine": machine()}
  if args.size == "cpu":
    result["families"] = cpu_suite(args.size, args.scaling, args.powers, args.cap)
  else:
    def saved(out):
      Path(args.out).write_text(json.dumps({**result, "families": out, "partial": True}, indent=1))
    result["families"] = device_suite(args.size, timeout=args.timeout, saved=saved, only=args.only)
  result["machine"]["load_end"] = os.getloadavg()[0]
  result["seconds"] = time.perf_counter() - t0
  Path(args.out).write_text(json.dumps(result, indent=1))
  if args.markdown and args.size == "cpu":
    Path(args.markdown).write_text(markdown(result))
  print(f"suite ({args.size}): {result['seconds']:.0f} s; figures in {args.out}")


if __name__ == "__main__":
  main()
