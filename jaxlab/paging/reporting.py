"""report.md of a latent-pager comparison: what ran, the targets, the headline and the bar, the
published tables beside ours, abstention and risk-coverage, latency as served, the graded claims,
training, plots and examples. `write(workdir)` rebuilds summary.json (`analysis.py`), timing.json's
latency figures and ratios, the plots (`plots.py`) and report.md from a finished workdir."""

from __future__ import annotations

from pathlib import Path

from jaxlab.core import report as report_lib
from jaxlab.paging import encoders, latency as latency_lib, metrics, published
from jaxlab.paging.analysis import load, summarize, systems_in
from jaxlab.paging.bar import bar_parts, declared_text, latency_bar
from jaxlab.paging.figures import (ANSWER_METRICS, HELD_OUT, LABELS, NAMES, SYSTEMS, TASKS, cell, ci_text, coverage_key,
                                   diff_text, read_rows)
from jaxlab.paging.plots import plot_risk_coverage, plot_training
from jaxlab.paging.spec import keep_rule, kept


def latency_target(ratio: dict | None, speedup: float) -> dict:
  """The bar's latency part as a target: a wall-clock figure, so for report.md, never summary.json."""
  return report_lib.target(f">= {speedup:g}x lower latency than the text buffer",
                           f"text buffer / pager mean end-to-end seconds per question at least {speedup:g} at one "
                           "question per document (its ingestion and the answer), on the point estimate",
                           latency_bar(ratio, speedup),
                           "n/a" if not ratio else f"{ci_text(ratio, 2)}x (timing.json)")


def targets_section(summary: dict, timing: dict, speedup: float):
  """The report's targets: the summary's answer parts and the latency part from timing.json."""
  return report_lib.targets_section(
      summary["targets"] + [latency_target(timing.get("latency_ratio"), speedup)],
      "The answer targets are computed from the summary (summary.json \"targets\"); the latency target is judged "
      "from wall-clock timing (timing.json), which stays out of summary.json, so it is in this report only.")


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
      rows.append([NAMES[m], *pub] + [cell(figs, f"{t}/{s}/{m}") for s in systems]
                  + [diff_text(iv, f"{t}/{m}/latent_pager-{s}") if m != "f1_raw" else "" for s in others])
    if t == "all":
      rows.append([NAMES["consistency"], "not computed", "not computed"]
                  + [cell(figs, f"all/{s}/consistency") for s in systems]
                  + [diff_text(iv, "all/consistency/latent_pager-text_buffer") if s == "text_buffer" else ""
                     for s in others])
      rows.append(["Peak device memory (GB)", *published.FIGURES[("all", "peak_memory_gb")]]
                  + [cell(figs, f"all/{s}/peak_memory_gb") for s in systems] + [""] * len(others))
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
    t = th.get(s)
    rows.append([LABELS[s], "n/a" if t is None else
                 f"{t['threshold']:.4g} ({t['rule']}; val coverage {t['coverage']:.2f}, utility {t['utility']:.3f})",
                 a["abstained"], "n/a" if a["precision"] is None else f"{a['precision']:.3f}",
                 "n/a" if a["recall"] is None else f"{a['recall']:.3f}",
                 ci_text(figs.get(f"unanswerable/{s}/auroc"), 3), cell(figs, f"every/{s}/hallucination"),
                 cell(figs, f"every/{s}/hallucination_grounded"), ci_text(figs.get(f"aurc/{s}/error")),
                 cell(figs, f"aurc/{s}/hallucination")])
  table = report_lib.markdown_table(
      ["system", "threshold (chosen on validation)", "abstained", "abstain precision", "abstain recall",
       "AUROC answerable vs not (confidence)", "hallucination as served", "grounded hallucination (old measure)",
       "AURC (1 - F1)", "AURC (hallucination)"], rows)
  diffs = [f"- pager - {LABELS[s]}: hallucination as served {diff_text(iv, f'every/hallucination/latent_pager-{s}')}"
           f", grounded hallucination {diff_text(iv, f'every/hallucination_grounded/latent_pager-{s}')}, AURC "
           f"{diff_text(iv, f'aurc/error/latent_pager-{s}')}" for s in systems if s != "latent_pager"]
  return table + "\n\n" + "\n".join(diffs)


def errors_table(summary, systems) -> str:
  """What each system's answers are, as served, on answerable and unanswerable questions."""
  rows = []
  for s in systems:
    for kind in ("answerable", "unanswerable"):
      counts = summary["errors"][s][kind]
      n = sum(counts.values())
      if n:
        rows.append([LABELS[s], kind, n] + [f"{counts[c]} ({counts[c] / n:.3f})" for c in metrics.CATEGORIES])
  return ("Each answer as served (after the abstention threshold): correct (token F1 >= "
          f"{metrics.CORRECT_F1}), wrong but from the document (its content words are in the document), invented "
          "(they are not), abstained, or malformed (no content word). Hallucination = wrong-from-document + invented "
          "on answerable questions + any answer but abstaining on unanswerable ones.\n\n"
          + report_lib.markdown_table(["system", "questions", "n", *[c.replace("_", " ") for c in metrics.CATEGORIES]],
                                      rows))


