"""summary.json, report.md and the plots of a latent-pager comparison (latent-pager.md; the
report, abstention and sufficiency, the headline and the bar).

Systems: the latent pager, the text buffer and, where the document fits the LM's window, the
full-context reference. Each answered every validation and test question and gave a confidence
(the pager's sufficiency head; the text systems' answer log-probability). Thresholds are chosen on
validation (`selective.choose_threshold`); below its threshold a system abstains. Figures:

- answer metrics (F1, ROUGE-L, exact match, both hallucination measures, length, containment) on
  the answerable questions, per task type, with the gated answers (as the system would answer);
  the raw answers' F1 beside;
- abstain precision and recall on the unanswerable questions; the grounded hallucination rate over
  all questions (an abstention states nothing);
- risk-coverage curves and AURC (loss 1 - F1 against the gold answer, the abstain string for an
  unanswerable question; and grounded hallucination) for every system with a confidence;
- consistency on the probe pairs.

Differences are latent pager minus the other system, paired over the same questions, with 95%
bootstrap intervals (`eval.bootstrap` resamples); against the full context only on the questions
whose document fits. Claims are graded by `core.report.claim` on those intervals.

Wall-clock timings stay out of summary.json, so two runs of one config on one machine kind write
the same summary byte for byte (its receipt checks that): the latency ratio (text buffer / pager,
with its bootstrap interval) and the bar's latency part are written to timing.json beside the
per-question latencies they come from, and report.md shows them in the headline.

The bar's parts are the experiment's targets: summary.json "targets" holds the two answer parts,
report.md's targets section adds the latency part from timing.json. Peak memory is one measurement
per system (XLA's account of the compiled programs), shown beside the published figures and not
graded.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.stats import bootstrap_claim, describe, paired_bootstrap
from jaxlab.paging import metrics, published, selective

SYSTEMS = ("text_buffer", "latent_pager", "full_context")
LABELS = {"text_buffer": "text buffer", "latent_pager": "latent pager", "full_context": "full context"}
TASKS = ("all", "single_fact", "multi_hop")
ANSWER_METRICS = ("f1", "rouge_l", "exact_match", "hallucination", "hallucination_grounded", "answer_words",
                  "contains_gold")
NAMES = {"f1": "F1", "rouge_l": "ROUGE-L", "exact_match": "Exact match", "hallucination": "Hallucination (published)",
         "hallucination_grounded": "Hallucination (grounded, ours)", "answer_words": "Answer words",
         "contains_gold": "Contains gold", "consistency": "Consistency", "f1_raw": "F1 before abstaining"}


def _rows(path: Path) -> list[dict]:
  return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def load(workdir: Path):
  config = json.loads((workdir / "config.json").read_text())
  rows = _rows(workdir / "predictions.jsonl")
  val = _rows(workdir / "validation.jsonl")
  history = json.loads((workdir / "history.json").read_text())
  timing = json.loads((workdir / "timing.json").read_text())
  return config, rows, val, history, timing


def systems_in(rows) -> list[str]:
  return [s for s in SYSTEMS if s in rows[0]["answers"]]


def thresholds(val: list[dict], abstain: str, systems=None) -> dict:
  """Per system with a confidence (of `systems`, by default the comparison's): the threshold
  chosen on the validation questions (where it answered)."""
  out = {}
  for s in systems_in(val) if systems is None else systems:
    keep = [r for r in val if r["confidence"].get(s) is not None]
    if keep:
      out[s] = selective.choose_threshold([r["answers"][s] for r in keep], [r["confidence"][s] for r in keep],
                                          [r["gold_answer"] for r in keep], abstain)
  return out


def final_answers(rows, system: str, chosen: dict, abstain: str) -> list:
  """The gated answers of `system` (its raw answers when it has no threshold)."""
  answers = [r["answers"][system] for r in rows]
  if system not in chosen:
    return answers
  conf = [r["confidence"][system] for r in rows]
  return [a if a is None else (a if c >= chosen[system]["threshold"] else abstain) for a, c in zip(answers, conf)]


def scores(rows, answers: list, abstain: str) -> dict:
  """{metric: array over rows} (NaN where the system did not answer). An abstention states
  nothing, so neither hallucination measure counts it."""
  out = {m: np.full(len(rows), np.nan) for m in ANSWER_METRICS}
  for i, (r, a) in enumerate(zip(rows, answers)):
    if a is not None:
      for m, v in metrics.per_answer(a, r["gold_answer"], r["document"]).items():
        out[m][i] = 0.0 if m.startswith("hallucination") and a == abstain else v
  return out


def _interval(a, b, resamples: int, seed: int) -> dict | None:
  """Paired bootstrap of mean(a - b) over the units where both exist, as a claim interval."""
  ok = ~(np.isnan(a) | np.isnan(b))
  if ok.sum() == 0:
    return None
  out = paired_bootstrap(a[ok], b[ok], resamples, seed=seed)
  return {"diff": out["diff"], "ci": out["ci"] if ok.sum() > 1 else None, "n": out["n"], "p": out["p"]}


def _mean_ci(x, resamples: int, seed: int) -> dict | None:
  x = x[~np.isnan(x)]
  if not len(x):
    return None
  out = bootstrap_claim(lambda idx: x[idx].mean(axis=-1), len(x), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def summarize(config: dict, rows: list[dict], val: list[dict], history: list[dict], timing: dict) -> dict:
  ev, abstain = config["eval"], config["data"]["abstain_answer"]
  boots, seed = ev["bootstrap"], config["seed"]
  main = [r for r in rows if not r["probe"]]
  systems = systems_in(rows)
  chosen = thresholds(val, abstain)
  answerable = np.array([r.get("answerable", True) for r in main])
  task = np.array([r["task_type"] for r in main])
  final = {s: final_answers(main, s, chosen, abstain) for s in systems}
  sc = {s: scores(main, final[s], abstain) for s in systems}
  raw_f1 = {s: np.array([np.nan if r["answers"][s] is None else metrics.token_f1(r["answers"][s], r["gold_answer"])
                         for r in main]) for s in systems}
  figures, intervals = {}, {}
  for t in TASKS:
    sel = answerable & ((task == t) | (t == "all"))
    for s in systems:
      for m in ANSWER_METRICS:
        figures[f"{t}/{s}/{m}"] = describe(sc[s][m][sel & ~np.isnan(sc[s][m])])
      figures[f"{t}/{s}/f1_raw"] = describe(raw_f1[s][sel & ~np.isnan(raw_f1[s])])
    for m in ANSWER_METRICS:
      for other in systems:
        if other != "latent_pager" and sel.any():
          b = _interval(np.where(sel, sc["latent_pager"][m], np.nan), sc[other][m], boots, seed)
          if b:
            intervals[f"{t}/{m}/latent_pager-{other}"] = b
  # Over every question: grounded hallucination (an abstention states nothing) and abstentions.
  for s in systems:
    figures[f"every/{s}/hallucination_grounded"] = describe(sc[s]["hallucination_grounded"][~np.isnan(sc[s]["f1"])])
    said = [a for a, r in zip(final[s], main) if a is not None]
    ok = [r.get("answerable", True) for a, r in zip(final[s], main) if a is not None]
    figures[f"abstention/{s}"] = selective.abstention_scores(said, ok, abstain)
  for other in systems:
    if other != "latent_pager":
      intervals[f"every/hallucination_grounded/latent_pager-{other}"] = _interval(
          sc["latent_pager"]["hallucination_grounded"], sc[other]["hallucination_grounded"], boots, seed)
  # Risk-coverage over every question (raw answers, each system's confidence).
  curves = {}
  gold = [r["gold_answer"] for r in main]
  for s in systems:
    idx = [i for i, r in enumerate(main) if r["confidence"].get(s) is not None]
    if not idx:
      continue
    conf = np.array([main[i]["confidence"][s] for i in idx])
    loss = np.array([1.0 - metrics.token_f1(main[i]["answers"][s], gold[i]) for i in idx])
    halluc = np.array([0.0 if main[i]["answers"][s] == abstain else
                       metrics.hallucination_grounded(main[i]["answers"][s], main[i]["document"]) for i in idx])
    curves[s] = {"ids": idx, "confidence": conf, "error": loss, "hallucination": halluc}
    for kind, l in (("error", loss), ("hallucination", halluc)):
      rc = selective.risk_coverage(conf, l)
      figures[f"aurc/{s}/{kind}"] = {"mean": rc["aurc"], "sd": None, "n": len(idx)}
  for other in curves:
    if other != "latent_pager" and "latent_pager" in curves:
      common = sorted(set(curves["latent_pager"]["ids"]) & set(curves[other]["ids"]))
      for kind in ("error", "hallucination"):
        pick = lambda s: (np.array([curves[s]["confidence"][curves[s]["ids"].index(i)] for i in common]),
                          np.array([curves[s][kind][curves[s]["ids"].index(i)] for i in common]))
        (ca, la), (cb, lb) = pick("latent_pager"), pick(other)
        aurc = lambda c, l, idx: selective.risk_coverage(c[idx], l[idx])["aurc"]
        intervals[f"aurc/{kind}/latent_pager-{other}"] = bootstrap_claim(
            lambda idx: aurc(ca, la, idx) - aurc(cb, lb, idx), len(common), min(boots, 2_000), seed)
  # Consistency over probe pairs (raw answers).
  pairs = metrics.consistency_pairs(rows)
  cons = {s: np.array(metrics.consistency([r["answers"][s] or "" for r in rows], pairs)) for s in systems
          if s != "full_context"}
  for s, v in cons.items():
    figures[f"all/{s}/consistency"] = describe(v)
  if pairs and len(cons) > 1:
    intervals["all/consistency/latent_pager-text_buffer"] = _interval(cons["latent_pager"], cons["text_buffer"], boots,
                                                                      seed)
  for s in ("text_buffer", "latent_pager"):
    if "peak_bytes" in timing.get(s, {}):
      figures[f"all/{s}/peak_memory_gb"] = {"mean": timing[s]["peak_bytes"] / 1e9, "sd": None, "n": 1}
  comparisons = []
  for (t, m), (text, pager) in published.FIGURES.items():
    for s, value in zip(("text_buffer", "latent_pager"), (text, pager)):
      ours = figures.get(f"{t}/{s}/{m}")
      if ours and ours["mean"] is not None and ours["n"] > 1:   # one measurement is shown, not graded
        comparisons.append(report_lib.compare(f"{t}/{s}/{m}", (value, None), ours))
  summary = {"experiment": config["experiment"], "variant": config.get("variant"), "figures": figures,
             "intervals": intervals, "thresholds": chosen, "comparisons": comparisons, "training": history,
             "risk_coverage": {s: {k: selective.risk_coverage(c["confidence"], c[k])
                                   for k in ("error", "hallucination")} for s, c in curves.items()}}
  summary["claims"] = claims(summary, main, sc, boots, seed)
  summary["headline"] = headline(config, summary, sc, answerable, boots, seed)
  summary["bar"] = bar(summary["headline"])
  summary["targets"] = targets(summary["headline"], summary["bar"])
  return summary


def latency_ratio(timing: dict, resamples: int, seed: int, key: str = "latency_s") -> dict | None:
  """Text-buffer over pager mean seconds (wall, or CPU with key="cpu_s") on the timed questions,
  with a paired bootstrap interval."""
  if key not in timing.get("latent_pager", {}) or key not in timing.get("text_buffer", {}):
    return None
  a, b = np.array(timing["text_buffer"][key]), np.array(timing["latent_pager"][key])
  out = bootstrap_claim(lambda idx: a[idx].mean(axis=-1) / b[idx].mean(axis=-1), len(a), resamples, seed)
  return {"mean": out["diff"], "ci": out["ci"], "n": out["n"]}


def headline(config, summary, sc, answerable, resamples, seed) -> dict:
  f, iv, p = summary["figures"], summary["intervals"], config["pager"]
  pick = lambda s, m, sel: _mean_ci(np.where(sel, sc[s][m], np.nan), resamples, seed)
  every = np.ones_like(answerable)
  return {
      "pager_encoder": p["encoder"],
      "slots_per_chunk": p["slots_per_chunk"] if p["encoder"] != "pooled" else None,
      "pager_f1": pick("latent_pager", "f1", answerable),
      "text_buffer_f1": pick("text_buffer", "f1", answerable),
      "pager_minus_text_buffer_f1": iv.get("all/f1/latent_pager-text_buffer"),
      "pager_grounded_hallucination": pick("latent_pager", "hallucination_grounded", every),
      "text_buffer_grounded_hallucination": pick("text_buffer", "hallucination_grounded", every),
      "pager_minus_text_buffer_grounded_hallucination": iv.get("every/hallucination_grounded/latent_pager-text_buffer"),
      "pager_aurc": _aurc(f, iv, "latent_pager"),
      "text_buffer_aurc": _aurc(f, iv, "text_buffer"),
      "pager_minus_text_buffer_aurc": iv.get("aurc/error/latent_pager-text_buffer"),
  }


def _aurc(figures, intervals, system):
  stat = figures.get(f"aurc/{system}/error")
  return None if stat is None else {"mean": stat["mean"], "n": stat["n"], "loss": "1 - F1"}


BAR_SPEEDUP = 2.55  # the published latency ratio


def bar(h: dict) -> dict:
  """The bar's answer parts: F1 not worse (the interval of pager - text reaches 0 or above) and no
  more invention (the interval of the hallucination difference reaches 0 or below). Its third
  part, >= 2.55x lower latency, is a wall-clock figure: `latency_bar`, in timing.json."""
  f1, hal = h["pager_minus_text_buffer_f1"], h["pager_minus_text_buffer_grounded_hallucination"]
  return {"f1": None if not f1 else bool(f1["ci"][1] >= 0),
          "hallucination": None if not hal else bool(hal["ci"][0] <= 0)}


def latency_bar(ratio: dict | None) -> bool | None:
  return None if not ratio else bool(ratio["mean"] >= BAR_SPEEDUP)


def targets(h: dict, b: dict) -> list[dict]:
  """The bar's answer parts as targets (from the summary's own intervals; `latency_target` is the
  third part, from timing.json)."""
  ours = lambda key: "n/a" if not h.get(key) else diff_text({key: h[key]}, key)
  return [
      report_lib.target("F1 not below the text buffer's",
                        "the 95% interval of pager - text buffer F1 (answerable questions) reaches 0 or above",
                        b["f1"], ours("pager_minus_text_buffer_f1")),
      report_lib.target("no more invention than the text buffer",
                        "the 95% interval of pager - text buffer grounded hallucination (every question) reaches 0 "
                        "or below", b["hallucination"], ours("pager_minus_text_buffer_grounded_hallucination"))]


def latency_target(ratio: dict | None) -> dict:
  """The bar's latency part as a target: a wall-clock figure, so for report.md, never summary.json."""
  return report_lib.target(f">= {BAR_SPEEDUP}x lower latency than the text buffer",
                           f"text buffer / pager mean latency per question at least {BAR_SPEEDUP} (the published "
                           "ratio), on the point estimate", latency_bar(ratio),
                           "n/a" if not ratio else f"{ci_text(ratio, 2)}x (timing.json)")


