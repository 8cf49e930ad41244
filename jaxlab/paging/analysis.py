"""summary.json, report.md and the training-curve plot of a latent-pager run (issue 8, "The report").

Every figure is per task type ("all", single fact, multi hop) and per system; the latent-pager
minus text-buffer differences come with paired-bootstrap 95% intervals and two-sided p-values
(`jaxlab.core.stats.paired_bootstrap`, eval.bootstrap resamples) over the same questions.
Latencies go only to report.md (timing.json), so summary.json is identical for two runs of one config.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.stats import describe, paired_bootstrap
from jaxlab.paging import metrics, published
from jaxlab.paging.published import SYSTEMS

TASKS = ("all", "single_fact", "multi_hop")
ANSWER_METRICS = ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
                  "contains_gold")
NAMES = {"f1": "F1", "rouge_l": "ROUGE-L", "exact_match": "Exact match", "hallucination": "Hallucination (published)",
         "hallucination_grounded": "Hallucination (grounded, ours)", "answer_words": "Answer words",
         "contains_gold": "Contains gold", "consistency": "Consistency", "latency_s": "Latency (s)",
         "peak_memory_gb": "Peak memory (GB)"}


def load(workdir: Path):
  config = json.loads((workdir / "config.json").read_text())
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  history = json.loads((workdir / "history.json").read_text())
  timing = json.loads((workdir / "timing.json").read_text())
  return config, rows, history, timing


def scores(rows: list[dict]) -> dict:
  """{system: {metric: array over the non-probe rows}} and consistency per pair."""
  main = [r for r in rows if not r["probe"]]
  pairs = metrics.consistency_pairs(rows)
  out = {}
  for s in SYSTEMS:
    per = [metrics.per_answer(r["answers"][s], r["gold_answer"], r["document"]) for r in main]
    out[s] = {m: np.array([p[m] for p in per]) for m in ANSWER_METRICS}
    out[s]["consistency"] = np.array(metrics.consistency([r["answers"][s] for r in rows], pairs))
  return out


def summarize(config: dict, rows: list[dict], history: list[dict], timing: dict) -> dict:
  main = [r for r in rows if not r["probe"]]
  task = np.array([r["task_type"] for r in main])
  sc = scores(rows)
  figures, bootstrap = {}, {}
  for t in TASKS:
    sel = np.ones(len(main), bool) if t == "all" else task == t
    for m in ANSWER_METRICS:
      for s in SYSTEMS:
        figures[f"{t}/{s}/{m}"] = describe(sc[s][m][sel])
      if sel.any():
        bootstrap[f"{t}/{m}"] = paired_bootstrap(sc["latent_pager"][m][sel], sc["text_buffer"][m][sel],
                                                 config["eval"]["bootstrap"], seed=config["seed"])
  for s in SYSTEMS:
    figures[f"all/{s}/consistency"] = describe(sc[s]["consistency"])
    figures[f"all/{s}/peak_memory_gb"] = {"mean": timing[s]["peak_bytes"] / 1e9, "sd": None, "n": 1}
  if len(sc["latent_pager"]["consistency"]):
    bootstrap["all/consistency"] = paired_bootstrap(sc["latent_pager"]["consistency"], sc["text_buffer"]["consistency"],
                                                    config["eval"]["bootstrap"], seed=config["seed"])
  comparisons = []
  for (t, m), (text, pager) in published.FIGURES.items():
    for s, value in zip(SYSTEMS, (text, pager)):
      ours = figures.get(f"{t}/{s}/{m}")
      if ours and ours["mean"] is not None:
        comparisons.append(report_lib.compare(f"{t}/{s}/{m}", (value, None), ours))
  return {"experiment": config["experiment"], "variant": config.get("variant"), "figures": figures,
          "bootstrap": bootstrap, "comparisons": comparisons, "claims": claims(figures, bootstrap, history, timing, config["eval"]["bootstrap"]),
          "training": history}


def _significant(b: dict | None, sign: int) -> bool:
  return bool(b) and b["p"] < 0.05 and np.sign(b["diff"]) == sign


def claims(figures, bootstrap, history, timing, resamples: int) -> list[dict]:
  f = lambda key: figures[key]["mean"]
  lat = {s: float(np.mean(timing[s]["latency_s"])) for s in SYSTEMS}
  best_f1 = max(history, key=lambda h: h["val_f1"])["epoch"]
  best_loss = min(history, key=lambda h: h["val_loss"])["epoch"]
  gain = {t: f(f"{t}/latent_pager/f1") - f(f"{t}/text_buffer/f1") for t in ("single_fact", "multi_hop")
          if figures.get(f"{t}/latent_pager/f1", {}).get("mean") is not None}
  fmt_b = lambda key: _diff(bootstrap, key, resamples)
  out = [
      report_lib.claim("The latent pager has a higher F1 than the text buffer", "+0.0075, p < 0.001",
                       fmt_b("all/f1"), _significant(bootstrap.get("all/f1"), 1)),
      report_lib.claim("The latent pager has a higher ROUGE-L", "+0.0083, p < 0.001", fmt_b("all/rouge_l"),
                       _significant(bootstrap.get("all/rouge_l"), 1)),
      report_lib.claim("The latent pager hallucinates more (published heuristic)", "+0.288, p < 0.001",
                       fmt_b("all/hallucination"), _significant(bootstrap.get("all/hallucination"), 1)),
      report_lib.claim("The latent pager is faster per question", "2.55x (19.55 s vs 7.65 s)",
                       f"{lat['text_buffer'] / lat['latent_pager']:.2f}x ({lat['text_buffer']:.3f} s vs "
                       f"{lat['latent_pager']:.3f} s)", lat["latent_pager"] < lat["text_buffer"]),
      report_lib.claim("The latent pager needs more peak memory", "1.82 GB vs 1.02 GB",
                       f"{f('all/latent_pager/peak_memory_gb'):.4f} GB vs {f('all/text_buffer/peak_memory_gb'):.4f} GB",
                       f("all/latent_pager/peak_memory_gb") > f("all/text_buffer/peak_memory_gb")),
      report_lib.claim("The text buffer's answers are longer (a token-F1 precision effect)",
                       " vs ".join(published.FIGURES[("all", "answer_words")]) + " words",
                       f"{f('all/text_buffer/answer_words'):.1f} vs {f('all/latent_pager/answer_words'):.1f} words",
                       _significant(bootstrap.get("all/answer_words"), -1)),
      report_lib.claim("Best epoch by validation F1 differs from best by validation loss", "epoch 2 vs epoch 8",
                       f"epoch {best_f1} vs epoch {best_loss}", best_f1 != best_loss),
  ]
  if len(gain) == 2:
    out.append(report_lib.claim("The pager gains F1 on single fact, and more than on multi hop", "+0.0108 vs +0.0040",
                                f"{gain['single_fact']:+.4f} vs {gain['multi_hop']:+.4f}",
                                0 < gain["single_fact"] and gain["multi_hop"] < gain["single_fact"]))
  return out


def plot_training(history: list[dict], workdir: Path) -> str:
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  epochs = [h["epoch"] for h in history]
  pub = sorted(published.TRAINING.items())
  for ax, key, i, title in ((axes[0], "val_f1", 2, "validation F1"), (axes[1], "val_loss", 1, "validation loss")):
    ax.plot(epochs, [h[key] for h in history], "o-", label="ours")
    ax.plot([e for e, _ in pub], [v[i] for _, v in pub], "s--", color="grey", label="published (Qwen3-1.7B)")
    ax.set_xlabel("epoch")
    ax.set_title(title)
    ax.legend()
  best = max(history, key=lambda h: h["val_f1"])
  axes[0].axvline(best["epoch"], color="C1", lw=0.8)
  return report_lib.save_plot(fig, workdir, "training_curve.png")


def _cell(figures, key, digits=4):
  stat = figures.get(key)
  return "n/a" if not stat or stat["mean"] is None else f"{stat['mean']:.{digits}f}"


def p_text(b: dict, resamples: int) -> str:
  """A p-value of 0 means no resample crossed zero: p < 1/resamples."""
  return f"p<{1 / resamples:.2g}" if b["p"] == 0 else f"p={b['p']:.3g}"


def _diff(bootstrap, key, resamples):
  b = bootstrap.get(key)
  return "n/a" if not b else f"{b['diff']:+.4f} [{b['ci'][0]:+.4f}, {b['ci'][1]:+.4f}] {p_text(b, resamples)}"


def tables(summary: dict, timing: dict, n: dict, resamples: int) -> list[tuple[str, str]]:
  figs, boot = summary["figures"], summary["bootstrap"]
  lat = {s: describe(timing[s]["latency_s"]) for s in SYSTEMS}
  head = ["metric", "published text", "published pager", "ours text", "ours pager", "ours pager - text [95% CI]"]
  sections = []
  for t in TASKS:
    rows = []
    for m in ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
              "contains_gold") + (("consistency",) if t == "all" else ()):
      pub = published.FIGURES.get((t, m), ("", ""))
      rows.append([NAMES[m], *pub, _cell(figs, f"{t}/text_buffer/{m}"), _cell(figs, f"{t}/latent_pager/{m}"),
                   _diff(boot, f"{t}/{m}", resamples)])
    if t == "all":
      rows.append([NAMES["latency_s"], *published.FIGURES[("all", "latency_s")],
                   f"{lat['text_buffer']['mean']:.3f}", f"{lat['latent_pager']['mean']:.3f}",
                   f"{lat['text_buffer']['mean'] / lat['latent_pager']['mean']:.2f}x faster (n={lat['text_buffer']['n']})"])
      rows.append([NAMES["peak_memory_gb"], *published.FIGURES[("all", "peak_memory_gb")],
                   _cell(figs, "all/text_buffer/peak_memory_gb"), _cell(figs, "all/latent_pager/peak_memory_gb"), ""])
    label = {"all": "All questions", "single_fact": "Single fact", "multi_hop": "Multi hop"}[t]
    pub_n = published.N_TEST[t]
    sections.append((f"{label} (published n={pub_n}, ours n={n[t]})", report_lib.markdown_table(head, rows)))
  return sections


def write(workdir: Path) -> Path:
  config, rows, history, timing = load(workdir)
  summary = summarize(config, rows, history, timing)
  report_lib.write_json(workdir / "summary.json", summary)
  main = [r for r in rows if not r["probe"]]
  n = {"all": len(main), **{t: sum(r["task_type"] == t for r in main) for t in ("single_fact", "multi_hop")}}
  image = plot_training(history, workdir)
  curve = report_lib.markdown_table(
      ["epoch", "train loss", "val loss", "val F1", "lr"],
      [[h["epoch"], f"{h['train_loss']:.4f}", f"{h['val_loss']:.4f}", f"{h['val_f1']:.4f}", f"{h['lr']:.3g}"]
       for h in history])
  best = max(history, key=lambda h: h["val_f1"])
  examples = report_lib.markdown_table(
      ["type", "question", "gold", "text buffer", "latent pager"],
      [[r["task_type"], r["question"], r["gold_answer"], r["answers"]["text_buffer"][:120],
        r["answers"]["latent_pager"][:120]] for r in main[:6]])
  n_pairs = len(metrics.consistency_pairs(rows))
  sections = [
      ("What ran", f"Variant `{config.get('variant')}`: frozen LM `{config['model']['path']}`, "
                   f"{n['all']} test questions ({n['single_fact']} single fact, {n['multi_hop']} multi hop) plus "
                   f"{len(rows) - len(main)} consistency probes ({n_pairs} same-answer pairs); pages of "
                   f"{config['pages']['chunk_tokens']} tokens (overlap {config['pages']['chunk_overlap']}), layers "
                   f"{tuple(config['pages']['hidden_layers'])}, {config['pages']['pooling']} pooling; "
                   f"{config['pager']['num_soft_tokens']} soft tokens; both systems answer with max "
                   f"{config['generation']['max_new_tokens']} new tokens, repetition penalty "
                   f"{config['generation']['repetition_penalty']}, EOS and repeated-sentence truncation "
                   f"{'on' if config['generation']['truncate_repeats'] else 'off'}. Differences are latent pager "
                   f"minus text buffer, paired bootstrap ({config['eval']['bootstrap']:,} resamples). The published "
                   "figures are Qwen3-1.7B on NarrativeQA/HotpotQA: they are printed beside ours, not expected to match."),
      *tables(summary, timing, n, config["eval"]["bootstrap"]),
      report_lib.claims_section(summary["claims"], "A claim about a difference holds when its 95% paired-bootstrap "
                                "interval excludes zero in the published direction (p < 0.05)."),
      ("Training", f"Kept checkpoint: epoch {best['epoch']} (best validation F1 {best['val_f1']:.4f}); never chosen by "
                   "validation loss.\n\n" + curve + f"\n\n![training curve]({image})"),
      ("Examples", examples),
  ]
  return report_lib.write_report(workdir, "Latent Pager Memory vs text buffer: published and ours", sections)