def coverage_table(summary, systems, coverages) -> str:
  figs, iv = summary["figures"], summary["intervals"]
  rows = []
  for c in coverages:
    key = coverage_key(c)
    rows.append([f"{c:.0%}"] + [cell(figs, f"coverage/{key}/{s}") for s in systems]
                + [diff_text(iv, f"coverage/{key}/latent_pager-{s}") for s in systems if s != "latent_pager"])
  return ("Each system answers its own most confident share of the test questions (every question: an unanswerable "
          "one's gold answer is the abstain string); the figure is the mean F1 over those answered, so systems compare "
          "answering the same number of questions.\n\n" + report_lib.markdown_table(
              ["coverage"] + [LABELS[s] for s in systems]
              + [f"pager - {LABELS[s]} [95% CI]" for s in systems if s != "latent_pager"], rows))


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


def latency_section(timing: dict, speedup: float) -> str:
  """Latency as served: a table per number of questions per document (timing.json "served")."""
  served = timing.get("served")
  if not served:
    return "timing.json holds no latency as served (a run timed before it was measured)."
  ids, repeats = timing["latent_pager"]["ids"], timing["repeats"]
  text = [f"{len(ids)} test documents, each asked its own test question Q times (in turn with its others, where it "
          f"has more), the whole workload {repeats} times; per document each system ingests it once (the pager its "
          "soft tokens from the chunks' pages, the text buffer its notes), then answers Q questions one at a time, "
          "nothing else kept. Time to first token: ingestion + one answer call of the first question with one new "
          "token. End to end: (ingestion + Q answers) / Q. Means over the documents (each its mean over the repeats), "
          "bootstrap intervals over the documents; the systems take turns document by document, the first "
          "alternating by repeat. Wall times differ run to run on a shared machine, so these figures stay in "
          "timing.json, out of summary.json."]
  for q, row in served.items():
    rows = [[LABELS[s]] + [ci_text(row[s][f]) for f in latency_lib.SERVED_FIGURES] + [ci_text(row[s]["cpu_end_to_end"])]
            for s in SYSTEMS if s in row]
    judged = (f"the bar's latency part, >= {speedup:g}x: **{latency_bar(row['ratio'], speedup)}**" if q == "1" else
              "reported, no bar")
    ratio = "n/a" if not row["ratio"] else f"**{ci_text(row['ratio'], 2)}x**"
    cpu = f"; in CPU time {ci_text(row['cpu_ratio'], 2)}x" if row["cpu_ratio"] else ""
    text.append(f"### Q = {q} question{'s' * (q != '1')} per document\n\n" + report_lib.markdown_table(
        ["system", "ingestion per document (s)", "per question, answering (s)", "time to first token (s)",
         "end to end per question (s)", "end to end per question, CPU (s)"], rows)
        + f"\n\nText buffer / pager, end to end per question: {ratio}{cpu} ({judged}"
        + ("; published 2.55x = 19.55 s / 7.65 s, one question per document)" if q == "1" else ")"))
  return "\n\n".join(text)


def world_text(world: dict, seed: int) -> str:
  if world["seed"] is None:
    return "Test questions from the JSONL folder. "
  if world["seed"] == seed:
    return f"Train, validation and test from one world (seed {seed}). "
  return (f"The test split comes from its own world (seed {world['seed']}, builder `{world['builder']}`); train and "
          f"validation from seed {seed}'s. ")


def held_out_section(summary, systems) -> str | None:
  """The test questions reworded in held-out wordings, beside the original ones."""
  figs, iv = summary["figures"], summary["intervals"]
  if "held_out/all/latent_pager/f1_raw" not in figs:
    return None
  rows = []
  for t in TASKS:
    for s in systems:
      if f"held_out/{t}/{s}/f1_raw" in figs:
        rows.append([t.replace("_", " "), LABELS[s], cell(figs, f"{t}/{s}/f1_raw"),
                     cell(figs, f"held_out/{t}/{s}/f1_raw"), diff_text(iv, f"held_out/{t}/f1_raw/{s}_held_out-{s}"),
                     diff_text(iv, f"held_out/{t}/f1_raw/latent_pager-{s}") if s != "latent_pager" else ""])
  return ("The same test documents and answers with every question in a wording no training data used (one held-out "
          "template per relation and two-hop chain, in the base model's vocabulary; `jaxlab.data.lexicon`). F1 before "
          "abstaining, answerable questions.\n\n" + report_lib.markdown_table(
              ["questions", "system", "original wording", "held-out wording", "held-out - original [95% CI]",
               "pager - system, held-out [95% CI]"], rows))