def targets_section(summary: dict, timing: dict):
  """The report's targets: the summary's answer parts and the latency part from timing.json."""
  return report_lib.targets_section(
      summary["targets"] + [latency_target(timing.get("latency_ratio"))],
      "The F1 and hallucination targets are computed from the summary (summary.json \"targets\"); the latency "
      "target is judged from wall-clock timing (timing.json), which stays out of summary.json, so it is in this "
      "report only.")


def claims(summary, main, sc, resamples: int, seed: int) -> list[dict]:
  f, iv = summary["figures"], summary["intervals"]
  m = lambda key: f[key]["mean"]
  ours = lambda metric: f"pager {m(f'all/latent_pager/{metric}'):.4f} vs text {m(f'all/text_buffer/{metric}'):.4f}"
  history = summary["training"]
  best_f1 = max(history, key=lambda h: (h["val_f1"], -h["step"]))
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


# ----------------------------------------------------------------------------- plots
def plot_training(history: list[dict], workdir: Path) -> str:
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
  best = max(history, key=lambda h: (h["val_f1"], -h["step"]))
  axes[0].axvline(best["step"], color="C1", lw=0.8)
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


# ----------------------------------------------------------------------------- report
def _cell(figures, key, digits=4):
  stat = figures.get(key)
  return "n/a" if not stat or stat.get("mean") is None else f"{stat['mean']:.{digits}f}"


