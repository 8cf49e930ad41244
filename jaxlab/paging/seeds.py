"""The comparison once per training seed: is the verdict a property of the pager, or of one run?

The data (`seed`), the pretrained encoder and the text buffer are the same in every run; the
training seed (`train.seed`) changes what fine-tuning starts from and sees: the initialisation of
what the pretrained encoder does not hold (on `cpu`, the decoder bridge's LoRA A; its B starts at
zero, so every seed starts from the same pager) and the order of the training rows (and dropout,
where it is not 0). Each seed is a whole
`compare` run in WORKDIR/seeds/seed_<s> (resumable, with its own summary, report and timing).

The study's summary puts every seed's headline figures side by side and grades the bar twice:
per seed, on that run's intervals over test questions (as `compare` grades it), and over seeds,
on a nested bootstrap (`core.stats.nested_bootstrap`: seeds and questions resampled together), so
the interval holds the spread between training runs as well as the questions'. The latency
ratios (end to end per question at one question per document) are wall-clock figures and stay
out of summary.json (timing.json, report.md). The targets (summary.json "targets", report.md)
are the bar's parts judged over seeds; the goal of detecting missing answers is judged over seeds
apart (summary.json "detection": abstain precision and recall, nested over seeds and questions).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.config import derive, to_dict
from jaxlab.core.stats import bootstrap_claim, describe, nested_bootstrap
from jaxlab.paging import (analysis, bar as bar_lib, figures as figures_lib, latency as latency_lib, metrics,
                           pipeline, reporting as pager_report, selective)
from jaxlab.paging.spec import keep_rule, kept

def seed_unit_mean(d: np.ndarray):
  """The margin function of `nested_bootstrap` for the mean of a (seeds, units) array."""
  return lambda si, ui: d[si[..., :, None], ui[..., None, :]].mean(axis=(-2, -1))


def seed_coverage_margin(conf: np.ndarray, util: np.ndarray, ref_conf: np.ndarray, ref_util: np.ndarray,
                         coverage: float):
  """The margin function of `nested_bootstrap` for a system's F1 at `coverage` minus a
  reference's: each drawn seed's system answers its most confident share of the drawn questions;
  the mean over drawn seeds minus the reference's on the same questions. The reference is one run
  shared by every seed ((units,) arrays: the text buffer of a `seeds` study) or one per seed
  ((seeds, units), paired with the system seed by seed)."""
  keys, ref_keys = selective.sort_keys(conf), selective.sort_keys(ref_conf)
  if np.ndim(ref_conf) == 1:
    ref_util = np.asarray(ref_util, np.float64)

  def margin(si, ui):
    rows = si[..., :, None], ui[..., None, :]
    system = selective.top_share_mean(keys[rows], util[rows], coverage)
    if np.ndim(ref_conf) == 1:
      return system.mean(axis=-1) - selective.top_share_mean(ref_keys[ui], ref_util[ui], coverage)
    return (system - selective.top_share_mean(ref_keys[rows], ref_util[rows], coverage)).mean(axis=-1)
  return margin


def seed_config(config, seed: int):
  """The `compare` config of one training seed."""
  return derive(config, {"mode": "compare", "train.seed": int(seed)})


def seed_dir(workdir: Path, seed: int) -> Path:
  return Path(workdir) / "seeds" / f"seed_{seed}"


def run(config, workdir: Path):

  for s in config.seeds.train_seeds:
    sub = seed_dir(workdir, s)
    sub.mkdir(parents=True, exist_ok=True)
    c = seed_config(config, s)
    if jax.process_index() == 0:
      (sub / "config.json").write_text(json.dumps(to_dict(c), indent=1) + "\n")
    if not (sub / "summary.json").is_file():
      pipeline.compare(c, sub)
  return report(workdir) if jax.process_index() == 0 else None


# ----------------------------------------------------------------------------- report
def _scored(sub: Path) -> dict:
  """One seed's per-question figures, as its `compare` summary computes them: F1 before
  abstaining (answerable questions), hallucination as served, and the confidence and F1 that
  F1 at coverage ranks."""
  config, rows, val, history, timing = analysis.load(sub)
  abstain = config["data"]["abstain_answer"]
  main = [r for r in rows if not r["probe"]]
  systems = ("latent_pager", "text_buffer")
  chosen = analysis.thresholds(val, config, systems)
  final = {s: analysis.final_answers(main, s, chosen, abstain) for s in systems}
  _, halluc = analysis.served(main, final, abstain)
  f1 = {s: np.array([metrics.token_f1(r["answers"][s], r["gold_answer"]) for r in main]) for s in systems}
  conf = {s: np.array([r["confidence"][s] for r in main], np.float64) for s in systems}
  return {"ids": [r["id"] for r in main], "answerable": np.array([r.get("answerable", True) for r in main]),
          "f1": f1, "hallucination": halluc, "confidence": conf,
          "abstained": {s: selective.abstained([a or "" for a in final[s]], abstain) for s in systems},
          "text_answers": [r["answers"]["text_buffer"] for r in main], "history": history,
          "timing": timing, "summary": json.loads((sub / "summary.json").read_text())}


def summarize(config: dict, runs: dict[int, dict]) -> dict:
  seeds = sorted(runs)
  first = runs[seeds[0]]
  for s in seeds:
    if runs[s]["ids"] != first["ids"] or runs[s]["text_answers"] != first["text_answers"]:
      raise ValueError(f"seed {s}: its test questions or text-buffer answers differ from seed {seeds[0]}'s; the "
                       "seeds of one study must share the data and the text buffer")
  ok = first["answerable"]
  boots, rseed = config["eval"]["bootstrap"], config["seed"]
  declared = config["bar"]
  figures, intervals, per_seed = {}, {}, {}
  stack = lambda key: np.stack([runs[s][key]["latent_pager"] for s in seeds])   # (seeds, questions)
  text = lambda key: first[key]["text_buffer"]
  # F1 before abstaining on answerable questions; hallucination as served on every question.
  for metric, values, sel in (("f1_ungated", "f1", ok), ("hallucination", "hallucination", np.ones_like(ok))):
    t, pager = text(values)[sel], stack(values)[:, sel]
    figures[f"text_buffer/{metric}"] = describe(t)
    for i, s in enumerate(seeds):
      figures[f"seed_{s}/latent_pager/{metric}"] = describe(pager[i])
    figures[f"over_seeds/latent_pager/{metric}"] = describe(pager.mean(axis=1))   # sd: between seeds
    d = pager - t[None]
    intervals[f"over_seeds/{metric}/latent_pager-text_buffer"] = nested_bootstrap(
        seed_unit_mean(d), len(seeds), d.shape[1], boots, rseed)
  # F1 at the bar's coverage over every question (unanswerable gold: the abstain string).
  key, c = figures_lib.coverage_key(declared["coverage"]), declared["coverage"]
  conf, util = stack("confidence"), stack("f1")
  figures[f"text_buffer/{key}"] = {"mean": float(selective.f1_at_coverage(text("confidence"), text("f1"), c)),
                                   "sd": None, "n": len(ok)}
  per = np.array([selective.f1_at_coverage(conf[i], util[i], c) for i in range(len(seeds))])
  for i, s in enumerate(seeds):
    figures[f"seed_{s}/latent_pager/{key}"] = {"mean": float(per[i]), "sd": None, "n": len(ok)}
  figures[f"over_seeds/latent_pager/{key}"] = describe(per)
  intervals[f"over_seeds/{key}/latent_pager-text_buffer"] = nested_bootstrap(
      seed_coverage_margin(conf, util, text("confidence"), text("f1"), c), len(seeds), len(ok), boots, rseed)
  parts = bar_lib.bar_parts(declared)
  keep = keep_rule(config.get("train", {}))   # the study's: every seed runs the same variant
  for s in seeds:
    h = runs[s]["summary"]["headline"]
    history = runs[s]["history"]
    figures[f"seed_{s}/best_val_f1"] = {"mean": kept(history)["val_f1"], "sd": None, "n": 1}
    for part, hkey, _, _ in parts:
      intervals[f"seed_{s}/{part}/latent_pager-text_buffer"] = h[hkey]
    per_seed[str(s)] = {"kept_step": kept(history, keep)["step"], **runs[s]["summary"]["bar"]}
  over = {hkey: intervals[f"over_seeds/{part}/latent_pager-text_buffer"] for part, hkey, _, _ in parts}
  bar = {"per_seed": per_seed, "over_seeds": bar_lib.bar(over, declared)}
  found = detection_intervals(runs, boots, rseed)
  return {"experiment": config["experiment"], "variant": config.get("variant"), "train_seeds": seeds,
          "figures": figures, "intervals": {**intervals, **found}, "bar": bar,
          "targets": bar_lib.targets(over, bar["over_seeds"], declared, {})[:len(parts)],
          "detection": detection(found)}


def detection_intervals(runs: dict[int, dict], boots: int, rseed: int) -> dict:
  """Abstain precision and recall as served, over every test question: the pager's pooled over
  seeds with a nested bootstrap (seeds and questions drawn together), the text buffer's (the same
  answers in every seed) with a bootstrap over questions. Kept under `intervals`, keyed
  `over_seeds/abstention/<system>/<precision|recall>`, each with its observed value as "diff"."""
  seeds = sorted(runs)
  unans = ~runs[seeds[0]]["answerable"]
  said = np.stack([runs[s]["abstained"]["latent_pager"] for s in seeds])
  out = {}
  for k, fn in selective.abstention_ratios(said, unans).items():
    out[f"over_seeds/abstention/latent_pager/{k}"] = nested_bootstrap(fn, len(seeds), len(unans), boots, rseed)
  for k, fn in selective.abstention_ratios(runs[seeds[0]]["abstained"]["text_buffer"], unans).items():
    out[f"over_seeds/abstention/text_buffer/{k}"] = bootstrap_claim(fn, len(unans), boots, rseed)
  return out


def detection_text(summary: dict, runs: dict[int, dict]) -> str:
  """Abstain precision and recall per seed (each run's own intervals over questions) and over
  seeds, with the goal judged over seeds."""
  iv, rows = summary["intervals"], []
  for s in summary["train_seeds"]:
    own = runs[s]["summary"]
    a = own["figures"].get("abstention/latent_pager") or {}
    rows.append([s] + [figures_lib.ci_text({"mean": a.get(k), "ci": (own["intervals"].get(
        f"abstention/latent_pager/{k}") or {}).get("ci")}, 3) if a.get(k) is not None else "n/a"
        for k in ("precision", "recall")])
  for s, label in (("latent_pager", "pager over seeds"), ("text_buffer", "text buffer (every seed)")):
    rows.append([label] + [figures_lib.ci_text({"mean": iv[f"over_seeds/abstention/{s}/{k}"]["diff"],
                                                 "ci": iv[f"over_seeds/abstention/{s}/{k}"]["ci"]}, 3)
                           for k in ("precision", "recall")])
  d = summary["detection"]
  return (f"Goal: {d['text']}. Over seeds: **{bar_lib.detection_verdict(d)}** ({d['ours']}). Abstentions as "
          "served, over every test question; per seed, that run's bootstrap over questions; over seeds, pooled "
          "and nested over seeds and questions.\n\n"
          + report_lib.markdown_table(["training seed", "abstain precision", "abstain recall"], rows))


def detection(iv: dict) -> dict:
  """The detection goal judged over seeds (`bar.detection_target` on `detection_intervals`)."""
  where = "over_seeds/abstention"
  figures = {f"{where}/{s}": {k: iv[f"{where}/{s}/{k}"]["diff"] for k in ("precision", "recall")}
             for s in ("latent_pager", "text_buffer")}
  return bar_lib.detection_target(figures, iv, where)


def latency(config: dict, runs: dict[int, dict]) -> dict:
  """Per seed, each run's latency ratio (text buffer / pager, end to end per question at one
  question per document); over seeds, the ratio of the mean seconds with a nested bootstrap over
  seeds and timed documents (each document's mean over its run's repeats; wall clock:
  timing.json)."""
  seeds = sorted(runs)
  per_seed = {str(s): {"latency_ratio": runs[s]["timing"].get("latency_ratio"),
                       "latency_bar": runs[s]["timing"].get("latency_bar")} for s in seeds}
  lat = {k: np.stack([latency_lib.served_per_document(runs[s]["timing"], k, 1)["end_to_end"] for s in seeds])
         for k in ("text_buffer", "latent_pager")}
  text, pager = seed_unit_mean(lat["text_buffer"]), seed_unit_mean(lat["latent_pager"])
  out = nested_bootstrap(lambda si, ui: text(si, ui) / pager(si, ui),
                         len(seeds), lat["text_buffer"].shape[1], config["eval"]["bootstrap"], config["seed"])
  ratio = {"mean": out["diff"], "ci": out["ci"], "n": out["n"], "n_seeds": out["n_seeds"]}
  return {"per_seed": per_seed, "over_seeds": {"latency_ratio": ratio,
                                               "latency_bar": bar_lib.latency_bar(ratio, config["bar"]["speedup"])}}


def plot(summary: dict, parts: list, workdir: Path) -> str:
  seeds, iv = summary["train_seeds"], summary["intervals"]
  fig, axes = plt.subplots(1, len(parts), figsize=(4.5 * len(parts), 3.5))
  for ax, (part, _, label, margin) in zip(np.atleast_1d(axes), parts):
    keys = [f"seed_{s}/{part}/latent_pager-text_buffer" for s in seeds] + [
        f"over_seeds/{part}/latent_pager-text_buffer"]
    names = [f"seed {s}" for s in seeds] + ["over seeds"]
    for i, k in enumerate(keys):
      lo, hi = iv[k]["ci"] if iv[k]["ci"] else (iv[k]["diff"],) * 2
      ax.errorbar([i], [iv[k]["diff"]], yerr=[[iv[k]["diff"] - lo], [hi - iv[k]["diff"]]], fmt="s" if i == len(
          seeds) else "o", color="black" if i == len(seeds) else "tab:blue", capsize=3)
    ax.axhline(0, color="grey", ls="--")
    ax.axhline(margin if part == "hallucination" else -margin, color="tab:red", ls=":", label="margin")
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_title(f"pager - text buffer: {label}", fontsize=7)
  return report_lib.save_plot(fig, workdir, "seeds.png")


def report(workdir) -> Path:
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  runs = {s: _scored(seed_dir(workdir, s)) for s in config["seeds"]["train_seeds"]}
  summary = summarize(config, runs)
  report_lib.write_json(workdir / "summary.json", summary)
  timing = latency(config, runs)
  report_lib.write_json(workdir / "timing.json", timing)
  figs, iv, b = summary["figures"], summary["intervals"], summary["bar"]
  parts = bar_lib.bar_parts(config["bar"])
  cell = lambda k: figures_lib.diff_text(iv, k)
  kept_f1 = {s: kept(runs[s]["history"], keep_rule(config.get("train", {})))["val_f1"] for s in runs}
  word = lambda held: "met" if held else "not met"
  rows = []
  for s in summary["train_seeds"]:
    t, part = timing["per_seed"][str(s)], b["per_seed"][str(s)]
    rows.append([s, f"{part['kept_step']} ({kept_f1[s]:.3f})"]
                + [f"{figs[f'seed_{s}/latent_pager/{p}']['mean']:.4f}; {cell(f'seed_{s}/{p}/latent_pager-text_buffer')}"
                   for p, *_ in parts]
                + [figures_lib.ci_text(t["latency_ratio"], 2) if t["latency_ratio"] else "n/a",
                   " / ".join(word(part[p]) for p, *_ in parts) + f" / {word(t['latency_bar'])}"])
  o, ot = b["over_seeds"], timing["over_seeds"]
  rows.append(["over seeds", ""]
              + [f"{figs[f'over_seeds/latent_pager/{p}']['mean']:.4f}; "
                 f"{cell(f'over_seeds/{p}/latent_pager-text_buffer')}" for p, *_ in parts]
              + [figures_lib.ci_text(ot["latency_ratio"], 2),
                 " / ".join(word(o[p]) for p, *_ in parts) + f" / {word(ot['latency_bar'])}"])
  seeds = summary["train_seeds"]
  held = {p: sum(bool(b["per_seed"][str(s)][p]) for s in seeds) for p, *_ in parts}
  held["latency"] = sum(bool(timing["per_seed"][str(s)]["latency_bar"]) for s in seeds)
  met = all(o[p] for p, *_ in parts) and ot["latency_bar"]
  text_figs = "; ".join(f"{what} {figs[f'text_buffer/{p}']['mean']:.4f}" for p, _, what, _ in parts)
  sections = [
      ("What ran", f"The comparison of variant `{config.get('variant')}` once per training seed "
                   f"{tuple(seeds)} (`train.seed`; the data, the encoder `{config['pager']['init']}` "
                   "and the text buffer are the same in every run, and every run answered the same test questions; "
                   "the text buffer's answers are identical across seeds). Each run is in `seeds/seed_<s>/` with its "
                   "own report."),
      pager_report.targets_section(summary, timing["over_seeds"], config["bar"]["speedup"]),
      ("The bar per seed and over seeds",
       f"{bar_lib.declared_text(config['bar'])}\n\nOver seeds: "
       + ", ".join(f"{p} {word(o[p])}" for p, *_ in parts) + f", latency {word(ot['latency_bar'])}: "
       f"**{word(met)}**. Per seed, the parts hold in "
       + ", ".join(f"{held[p]}" for p, *_ in parts) + f" and {held['latency']} of {len(seeds)} runs.\n\n"
       f"Text buffer: {text_figs}. Per seed, the intervals are that run's paired bootstraps over test questions; over "
       "seeds, a nested bootstrap resampling seeds and questions together "
       f"({config['eval']['bootstrap']:,} resamples), so they hold the spread between training runs. Latency ratios "
       "are text buffer / pager mean end-to-end seconds per question at one question per document (timing.json; over "
       "seeds, nested over seeds and timed documents).\n\n" + report_lib.markdown_table(
           ["training seed", "kept step (val F1)"] + [f"pager {what}; - text buffer" for _, _, what, _ in parts]
           + ["latency ratio", "bar parts (" + " / ".join(p for p, *_ in parts) + " / latency)"], rows)),
      ("Detecting missing answers", detection_text(summary, runs)),
      report_lib.plots_section([plot(summary, parts, workdir)]),
  ]
  return report_lib.write_report(workdir, "Latent pager over training seeds", sections)
