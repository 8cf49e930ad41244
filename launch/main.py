"""The jaxlab command.

  jaxlab run CONFIG.py[:variant] --workdir DIR [--config.FIELD=VALUE ...] [--no-compile-cache] [--fast-compile]
             [--distributed ...]
  jaxlab report DIR
  jaxlab eval DIR --data DATA_DIR --out OUT
  jaxlab data CONFIG.py[:variant] --out DATA_DIR [--config.FIELD=VALUE ...]
  jaxlab compare RUN_A RUN_B --system NAME [--out FILE.json]
  jaxlab seeds RUN RUN [RUN ...] --system NAME --against OTHER [--out FILE.json]
  jaxlab verify DIR | --all [--quick] [--experiment NAME ...] [--record]
  jaxlab receipt DIR
  jaxlab receipts

`run` loads and validates the config (errors name the field and where it was set), writes
DIR/config.json, and hands over to the experiment's `run(config, workdir)`; it prints the wall time
split into compiling and running, and keeps compiled programs in JAX's persistent cache
(`~/.cache/jaxlab/xla` or `$JAXLAB_COMPILE_CACHE`; `--no-compile-cache` turns it off), so a second
run or a resumed one skips compiling. `--fast-compile` compiles with XLA flags that take less time
and give other last bits (jaxlab/core/codegen.py: another machine kind, so such a run meets a
receipt within seed error). The same command on
a workdir with checkpoints resumes (one holding another run's checkpoints is refused with one
line); it also writes DIR/provenance.json (commit, package versions, device, the CPU instruction
set XLA used, the command line). `report` rebuilds summary.json, report.md and the plots from a
finished workdir. `eval` scores a finished run on another data folder without training or choosing
anything again, writing predictions and a report to OUT (experiments with an `evaluate`: the
latent pager's `compare` runs, on DATA_DIR/test.jsonl, and its `seeds` studies, run by run and
graded over seeds; jaxlab/paging/evaluation.py); `data` writes
a config's test data as such a folder (experiments with an `export_test`: the latent pager's test
world, `data.test_seed` and `data.num_test`, with its held-out wordings). `compare`
pairs one system of two finished runs on the same test questions and prints A - B with paired
intervals, each run's threshold chosen on its own validation answers (jaxlab/paging/pairs.py);
`seeds` grades one system against another over runs of one design that differ in their training
seed, seed by seed and over the seeds with a nested bootstrap (the same module).
`verify` checks a finished run against the committed receipt of its experiment and variant
(results/EXPERIMENT/VARIANT/), entry by entry, prints both provenances and the mode it matched in,
and exits 1 naming every row that disagrees; `--all` reruns every receipt's variant first
(`--quick`: the smoke ones), and one that fails to run is reported while the rest are still
checked; `--record` writes verified.json (the run's commit, the mode, the date) beside each receipt
a clean commit's run agrees with. `receipt` commits a finished run as its variant's receipt;
`receipts` lists them with their commit, their last recorded verification and whether their
experiment's code changed since the later of the two (jaxlab/core/receipts.py says how receipts
are matched). For several processes (a GPU or TPU cluster, or two CPU processes on one
machine) pass --distributed: with no other flags JAX detects the cluster (TPU, SLURM, Open MPI,
Kubernetes); see docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def _parser():
  parser = argparse.ArgumentParser(prog="jaxlab", description=__doc__.split("\n\n")[0])
  sub = parser.add_subparsers(dest="command", required=True)
  run = sub.add_parser("run", help="run an experiment config")
  run.add_argument("config", help="path/to/config.py[:variant]")
  run.add_argument("--workdir", required=True, help="where results and checkpoints go")
  run.add_argument("--distributed", action="store_true", help="join a multi-process JAX job")
  run.add_argument("--coordinator", help="host:port of process 0 (default: detected)")
  run.add_argument("--num-processes", type=int)
  run.add_argument("--process-id", type=int)
  run.add_argument("--no-compile-cache", action="store_true",
                   help="compile every program afresh (default: JAX's persistent cache under ~/.cache/jaxlab/xla, "
                        "or $JAXLAB_COMPILE_CACHE)")
  run.add_argument("--fast-compile", action="store_true",
                   help="LLVM at -O1 and XLA's loop emitters: compiles in less time, results differ in their last bits")
  report = sub.add_parser("report", help="rebuild the report of a finished run")
  report.add_argument("workdir")
  evaluate = sub.add_parser("eval", help="score a finished run on another data folder")
  evaluate.add_argument("workdir", help="a finished run")
  evaluate.add_argument("--data", required=True, help="the folder to score (latent_pager: holding test.jsonl)")
  evaluate.add_argument("--out", required=True, help="where the predictions and the report go")
  export = sub.add_parser("data", help="write a config's test data as a folder that `jaxlab eval --data` reads")
  export.add_argument("config", help="path/to/config.py[:variant]")
  export.add_argument("--out", required=True, help="the folder to write")
  compare = sub.add_parser("compare", help="one system of two finished runs, paired on the same test questions")
  compare.add_argument("run_a", help="a finished run (A in A - B)")
  compare.add_argument("run_b", help="a finished run on the same test questions")
  compare.add_argument("--system", required=True, help="the system compared (latent_pager: e.g. hybrid, pager)")
  compare.add_argument("--out", help="also write the result as JSON here")
  seeds = sub.add_parser("seeds", help="one system against another over finished runs that differ in training seed")
  seeds.add_argument("runs", nargs="+", help="finished runs of one design on the same test questions")
  seeds.add_argument("--system", required=True, help="the system graded (latent_pager: e.g. hybrid, latent_pager)")
  seeds.add_argument("--against", required=True,
                     help="the system it is measured against (latent_pager: e.g. text_buffer, retrieval)")
  seeds.add_argument("--out", help="also write the result as JSON here")
  verify = sub.add_parser("verify", help="check a run against its committed receipt")
  verify.add_argument("workdir", nargs="?", help="a finished run (or --all)")
  verify.add_argument("--all", action="store_true", help="rerun every committed receipt's variant and check it")
  verify.add_argument("--quick", action="store_true", help="with --all: the smoke receipts only")
  verify.add_argument("--experiment", action="append", default=[], help="with --all: only this one (repeatable)")
  verify.add_argument("--workroot", help="with --all: where the runs go (default: a temporary folder)")
  verify.add_argument("--match", choices=("bitwise", "seed"), help="override the receipt's matching")
  verify.add_argument("--receipts", help="the receipts folder (default: results/ of this checkout)")
  verify.add_argument("--verbose", action="store_true", help="list every figure, not only disagreements")
  verify.add_argument("--record", action="store_true",
                      help="write verified.json beside each receipt the run agrees with (a clean commit's run only)")
  receipt = sub.add_parser("receipt", help="commit a finished run as its variant's receipt")
  receipt.add_argument("workdir")
  receipt.add_argument("--match", choices=("bitwise", "seed"), default="bitwise",
                       help="how runs are checked against it (bitwise: deterministic on this machine kind)")
  receipt.add_argument("--receipts", help="the receipts folder (default: results/ of this checkout)")
  listing = sub.add_parser("receipts", help="list the committed receipts and whether their code changed since")
  listing.add_argument("--receipts", help="the receipts folder (default: results/ of this checkout)")
  return parser


def _error(message: str) -> int:
  print(f"jaxlab: {message}", file=sys.stderr)
  return 2


def _refuse_with(e: Exception) -> int:
  """A refusal raised as an exception, in one line: its message's first, or its type's name."""
  return _error((str(e).splitlines() or [type(e).__name__])[0])


def _refuse(workdir: Path, previous: dict, config) -> int:
  from jaxlab.core import config as config_lib

  differ = config_lib.differences(previous, config)
  a, b = config_lib.fields(previous), config_lib.fields(config)
  shown = ", ".join(f"{f} ({a.get(f)!r} there, {b.get(f)!r} now)" for f in differ[:3])
  more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
  what = f", differing in {shown}{more}" if differ else " with the same config but checkpoints of other code"
  return _error(f"{workdir} holds another run ({previous.get('experiment')}:{previous.get('variant')}{what}); "
                "use a new --workdir, or delete that one to start over")


def _write_atomically(path: Path, text: str) -> None:
  """Other processes of a distributed run read the file meanwhile: they see the old or the new one."""
  tmp = path.with_name(f".{path.name}.{os.getpid()}")
  tmp.write_text(text)
  os.replace(tmp, path)


def _validate(config) -> None:
  """The config's experiment named and known, and its fields checked by that experiment."""
  from jaxlab import experiments
  from jaxlab.core import config as config_lib

  name = config_lib.require(config, "experiment", lambda v: v in experiments.EXPERIMENTS,
                            f"one of {sorted(experiments.EXPERIMENTS)}")
  experiments.get(name).validate(config)