def diff_text(intervals, key, digits=4):
  b = intervals.get(key)
  if not b:
    return "n/a"
  ci = "" if b.get("ci") is None else f" [{b['ci'][0]:+.{digits}f}, {b['ci'][1]:+.{digits}f}]"
  return f"{b['diff']:+.{digits}f}{ci}"


def ci_text(stat, digits=4):
  if not stat:
    return "n/a"
  ci = "" if stat.get("ci") is None else f" [{stat['ci'][0]:.{digits}f}, {stat['ci'][1]:.{digits}f}]"
  return f"{stat['mean']:.{digits}f}{ci}"


def tables(summary: dict, systems: list[str], n: dict) -> list[tuple[str, str]]:
  figs, iv = summary["figures"], summary["intervals"]
  others = [s for s in systems if s != "latent_pager"]
  head = (["metric", "published text", "published pager"] + [f"ours {LABELS[s]}" for s in systems]
          + [f"pager - {LABELS[s]} [95% CI]" for s in others])
  out = []
  for t in TASKS:
    rows = []
    for m in ("f1", "f1_raw") + ANSWER_METRICS[1:]:
      pub = published.FIGURES.get((t, m), ("", ""))
      rows.append([NAMES[m], *pub] + [_cell(figs, f"{t}/{s}/{m}") for s in systems]
                  + [diff_text(iv, f"{t}/{m}/latent_pager-{s}") if m != "f1_raw" else "" for s in others])
    if t == "all":
      rows.append([NAMES["consistency"], "not computed", "not computed"]
                  + [_cell(figs, f"all/{s}/consistency") for s in systems]
                  + [diff_text(iv, "all/consistency/latent_pager-text_buffer") if s == "text_buffer" else ""
                     for s in others])
      rows.append(["Peak device memory (GB)", *published.FIGURES[("all", "peak_memory_gb")]]
                  + [_cell(figs, f"all/{s}/peak_memory_gb") for s in systems] + [""] * len(others))
    label = {"all": "Answerable questions", "single_fact": "Single fact", "multi_hop": "Multi hop"}[t]
    out.append((f"{label} (published n={published.N_TEST[t]}, ours n={n[t]})",
                "The full-context column covers only the questions whose document fits the LM's window "
                f"({n['full_context']} of them), and so does its difference column.\n\n" * ("full_context" in systems)
                + report_lib.markdown_table(head, rows)))
  return out


