"""Context rot (latent-pager.md, the third note's distractor-ratio x
horizon grid): F1 per cell for the text buffer, the trained pager and the full context.

The pager is the one a finished `compare` run trained (`rot.pager_workdir`: its config and its
best checkpoint by validation F1; for the frontier's best pager, point this at its point folder).
Each cell (distractor ratio d, horizon h) is a fresh synthetic test set built with the pager
run's document settings but that ratio and horizon, `rot.questions_per_cell` answerable
questions (no unanswerable ones: a cell measures recall under distractors and distance); every
system answers them raw, without abstaining. One heat map per system.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np
from flax import nnx

from jaxlab.core import checkpoint, report as report_lib, train as train_lib
from jaxlab.core.config import from_dict, repo_path, to_dict
from jaxlab.core.stats import describe
from jaxlab.paging import data, figures as figures_lib, metrics, pager as pager_lib, pipeline, train
from jaxlab.paging.spec import PagerSpec, TrainSpec


def trained_pager(pager_config, setup, pager_workdir: Path) -> dict:
  """The best-by-validation-F1 pager of a finished compare run, restored from its checkpoints."""
  graphdef, params = nnx.split(pager_lib.build(PagerSpec.of(pager_config), setup.lm))
  params = train.Placement.of(params, setup.mesh).put(params)    # restored where training kept it
  fingerprint = checkpoint.fingerprint({k: to_dict(pager_config)[k] for k in train.FINGERPRINT_FIELDS
                                       if k in pager_config})
  with checkpoint.Checkpoints(pager_workdir / "checkpoints", fingerprint, best=train_lib.BEST) as ckpt:
    if ckpt.latest_step() is None:
      raise FileNotFoundError(f"{pager_workdir}/checkpoints: no trained pager (run the compare config there first)")
    meta = ckpt.meta()
    tx, _ = train.optimizer(TrainSpec.of(pager_config), 1)
    target = checkpoint.abstract_like({"params": params, "opt_state": tx.init(params)})
    state, _ = ckpt.restore(target, step=ckpt.best_step())
  history = meta["history"]
  return {"graphdef": graphdef, "params": state["params"], "history": history,
          "max_pages": pager_config.pages.max_pages, "q_width": 64}


def run(config, workdir: Path):

  workdir = Path(workdir)
  pager_dir = repo_path(config.rot.pager_workdir)
  pager_config = from_dict(json.loads((pager_dir / "config.json").read_text()))
  setup = pipeline.Setup(pager_config, workdir)
  trained = trained_pager(pager_config, setup, pager_dir)
  cells = []
  for d in config.rot.distractor_ratios:
    for h in config.rot.horizons:
      splits = data.load(data.DataSpec.of(pager_config), workdir, distractor_ratio=float(d), horizon=float(h),
                         num_train=1, num_validation=1, num_test=config.rot.questions_per_cell,
                         unanswerable_fraction=0.0, questions_per_document=1)
      test = [r for r in splits["test"] if not r.get("probe")]
      trained["q_width"] = pager_lib.question_width(setup.tokenizer, pager_config.prompts.pager, test)
      out = pipeline.answer_split(setup, pager_config, trained, test)
      cells.append({"distractor_ratio": float(d), "horizon": float(h),
                    "answers": {s: a["answers"] for s, a in out.items()},
                    "records": [{k: r[k] for k in ("id", "question", "gold_answer", "document")} for r in test]})
  if jax.process_index() != 0:
    return None
  (workdir / "cells.json").write_text(json.dumps(cells) + "\n")
  return report(workdir)


def summarize(cells: list[dict]) -> dict:
  out = {}
  for c in cells:
    for s, answers in c["answers"].items():
      f1 = [metrics.token_f1(a, r["gold_answer"]) for a, r in zip(answers, c["records"]) if a is not None]
      out.setdefault(s, []).append({"distractor_ratio": c["distractor_ratio"], "horizon": c["horizon"],
                                    "f1": describe(f1)})
  return out


def report(workdir) -> Path:
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  cells = json.loads((workdir / "cells.json").read_text())
  grid = summarize(cells)
  report_lib.write_json(workdir / "summary.json", {"experiment": config["experiment"], "variant": config.get("variant"),
                                                   "pager_workdir": config["rot"]["pager_workdir"], "cells": grid})
  ratios, horizons = config["rot"]["distractor_ratios"], config["rot"]["horizons"]
  systems = list(grid)
  fig, axes = plt.subplots(1, len(systems), figsize=(4.2 * len(systems), 3.6), squeeze=False)
  tables = []
  for ax, s in zip(axes[0], systems):
    m, n = np.full((len(ratios), len(horizons)), np.nan), np.zeros((len(ratios), len(horizons)), int)
    for c in grid[s]:
      at = ratios.index(c["distractor_ratio"]), horizons.index(c["horizon"])
      m[at] = np.nan if c["f1"]["mean"] is None else c["f1"]["mean"]
      n[at] = c["f1"]["n"]
    im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(horizons)), [f"{h:g}" for h in horizons])
    ax.set_yticks(range(len(ratios)), [f"{d:g}" for d in ratios])
    ax.set_xlabel("horizon (0 = evidence at the end)")
    ax.set_ylabel("distractor ratio")
    ax.set_title(figures_lib.LABELS[s])
    for i in range(len(ratios)):
      for j in range(len(horizons)):
        if not np.isnan(m[i, j]):
          ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
    tables.append((f"F1 per cell: {figures_lib.LABELS[s]}", report_lib.markdown_table(
        ["distractor ratio \\ horizon"] + [f"{h:g}" for h in horizons],
        # The full context answers only where a document fits the window: its cells say how many.
        [[f"{d:g}"] + [f"{m[i, j]:.3f}" + (f" (n={n[i, j]})" if n[i, j] != config["rot"]["questions_per_cell"] else "")
                       for j in range(len(horizons))] for i, d in enumerate(ratios)])))
  fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
  image = report_lib.save_plot(fig, workdir, "context_rot.png")
  n = len(cells[0]["records"])
  sections = [("What ran", f"The pager of `{config['rot']['pager_workdir']}` (its best checkpoint by validation "
                           "F1), the text buffer and the full context (questions whose document fits the window), "
                           f"{n} answerable test questions per cell, raw answers (no abstention).")] + tables
  sections.append(report_lib.plots_section([image]))
  return report_lib.write_report(workdir, "Latent pager: context rot", sections)