def _data(spec: str, overrides, out: Path) -> int:
  """Writes the test data of `spec` (with `overrides`) to `out` by its experiment's `export_test`;
  every refusal is one line."""
  from jaxlab import experiments
  from jaxlab.core import config as config_lib

  try:
    config = config_lib.load(spec, overrides, validate=_validate)
  except config_lib.ConfigError as e:
    return _error(f"config error: {e}")
  module = experiments.get(config.experiment)
  if not hasattr(module, "export_test"):
    return _error(f"the {config.experiment} experiment has no `export_test`, so `jaxlab data` cannot write its data")
  try:
    folder = module.export_test(config, out)
  except (FileNotFoundError, ValueError) as e:
    return _refuse_with(e)
  print(f"data: {folder}")
  return 0


def _run(spec: str, overrides, workdir: Path, distributed=None, argv=None, compile_cache: bool = True) -> int:
  """Loads and validates `spec`, writes config.json and runs the experiment in `workdir`; prints
  the wall time split into compiling and running."""
  from jaxlab import experiments
  from jaxlab.core import checkpoint, compile_cache as cache_lib, config as config_lib, train

  try:
    config = config_lib.load(spec, overrides, validate=_validate)
  except config_lib.ConfigError as e:
    return _error(f"config error: {e}")
  if distributed is not None:
    from jaxlab.core import mesh
    mesh.initialize_distributed(*distributed)
  import jax

  # A workdir holds one run. Another experiment's is refused before anything is written; for the
  # same experiment the checkpoints' fingerprint decides (fields such as a stop-after count may
  # change between a run and its resumption), and a refused run leaves config.json as it was.
  path = workdir / "config.json"
  previous = path.read_text() if path.is_file() else None
  if previous is not None and json.loads(previous).get("experiment") != config.experiment:
    return _refuse(workdir, json.loads(previous), config)
  workdir.mkdir(parents=True, exist_ok=True)
  if jax.process_index() == 0:
    from jaxlab.core import provenance

    _write_atomically(path, json.dumps(config.to_dict(), indent=1, sort_keys=True) + "\n")
    provenance.write(workdir, argv)
  # JAX's own settings, where set, stand: its folder, or its switch turned off.
  if compile_cache and not os.environ.get("JAX_COMPILATION_CACHE_DIR") and jax.config.jax_enable_compilation_cache:
    cache_lib.enable()
  clock, started = cache_lib.Clock(), time.perf_counter()
  try:
    report = experiments.get(config.experiment).run(config, workdir)
  except train.Stopped as stop:   # SIGTERM or a per-call limit: saved, and the same command resumes
    if jax.process_index() == 0:
      print(stop)
    return 0
  except checkpoint.CheckpointMismatch:
    if previous is not None and jax.process_index() == 0:
      _write_atomically(workdir / "config.json", previous)
      return _refuse(workdir, json.loads(previous), config)
    return _error(f"{workdir} holds checkpoints of another run (a different config, experiment or code "
                  "version); use a new --workdir, or delete its checkpoints to start over")
  finally:
    clock.stop()
    if jax.process_index() == 0:
      print(clock.line(time.perf_counter() - started))
  if jax.process_index() == 0:
    print(f"report: {report}")
  return 0