def abstention_table(summary, systems) -> str:
  figs, iv, th = summary["figures"], summary["intervals"], summary["thresholds"]
  rows = []
  for s in systems:
    a = figs[f"abstention/{s}"]
    rows.append([LABELS[s], "n/a" if s not in th else f"{th[s]['threshold']:.4g} (val utility {th[s]['utility']:.3f})",
                 a["abstained"], "n/a" if a["precision"] is None else f"{a['precision']:.3f}",
                 "n/a" if a["recall"] is None else f"{a['recall']:.3f}",
                 _cell(figs, f"every/{s}/hallucination_grounded"), _cell(figs, f"aurc/{s}/error"),
                 _cell(figs, f"aurc/{s}/hallucination")])
  table = report_lib.markdown_table(
      ["system", "threshold (chosen on validation)", "abstained", "abstain precision", "abstain recall",
       "grounded hallucination, every question", "AURC (1 - F1)", "AURC (hallucination)"], rows)
  diffs = [f"- pager - {LABELS[s]}: grounded hallucination "
           f"{diff_text(iv, f'every/hallucination_grounded/latent_pager-{s}')}, AURC "
           f"{diff_text(iv, f'aurc/error/latent_pager-{s}')}" for s in systems if s != "latent_pager"]
  return table + "\n\n" + "\n".join(diffs)


