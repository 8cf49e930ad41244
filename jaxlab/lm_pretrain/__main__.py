"""Exact match of a finished model folder: `python -m jaxlab.lm_pretrain models/lm_base`."""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

from jaxlab.core import report as report_lib
from jaxlab.core.config import repo_path
from jaxlab.lm import checkpoint_io
from jaxlab.lm.tokenizer import load_tokenizer
from jaxlab.lm_pretrain.evaluation import TASK_TYPES, evaluate_all, exact_match


def main(argv=None) -> None:
  """Exact match of a model folder (config.json, model.safetensors, tokenizer.json) on `cpu`'s
  evaluation questions, per split, wording and task."""
  parser = argparse.ArgumentParser(prog="python -m jaxlab.lm_pretrain", description=main.__doc__)
  parser.add_argument("model", type=Path)
  parser.add_argument("--variant", default="cpu",
                      help="the configs/lm_pretrain.py variant whose eval block and seed to use")
  args = parser.parse_args(argv)
  config = runpy.run_path(str(repo_path("configs/lm_pretrain.py")))["get_config"](args.variant)
  model, tokenizer = checkpoint_io.load(args.model), load_tokenizer(args.model)
  for (split, wording), results in evaluate_all(model, tokenizer, config).items():
    em = exact_match(results)
    print(f"{split:10s} {wording:8s} " + "  ".join(f"{t} {report_lib.fmt(em[t], 3)}" for t in TASK_TYPES))


if __name__ == "__main__":
  main()