def headline_section(h: dict, b: dict, timing: dict, declared: dict) -> str:
  h = {**h, "latency_ratio": timing.get("latency_ratio")}   # from timing.json: a wall-clock figure
  rows = [[k, h[k] if isinstance(h[k], (str, int)) or h[k] is None else
           (ci_text(h[k]) if "mean" in h[k] else diff_text({k: h[k]}, k))] for k in h]
  latency = timing.get("latency_bar")
  parts = bar_parts(declared)
  verdict = "**met**" if all(b[p] for p, *_ in parts) and latency else "**not met**"
  said = "; ".join(f"{what}: non-inferior {b[p]}, superior {b['superior'][p]}" for p, _, what, _ in parts)
  text = f"{declared_text(declared)}\n\nOn this test set: {said}; latency {latency} (timing.json): {verdict}."
  return text + "\n\n" + report_lib.markdown_table(["headline", "value [95% CI]"], rows)


def write(workdir: Path) -> Path:
  config, rows, val, history, timing = load(workdir)
  held = read_rows(workdir / HELD_OUT)
  summary = summarize(config, rows, val, history, timing, held=held or None)
  report_lib.write_json(workdir / "summary.json", summary)
  ratio = latency_lib.latency_ratio(timing, config["eval"]["bootstrap"], config["seed"])
  timing = {**timing, "latency_ratio": ratio, "latency_bar": latency_bar(ratio, config["bar"]["speedup"]),
            "cpu_ratio": latency_lib.latency_ratio(timing, config["eval"]["bootstrap"], config["seed"], "cpu_s"),
            "served": latency_lib.served_latency(timing, config["eval"]["bootstrap"], config["seed"])}
  report_lib.write_json(workdir / "timing.json", timing)
  systems = systems_in(rows)
  main = [r for r in rows if not r["probe"]]
  ok = [r for r in main if r.get("answerable", True)]
  n = {"all": len(ok), **{t: sum(r["task_type"] == t for r in ok) for t in ("single_fact", "multi_hop")},
       "full_context": sum(r["answers"].get("full_context") is not None for r in ok)}
  keep = keep_rule(config["train"])
  images = [plot_training(history, workdir, keep)]
  rc = plot_risk_coverage(summary, workdir)
  images += [rc] if rc else []
  curve = report_lib.markdown_table(
      ["step", "questions seen", "train loss", "val loss", "val F1", "lr"],
      [[h["step"], h.get("questions", ""), "-" if h["train_loss"] is None else f"{h['train_loss']:.4f}",
        f"{h['val_loss']:.4f}", f"{h['val_f1']:.4f}", f"{h['lr']:.3g}"] for h in history])
  best = kept(history, keep)
  examples = report_lib.markdown_table(
      ["type", "answerable", "question", "gold"] + [LABELS[s] for s in systems],
      [[r["task_type"], r.get("answerable", True), r["question"], r["gold_answer"]]
       + [str(r["answers"][s])[:80] for s in systems] for r in main[:8]])
  pg = config["pager"]
  arm = (f"`{pg['encoder']}` encoder"
         + ("" if encoders.get(pg["encoder"]).stored_states else f", {pg['slots_per_chunk']} slots per chunk")
         + (f", started from `{pg['init']}`" if pg.get("init") else ""))
  sections = [
      ("What ran", f"Variant `{config.get('variant')}`: frozen LM `{config['model']['path']}`; the pager: {arm}. "
                   + world_text(summary["test_world"], config["seed"]) +
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
      targets_section(summary, timing, config["bar"]["speedup"]),
      ("Headline", headline_section(summary["headline"], summary["bar"], timing, config["bar"])),
      ("F1 at matched coverage", coverage_table(summary, systems, config["eval"]["coverages"])),
      *([("Held-out wordings", held)] if (held := held_out_section(summary, systems)) else []),
      ("What the answers are", errors_table(summary, systems)),
      *tables(summary, systems, n),
      ("Abstention and risk-coverage", abstention_table(summary, systems)),
      ("Latency as served", latency_section(timing, config["bar"]["speedup"])),
      report_lib.claims_section(summary["claims"], "Intervals are paired bootstraps over test questions; the speed "
                                "claim is graded in the latency section (timings stay out of summary.json). "
                                + memory_note(summary["figures"])),
      ("Training", (f"Kept checkpoint: step {best['step']} (best validation F1 {best['val_f1']:.4f}); never chosen by "
                    "validation loss." if keep == "val_f1" else f"Kept checkpoint: the last, step {best['step']} "
                    f"(validation F1 {best['val_f1']:.4f}; `train.keep = {keep}`).") + "\n\n" + curve),
      report_lib.plots_section(images),
      ("Examples", examples),
  ]
  return report_lib.write_report(workdir, "Latent Pager Memory vs text buffer: published and ours", sections)