def memory_note(figures: dict) -> str:
  """The published peak-memory statement beside our one measurement per system, not graded."""
  pager, text = figures.get("all/latent_pager/peak_memory_gb"), figures.get("all/text_buffer/peak_memory_gb")
  if not pager or not text:
    return ""
  pub_text, pub_pager = published.FIGURES[("all", "peak_memory_gb")]
  return (f"Not graded: the published statement that the latent pager needs more peak memory ({pub_pager} GB vs "
          f"{pub_text} GB). Ours is one measurement per system, XLA's account of the largest compiled program "
          f"(arguments + outputs + temporaries - aliased): {pager['mean']:.4f} GB vs {text['mean']:.4f} GB, shown "
          "as measured (the answerable-questions table) with no interval.")


def latency_section(timing: dict) -> str:
  rows = []
  for s in SYSTEMS:
    if s in timing:
      lat, cpu = describe(timing[s]["latency_s"]), timing[s].get("cpu_s")
      rows.append([LABELS[s], f"{lat['mean']:.4f}", f"{lat['sd']:.4f}" if lat["sd"] is not None else "n/a",
                   "n/a" if cpu is None else f"{np.mean(cpu):.4f}", lat["n"]])
  ratio, cpu_ratio = timing.get("latency_ratio"), timing.get("cpu_ratio")
  text = report_lib.markdown_table(["system", "latency per question (s)", "sd", "CPU seconds per question", "n"],
                                   rows)
  if ratio:
    text += (f"\n\nText buffer / pager mean latency: **{ci_text(ratio, 2)}x** (paired bootstrap over the timed questions; "
             "published 2.55x = 19.55 s / 7.65 s)"
             + (f"; in CPU time {ci_text(cpu_ratio, 2)}x" if cpu_ratio else "")
             + ". The systems take turns question by question. Wall times differ run to run on a shared machine, "
             "so these figures stay in timing.json, out of summary.json.")
  return text