def _experiment_of(workdir) -> tuple[str, object]:
  """(experiment name, module) of a finished run's config.json; ValueError says why not, in one line."""
  from jaxlab import experiments

  config_path = Path(workdir) / "config.json"
  if not config_path.is_file():
    raise ValueError(f"{config_path} not found: is {workdir} the workdir of a run?")
  try:
    name = json.loads(config_path.read_text()).get("experiment")
    return name, experiments.get(name)
  except (ValueError, KeyError) as e:
    raise ValueError(f"{config_path}: {e.args[0] if isinstance(e, KeyError) else e}") from None


def _eval(args) -> int:
  """Hands a finished run to its experiment's `evaluate`; every refusal is one line."""
  from jaxlab.core import checkpoint, train

  try:
    name, module = _experiment_of(args.workdir)
  except ValueError as e:
    return _error(str(e))
  if not hasattr(module, "evaluate"):
    return _error(f"the {name} experiment has no `evaluate`, so `jaxlab eval` cannot score {args.workdir}")
  try:
    path = module.evaluate(args.workdir, args.data, args.out)
  except (FileNotFoundError, ValueError, train.Unfinished, checkpoint.CheckpointMismatch) as e:
    return _refuse_with(e)
  if path is not None:
    print(f"report: {path}")
  return 0


def _compare(args) -> int:
  """Hands finished runs of one experiment to its `compare` (`jaxlab compare`) or its `seeds`
  (`jaxlab seeds`); every refusal is one line."""
  runs = [args.run_a, args.run_b] if args.command == "compare" else args.runs
  try:
    found = [_experiment_of(run) for run in runs]
  except ValueError as e:
    return _error(str(e))
  (name, module), other = found[0], next((x for x in found if x[0] != found[0][0]), None)
  if other is not None:
    return _error(f"{runs[0]} is a {name} run and {runs[found.index(other)]} a {other[0]} run: nothing to pair")
  hook = "compare" if args.command == "compare" else "over_seeds"
  if not hasattr(module, hook):
    return _error(f"the {name} experiment has no `{hook}`, so `jaxlab {args.command}` cannot pair its runs")
  try:
    if args.command == "compare":
      print(module.compare(args.run_a, args.run_b, args.system, args.out))
    else:
      print(module.over_seeds(args.runs, args.system, args.against, args.out))
  except (FileNotFoundError, ValueError) as e:
    return _refuse_with(e)
  return 0


