"""The published claims of the latent pager's comparison, graded on this run's paired intervals."""

from __future__ import annotations

import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.stats import bootstrap_claim
from jaxlab.paging import published
from jaxlab.paging.spec import kept

def claims(summary, main, sc, resamples: int, seed: int) -> list[dict]:
  f, iv = summary["figures"], summary["intervals"]
  m = lambda key: f[key]["mean"]
  ours = lambda metric: f"pager {m(f'all/latent_pager/{metric}'):.4f} vs text {m(f'all/text_buffer/{metric}'):.4f}"
  history = summary["training"]
  best_f1 = kept(history, "val_f1")
  best_loss = min(history, key=lambda h: h["val_loss"])
  flip = lambda i: None if i is None else {**i, "diff": -i["diff"], "ci": None if i["ci"] is None else
                                           [-i["ci"][1], -i["ci"][0]]}
  out = [
      report_lib.claim("The latent pager has a higher F1 than the text buffer", "+0.0075, p < 0.001",
                       ours("f1"), iv.get("all/f1/latent_pager-text_buffer")),
      report_lib.claim("The latent pager has a higher ROUGE-L", "+0.0083, p < 0.001",
                       ours("rouge_l"), iv.get("all/rouge_l/latent_pager-text_buffer")),
      report_lib.claim("The latent pager hallucinates more (published heuristic)", "+0.288, p < 0.001",
                       ours("hallucination"),
                       iv.get("all/hallucination/latent_pager-text_buffer")),
      report_lib.claim("The text buffer's answers are longer (a token-F1 precision effect)",
                       " vs ".join(published.FIGURES[("all", "answer_words")]) + " words",
                       f"{m('all/text_buffer/answer_words'):.1f} vs {m('all/latent_pager/answer_words'):.1f} words",
                       flip(iv.get("all/answer_words/latent_pager-text_buffer"))),
      report_lib.claim("Best checkpoint by validation F1 differs from best by validation loss", "epoch 2 vs epoch 3",
                       f"step {best_f1['step']} vs step {best_loss['step']}"),
  ]
  task = np.array([r["task_type"] for r in main])
  ok = np.array([r.get("answerable", True) for r in main])
  gain = sc["latent_pager"]["f1"] - sc["text_buffer"]["f1"]
  single, multi = np.flatnonzero(ok & (task == "single_fact")), np.flatnonzero(ok & (task == "multi_hop"))
  if len(single) > 1 and len(multi) > 1:
    gs, gm = gain[single], gain[multi]
    units = np.concatenate([gs, gm])
    is_single = np.arange(units.size) < gs.size        # each group resampled within itself
    def margin(idx):
      s, mh = units[idx[..., is_single]].mean(-1), units[idx[..., ~is_single]].mean(-1)
      return np.minimum(s, s - mh)
    interval = bootstrap_claim(margin, units.size, resamples, seed, strata=is_single)
    out.append(report_lib.claim("The pager gains F1 on single fact, and more than on multi hop", "+0.0108 vs +0.0040",
                                f"{gs.mean():+.4f} vs {gm.mean():+.4f}", interval))
  return out