def headline_section(h: dict, b: dict, timing: dict) -> str:
  h = {**h, "latency_ratio": timing.get("latency_ratio")}   # from timing.json: a wall-clock figure
  rows = [[k, h[k] if isinstance(h[k], (str, int)) or h[k] is None else
           (ci_text(h[k]) if "mean" in h[k] else diff_text({k: h[k]}, k))] for k in h]
  latency = timing.get("latency_bar")
  verdict = "**met**" if b["f1"] and b["hallucination"] and latency else "**not met**"
  text = (f"The bar: pager F1 not below the text buffer's (interval of the difference reaches 0: {b['f1']}), no "
          f"more grounded hallucination (interval reaches 0 or below: {b['hallucination']}), at >= {BAR_SPEEDUP}x "
          f"lower latency ({latency}; timing.json): {verdict}.")
  return text + "\n\n" + report_lib.markdown_table(["headline", "value [95% CI]"], rows)


def write(workdir: Path) -> Path:
  config, rows, val, history, timing = load(workdir)
  summary = summarize(config, rows, val, history, timing)
  report_lib.write_json(workdir / "summary.json", summary)
  ratio = latency_ratio(timing, config["eval"]["bootstrap"], config["seed"])
  timing = {**timing, "latency_ratio": ratio, "latency_bar": latency_bar(ratio),
            "cpu_ratio": latency_ratio(timing, config["eval"]["bootstrap"], config["seed"], "cpu_s")}
  report_lib.write_json(workdir / "timing.json", timing)
  systems = systems_in(rows)
  main = [r for r in rows if not r["probe"]]
  ok = [r for r in main if r.get("answerable", True)]
  n = {"all": len(ok), **{t: sum(r["task_type"] == t for r in ok) for t in ("single_fact", "multi_hop")},
       "full_context": sum(r["answers"].get("full_context") is not None for r in ok)}
  images = [plot_training(history, workdir)]
  rc = plot_risk_coverage(summary, workdir)
  images += [rc] if rc else []
  curve = report_lib.markdown_table(
      ["step", "questions seen", "train loss", "val loss", "val F1", "lr"],
      [[h["step"], h.get("questions", ""), "-" if h["train_loss"] is None else f"{h['train_loss']:.4f}",
        f"{h['val_loss']:.4f}", f"{h['val_f1']:.4f}", f"{h['lr']:.3g}"] for h in history])
  best = max(history, key=lambda h: (h["val_f1"], -h["step"]))
  examples = report_lib.markdown_table(
      ["type", "answerable", "question", "gold"] + [LABELS[s] for s in systems],
      [[r["task_type"], r.get("answerable", True), r["question"], r["gold_answer"]]
       + [str(r["answers"][s])[:80] for s in systems] for r in main[:8]])
  pg = config["pager"]
  arm = (f"`{pg['encoder']}` encoder"
         + (f", {pg['slots_per_chunk']} slots per chunk" if pg["encoder"] != "pooled" else "")
         + (f", started from `{pg['init']}`" if pg.get("init") else ""))
  sections = [
      ("What ran", f"Variant `{config.get('variant')}`: frozen LM `{config['model']['path']}`; the pager: {arm}. "
                   f"{len(main)} test questions ({len(ok)} answerable: {n['single_fact']} single fact, "
                   f"{n['multi_hop']} multi hop; {len(main) - len(ok)} unanswerable, gold answer "
                   f"`{config['data']['abstain_answer']}`) plus {len(rows) - len(main)} consistency probes; pages of "
                   f"{config['pages']['chunk_tokens']} tokens (overlap {config['pages']['chunk_overlap']}), layers "
                   f"{tuple(config['pages']['hidden_layers'])}. Every system answers with max "
                   f"{config['generation']['max_new_tokens']} new tokens, repetition penalty "
                   f"{config['generation']['repetition_penalty']}, EOS and repeated-sentence truncation; abstention "
                   "thresholds are chosen on validation. Differences are latent pager minus the other system, paired "
                   f"bootstrap ({config['eval']['bootstrap']:,} resamples). The published figures are Qwen3-1.7B on "
                   "NarrativeQA/HotpotQA: printed beside ours, not expected to match."),
      targets_section(summary, timing),
      ("Headline", headline_section(summary["headline"], summary["bar"], timing)),
      *tables(summary, systems, n),
      ("Abstention and risk-coverage", abstention_table(summary, systems)),
      ("Latency", latency_section(timing)),
      report_lib.claims_section(summary["claims"], "Intervals are paired bootstraps over test questions; the speed "
                                "claim is graded in the latency section (timings stay out of summary.json). "
                                + memory_note(summary["figures"])),
      ("Training", f"Kept checkpoint: step {best['step']} (best validation F1 {best['val_f1']:.4f}); never chosen by "
                   "validation loss.\n\n" + curve),
      report_lib.plots_section(images),
      ("Examples", examples),
  ]
  return report_lib.write_report(workdir, "Latent Pager Memory vs text buffer: published and ours", sections)
