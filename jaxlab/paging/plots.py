"""The plots of a latent-pager comparison: the training curve beside the published one, and the
risk-coverage curves of every system with a confidence."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from jaxlab.core import report as report_lib
from jaxlab.paging import published
from jaxlab.paging.figures import LABELS
from jaxlab.paging.spec import kept


def plot_training(history: list[dict], workdir: Path, keep: str = "val_f1") -> str:
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  x = [h["step"] for h in history]
  pub = sorted(published.TRAINING.items())
  for ax, key, i, title in ((axes[0], "val_f1", 2, "validation F1"), (axes[1], "val_loss", 1, "validation loss")):
    ax.plot(x, [h[key] for h in history], "o-", label="ours (by step)")
    twin = ax.twiny()
    twin.plot([e for e, _ in pub], [v[i] for _, v in pub], "s--", color="grey", label="published, Qwen3-1.7B (epoch)")
    twin.set_xlabel("published epoch")
    ax.set_xlabel("step")
    ax.set_title(title)
    ax.legend(loc="lower right")
    twin.legend(loc="upper right")
  axes[0].axvline(kept(history, keep)["step"], color="C1", lw=0.8)   # the state the run answers with
  return report_lib.save_plot(fig, workdir, "training_curve.png")


def plot_risk_coverage(summary: dict, workdir: Path) -> str | None:
  curves = summary["risk_coverage"]
  if not curves:
    return None
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  for ax, kind, title in ((axes[0], "error", "risk = 1 - F1"),
                          (axes[1], "hallucination", "risk = grounded hallucination")):
    for s, c in curves.items():
      ax.plot(c[kind]["coverage"], c[kind]["risk"], label=f"{LABELS[s]} (AURC {c[kind]['aurc']:.3f})")
    ax.set_xlabel("coverage (most confident first)")
    ax.set_ylabel("risk of the answered questions")
    ax.set_title(title)
    ax.legend()
  return report_lib.save_plot(fig, workdir, "risk_coverage.png")