def _verify(args) -> int:
  from jaxlab.core import compile_cache as cache_lib, receipts

  root = Path(args.receipts) if args.receipts else receipts.RESULTS
  if args.all == bool(args.workdir):
    return _error("verify takes either a workdir or --all")
  if args.workdir:
    targets = [(Path(args.workdir), None)]
  else:
    found = receipts.find(root, args.quick, args.experiment)
    if not found:
      return _error(f"no {'smoke ' if args.quick else ''}receipts under {root}")
    workroot = Path(args.workroot or tempfile.mkdtemp(prefix="jaxlab-verify-"))
    targets = [(workroot / experiment / variant, f"{experiment}/{variant}") for experiment, variant in found]
  outcomes = []
  for workdir, name in targets:
    if name is not None:  # --all: run the receipt's variant first; a run that fails is reported, the rest go on
      cache_lib.release()  # the runs before it compiled programs this one will not call
      experiment, variant = name.split("/")
      argv = ["run", f"configs/{experiment}.py:{variant}", "--workdir", str(workdir)]
      try:
        code = _run(str(receipts.REPO / "configs" / f"{experiment}.py") + f":{variant}", [], workdir, argv=argv)
      except Exception as e:  # noqa: BLE001 - one experiment's failure must not hide the others' results
        code = _error(f"{name}: the run failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
      if code:
        outcomes.append((name, "the run failed"))
        continue
    try:
      result = receipts.verify(workdir, root, args.match)
    except (FileNotFoundError, receipts.NotARun) as e:
      if name is None:
        return _error(str(e))
      _error(f"{name}: {e}")
      outcomes.append((name, "no receipt to check"))
      continue
    print(result.table(args.verbose) + "\n")
    for check in result.failures:
      print(f"jaxlab: {result.receipt}: {check.kind} {check.name} disagrees ({check.why})", file=sys.stderr)
    unchecked = f", {len(result.unchecked)} unchecked" if result.unchecked else ""
    if args.record:
      written, why = receipts.record(result, root)
      print(f"recorded in {written}" if written else f"jaxlab: not recorded: {why}",
            file=sys.stdout if written else sys.stderr)
    outcomes.append((name or str(workdir), ("agrees" if result.ok else f"{len(result.failures)} disagree") + unchecked))
  if len(outcomes) > 1:
    from jaxlab.core import report

    print(report.markdown_table(["receipt", "result"], [list(o) for o in outcomes]))
  return 1 if any(not o[1].startswith("agrees") for o in outcomes) else 0


def main(argv=None) -> int:
  args, extra = _parser().parse_known_args(argv)
  from jaxlab.core import cpu_threads  # before JAX starts: forced CPU devices need their own threads

  cpu_threads.ensure()
  if extra and args.command not in ("run", "data"):
    return _error(f"{args.command} takes no {' '.join(extra)} (config overrides belong to `jaxlab run` and "
                  "`jaxlab data`)")
  # Imports wait until after parsing so `jaxlab --help` is instant.
  if args.command == "report":
    from jaxlab import experiments
    from jaxlab.core import config as config_lib

    config_path = Path(args.workdir) / "config.json"
    if not config_path.is_file():
      return _error(f"{config_path} not found: is {args.workdir} the workdir of a run?")
    config = config_lib.from_dict(json.loads(config_path.read_text()))
    path = experiments.get(config.experiment).report(args.workdir)
    print(f"report: {path}")
    return 0
  if args.command == "eval":
    return _eval(args)
  if args.command == "data":
    return _data(args.config, extra, Path(args.out))
  if args.command in ("compare", "seeds"):
    return _compare(args)
  if args.command == "verify":
    return _verify(args)
  if args.command == "receipts":
    from jaxlab.core import receipts

    print(receipts.listing_table(receipts.listing(Path(args.receipts) if args.receipts else receipts.RESULTS)))
    return 0
  if args.command == "receipt":
    from jaxlab.core import receipts

    try:
      where = receipts.save(args.workdir, Path(args.receipts) if args.receipts else receipts.RESULTS, args.match)
    except FileNotFoundError as e:
      return _error(str(e))
    print(f"receipt: {where}")
    return 0
  if args.fast_compile:   # before JAX starts its backend, which reads XLA_FLAGS once
    from jaxlab.core import codegen

    try:
      codegen.use_fast()
    except codegen.Started as e:
      return _error(f"--fast-compile: {e}")
  distributed = (args.coordinator, args.num_processes, args.process_id) if args.distributed else None
  return _run(args.config, extra, Path(args.workdir), distributed, argv=sys.argv[1:] if argv is None else argv,
              compile_cache=not args.no_compile_cache)


if __name__ == "__main__":
  sys.exit(main())
