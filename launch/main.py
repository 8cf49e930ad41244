"""The jaxlab command.

  jaxlab run CONFIG.py[:variant] --workdir DIR [--config.FIELD=VALUE ...] [--distributed ...]
  jaxlab report DIR

`run` loads and validates the config (errors name the field and where it was set), writes
DIR/config.json, and hands over to the experiment's `run(config, workdir)`; the same command on
a workdir with checkpoints resumes. `report` rebuilds summary.json, report.md and the plots from
a finished workdir. For several processes (a GPU or TPU cluster, or two CPU processes on one
machine) pass --distributed: with no other flags JAX detects the cluster (TPU, SLURM, Open MPI,
Kubernetes); see docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import sys
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
  report = sub.add_parser("report", help="rebuild the report of a finished run")
  report.add_argument("workdir")
  return parser


def main(argv=None) -> int:
  args, extra = _parser().parse_known_args(argv)
  # Imports wait until after parsing so `jaxlab --help` is instant.
  from jaxlab import experiments
  from jaxlab.core import config as config_lib

  if args.command == "report":
    config_path = Path(args.workdir) / "config.json"
    if not config_path.is_file():
      print(f"jaxlab: {config_path} not found: is {args.workdir} the workdir of a run?", file=sys.stderr)
      return 2
    config = config_lib.from_dict(json.loads(config_path.read_text()))
    path = experiments.get(config.experiment).report(args.workdir)
    print(f"report: {path}")
    return 0

  def validate(config):
    name = config_lib.require(config, "experiment", lambda v: v in experiments.EXPERIMENTS,
                              f"one of {sorted(experiments.EXPERIMENTS)}")
    experiments.get(name).validate(config)

  try:
    config = config_lib.load(args.config, extra, validate=validate)
  except config_lib.ConfigError as e:
    print(f"jaxlab: config error: {e}", file=sys.stderr)
    return 2
  if args.distributed:
    from jaxlab.core import mesh
    mesh.initialize_distributed(args.coordinator, args.num_processes, args.process_id)
  import jax

  workdir = Path(args.workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  if jax.process_index() == 0:
    (workdir / "config.json").write_text(json.dumps(config.to_dict(), indent=1, sort_keys=True) + "\n")
  path = experiments.get(config.experiment).run(config, workdir)
  if jax.process_index() == 0:
    print(f"report: {path}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
