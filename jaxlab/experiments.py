"""The registry: experiment name (a config's `experiment` field) -> the module that runs it.

Each module provides
  validate(config)     raise jaxlab.core.config.ConfigError for a bad field, before any compute;
  run(config, workdir) compute the sweep (chunked, checkpointed, sharded), save runs.npz, report;
  report(workdir)      rebuild summary.json, report.md and the plots from config.json + runs.npz;
and may provide
  evaluate(workdir, data_dir, out)  score a finished run on another data folder (`jaxlab eval`);
  export_test(config, out)  write the config's test data as such a folder (`jaxlab data`);
  compare(run_a, run_b, system, out)  one system of two finished runs, paired on the same test
                                      questions (`jaxlab compare`): the lines to print;
  over_seeds(runs, system, against, out)  one system against another over runs that differ in their
                                        training seed (`jaxlab seeds`): the lines to print.
A new experiment adds one line here.
"""

from __future__ import annotations

import importlib

EXPERIMENTS = {
    "org_forms": "jaxlab.swarm.org_forms",
    "hidden_gems": "jaxlab.swarm.hidden_gems",
    "proactive_memory": "jaxlab.memory.proactive",
    "harness_vs_brain": "jaxlab.evolution.harness_vs_brain",
    "lm_pretrain": "jaxlab.lm_pretrain",
    "developmental": "jaxlab.developmental",
    "latent_pager": "jaxlab.paging",
}


def get(name: str):
  if name not in EXPERIMENTS:
    raise KeyError(f"unknown experiment {name!r}; known: {sorted(EXPERIMENTS)}")
  return importlib.import_module(EXPERIMENTS[name])
