"""The compression frontier: pager settings swept on validation, the
chosen points scored once on test, against the text buffer and the full-context reference.

Points: for each encoder in `frontier.encoders`, `pooled` at its one setting; `slots`, `pointer`
and `icae` at every `frontier.slots_per_chunk`, `frontier.pointer_slots_per_chunk` and
`frontier.icae_slots_per_chunk`, with the run's layers and aggregator depth; and at the run's
`pager.slots_per_chunk`, `slots` with every other `frontier.hidden_layers` and every other
`frontier.depths` (a one-at-a-time sweep around the `cpu_slots` setting: the full grid would cost
their product). Each point pretrains its encoder
(`frontier.pretrain_steps`; each point its own, so an aggregator is pretrained with its encoder) and fine-tunes
the pager on QA (`frontier.train_steps`), both resumable under WORKDIR/encoders/ and
WORKDIR/points/. Validation scores every point: F1 over all validation
questions (the selection metric, as in training), plus F1 on the answerable ones and grounded
hallucination.

Selection (`select`, validation only): per encoder and compression, the point with the best
validation F1 among its layer and depth variants; the best of all is the frontier's best pager.
Only then are the test questions read: each chosen point answers them once, and so do the text
buffer and the full context (once for all points); per chosen point, the latency on the first
`eval.latency_questions` test questions. Every difference is paired over the same questions with
a bootstrap interval. Pretraining's held-out reconstruction (token accuracy, exact-chunk rate) is
reported against compression ratio.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.config import derive
from jaxlab.core.stats import describe, paired_bootstrap
from jaxlab.paging import (analysis, data, encoders, figures as figures_lib, metrics, pipeline, pretrain,
                           pretrain_report, timing)

ABSTAIN_FREE = ("f1", "hallucination_grounded")


def points(config) -> list[dict]:
  f, p = config.frontier, config.pager
  base_layers, base_m, base_depth = tuple(config.pages.hidden_layers), p.slots_per_chunk, p.depth
  out = []
  for encoder in f.encoders:
    kind = encoders.get(encoder)
    if kind.stored_states:   # one setting: the published design
      out.append({"encoder": encoder, "slots_per_chunk": None, "hidden_layers": base_layers, "depth": 1})
      continue
    counts = f[kind.frontier_counts]
    variants = [(m, base_layers, base_depth) for m in counts]
    if encoder == "slots":  # the study sweeps layers and depth on `slots` alone: the layers are its input
      variants += [(base_m, tuple(layers), base_depth) for layers in f.hidden_layers if tuple(layers) != base_layers]
      variants += [(base_m, base_layers, d) for d in f.depths if d != base_depth]
    out += [{"encoder": encoder, "slots_per_chunk": m, "hidden_layers": layers, "depth": d}
            for m, layers, d in dict.fromkeys(variants)]
  for pt in out:
    pt["name"] = name(pt)
  return out


def name(pt: dict) -> str:
  layers = "".join(map(str, pt["hidden_layers"]))
  if encoders.get(pt["encoder"]).stored_states:
    return pt["encoder"]
  return f"{pt['encoder']}-m{pt['slots_per_chunk']}-L{layers}-d{pt['depth']}"


def point_config(config, pt: dict, mode: str = "compare"):
  """The run's config for one point: its pager settings and the frontier's budget and data."""
  f = config.frontier
  changes = {"mode": mode, "pages.hidden_layers": tuple(pt["hidden_layers"]), "pager.encoder": pt["encoder"],
             "pager.depth": pt["depth"], "pager.init": "",
             "data.num_train": f.num_train, "data.num_validation": f.num_validation, "data.num_test": f.num_test,
             "train.steps": f.train_steps, "train.eval_every": max(1, f.train_steps // 4),
             "pretrain.steps": f.pretrain_steps, "pretrain.eval_every": max(1, f.pretrain_steps // 2)}
  if encoders.get(pt["encoder"]).stored_states:
    changes["pager.dropout"] = 0.1
  else:
    changes["pager.slots_per_chunk"] = pt["slots_per_chunk"]
  return derive(config, changes)


def validation_scores(rows: list[dict], system: str, abstain: str) -> dict:
  answers = [r["answers"][system] for r in rows]
  ok = np.array([r.get("answerable", True) for r in rows])
  f1 = np.array([metrics.token_f1(a, r["gold_answer"]) for a, r in zip(answers, rows)])
  hal = np.array([0.0 if a == abstain else metrics.hallucination_grounded(a, r["document"])
                  for a, r in zip(answers, rows)])
  return {"f1_all": float(f1.mean()), "f1_answerable": float(f1[ok].mean()) if ok.any() else None,
          "hallucination_grounded": float(hal.mean()), "n": len(rows)}


def select(results: dict[str, dict]) -> dict:
  """From validation results {point name: {"point", "validation": {...}}} only: the chosen point
  per (encoder, compression) and the best overall, by validation F1 over all questions."""
  groups: dict[tuple, list[str]] = {}
  for n, r in results.items():
    groups.setdefault((r["point"]["encoder"], r["point"]["slots_per_chunk"]), []).append(n)
  score = lambda n: (results[n]["validation"]["f1_all"], -len(n), n)
  chosen = {f"{e}/{m}": max(names, key=score) for (e, m), names in groups.items()}
  return {"chosen": chosen, "best": max(chosen.values(), key=score)}


def run(config, workdir: Path, setup):

  workdir = Path(workdir)
  splits = data.load(data.DataSpec.of(config), workdir, num_train=config.frontier.num_train,
                     num_validation=config.frontier.num_validation, num_test=config.frontier.num_test)
  abstain = config.data.abstain_answer
  results, trained = {}, {}
  for pt in points(config):
    pdir = workdir / "points" / pt["name"]
    c = point_config(config, pt)
    if not encoders.get(pt["encoder"]).stored_states:
      edir = workdir / "encoders" / pt["name"]
      if not (edir / "encoder" / "encoder.safetensors").is_file():
        pretrain.run(point_config(config, pt, "pretrain"), edir, setup.lm, setup.tokenizer, setup.store, setup.eos,
                     setup.mesh)
      c.pager.init = str(edir / "encoder")
    trained[pt["name"]] = pipeline.train_pager(setup, c, pdir, splits)
    out = pipeline.answer_split(setup, c, trained[pt["name"]], splits["validation"],
                                  docs=trained[pt["name"]]["validation_docs"], systems=("latent_pager",))
    results[pt["name"]] = {"point": pt, "validation": validation_scores(
        [{**r, "answers": {"latent_pager": a}} for r, a in zip(splits["validation"], out["latent_pager"]["answers"])],
        "latent_pager", abstain), "history": trained[pt["name"]]["history"]}
  chosen = select(results)
  # Test is read from here on, once per chosen point.
  test = [r for r in splits["test"] if not r.get("probe")]
  tb = setup.text_buffer(test)
  answered = pipeline.answer_split(setup, config, None, test, tb=tb, systems=("text_buffer", "full_context"))
  val_text = pipeline.answer_split(setup, config, None, splits["validation"], systems=("text_buffer",
                                                                                         "full_context"))
  timed = test[:config.eval.latency_questions]
  measured = {}
  for key, n in chosen["chosen"].items():
    pt = results[n]["point"]
    c = point_config(config, pt)
    got = pipeline.answer_split(setup, c, trained[n], test, systems=("latent_pager",))["latent_pager"]
    answered[n] = got
    val_pager = pipeline.answer_split(setup, c, trained[n], splits["validation"],
                                        docs=trained[n]["validation_docs"], systems=("latent_pager",))["latent_pager"]
    val_text[n] = val_pager
    measured[n] = timing.measure(setup, timing.TimingSpec.of(c), trained[n], tb, timed,
                                 systems=("latent_pager",))["latent_pager"]
  measured.update(timing.measure(setup, timing.TimingSpec.of(config), None, tb, timed,
                                 systems=("text_buffer", "full_context")))
  if jax.process_index() != 0:
    return None
  pipeline.write_predictions(workdir / "predictions.jsonl", test, answered)
  pipeline.write_predictions(workdir / "validation.jsonl", splits["validation"], val_text)
  (workdir / "points.json").write_text(json.dumps({"results": results, "selection": chosen}, indent=1) + "\n")
  (workdir / "timing.json").write_text(json.dumps(measured, indent=1) + "\n")
  return report(workdir)


# ----------------------------------------------------------------------------- report
def summarize(config, rows, val, sweep, encoders_dir: Path) -> dict:
  ev, abstain = config["eval"], config["data"]["abstain_answer"]
  chosen = sweep["selection"]["chosen"]
  systems = [s for s in ("text_buffer", "full_context") if s in rows[0]["answers"]] + sorted(set(chosen.values()))
  thresholds = analysis.thresholds(val, config, systems)   # every chosen point abstains as `cpu`'s pager does
  ok = np.array([r.get("answerable", True) for r in rows])
  sc = {s: analysis.scores(rows, analysis.final_answers(rows, s, thresholds, abstain), abstain) for s in systems}
  figures, intervals = {}, {}
  for s in systems:
    figures[f"{s}/f1"] = describe(sc[s]["f1"][ok & ~np.isnan(sc[s]["f1"])])
    figures[f"{s}/hallucination_grounded"] = describe(sc[s]["hallucination_grounded"][~np.isnan(sc[s]["f1"])])
  for s in sorted(set(chosen.values())):
    for other in ("text_buffer", "full_context"):
      if other not in sc:
        continue
      for m, sel in (("f1", ok), ("hallucination_grounded", np.ones_like(ok))):
        a, b = np.where(sel, sc[s][m], np.nan), sc[other][m]
        both = ~(np.isnan(a) | np.isnan(b))
        if both.sum() > 1:
          intervals[f"{s}-{other}/{m}"] = paired_bootstrap(a[both], b[both], ev["bootstrap"], seed=config["seed"])
  recon = {}
  for d in sorted(encoders_dir.glob("*")) if encoders_dir.is_dir() else []:
    if (d / "pretrain_log.jsonl").is_file():
      made = d / "encoder" / "config.json"
      cfg = json.loads(made.read_text()) if made.is_file() else None
      last = pretrain_report.history(d)[-1]
      if cfg:
        recon[d.name] = {"compression_ratio": cfg["pages"]["chunk_tokens"] / cfg["pager"]["slots_per_chunk"],
                         **{k: last[k] for k in pretrain_report.SHOWN if k in last}}
  return {"experiment": config["experiment"], "variant": config.get("variant"), "points": sweep["results"],
          "selection": sweep["selection"], "thresholds": thresholds, "figures": figures, "intervals": intervals,
          "reconstruction": recon}


def _ratio(pt: dict, chunk_tokens: int) -> float:
  return chunk_tokens / pt["slots_per_chunk"] if pt["slots_per_chunk"] else chunk_tokens


def plots(summary, config, timing_data, workdir: Path) -> list[str]:
  figs, sweep = summary["figures"], summary["points"]
  chunk = config["pages"]["chunk_tokens"]
  lines = [(s, c) for s, c in (("text_buffer", "black"), ("full_context", "grey")) if f"{s}/f1" in figs]
  out = []
  fig, ax = plt.subplots(figsize=(6, 4))
  for enc in sorted({r["point"]["encoder"] for r in sweep.values()}):
    pts = sorted([r for r in sweep.values() if r["point"]["encoder"] == enc], key=lambda r: _ratio(r["point"], chunk))
    ax.plot([_ratio(r["point"], chunk) for r in pts], [r["validation"]["f1_answerable"] for r in pts], "o",
            alpha=0.4, label=f"{enc} (validation, every point)")
    chosen = [n for n in summary["selection"]["chosen"].values() if sweep[n]["point"]["encoder"] == enc]
    chosen.sort(key=lambda n: _ratio(sweep[n]["point"], chunk))
    ax.plot([_ratio(sweep[n]["point"], chunk) for n in chosen], [figs[f"{n}/f1"]["mean"] for n in chosen], "s-",
            label=f"{enc} (test, chosen)")
  for s, color in lines:
    ax.axhline(figs[f"{s}/f1"]["mean"], color=color, ls="--", label=f"{figures_lib.LABELS[s]} (test)")
  ax.set_xscale("log", base=2)
  ax.set_xlabel("compression ratio (chunk tokens per page vector)")
  ax.set_ylabel("F1, answerable questions")
  ax.legend(fontsize=7)
  out.append(report_lib.save_plot(fig, workdir, "frontier_f1_vs_compression.png"))
  for metric, label, fname in (("f1", "F1, answerable questions", "frontier_f1_vs_latency.png"),
                               ("hallucination_grounded", "grounded hallucination, every question",
                                "frontier_hallucination_vs_latency.png")):
    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted(set(summary["selection"]["chosen"].values())):
      if n in timing_data:
        ax.plot(np.median(timing_data[n]["latency_s"]), figs[f"{n}/{metric}"]["mean"], "o")
        ax.annotate(n, (np.median(timing_data[n]["latency_s"]), figs[f"{n}/{metric}"]["mean"]), fontsize=6)
    for s, color in lines:
      if s in timing_data:
        ax.axhline(figs[f"{s}/{metric}"]["mean"], color=color, ls="--", label=f"{figures_lib.LABELS[s]}")
        ax.axvline(np.median(timing_data[s]["latency_s"]), color=color, ls=":")
    ax.set_xlabel("median latency per question (s; timing.json)")
    ax.set_ylabel(label)
    ax.legend(fontsize=7)
    out.append(report_lib.save_plot(fig, workdir, fname))
  if summary["reconstruction"]:
    fig, ax = plt.subplots(figsize=(6, 4))
    rec = sorted(summary["reconstruction"].items(), key=lambda kv: kv[1]["compression_ratio"])
    ax.plot([r["compression_ratio"] for _, r in rec], [r["val_token_accuracy"] for _, r in rec], "o-",
            label="token accuracy (own pages)")
    ax.plot([r["compression_ratio"] for _, r in rec], [r["val_exact_chunk_rate"] for _, r in rec], "s-",
            label="exact-chunk rate")
    ax.plot([r["compression_ratio"] for _, r in rec], [r["val_no_pages_token_accuracy"] for _, r in rec], "--",
            color="grey", label="token accuracy, no pages")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("compression ratio")
    ax.set_ylabel("held-out reconstruction")
    ax.legend(fontsize=7)
    out.append(report_lib.save_plot(fig, workdir, "frontier_reconstruction.png"))
  return out


def report(workdir) -> Path:
  workdir = Path(workdir)
  config, rows, val = figures_lib.read_run(workdir)
  sweep = json.loads((workdir / "points.json").read_text())
  timing_data = json.loads((workdir / "timing.json").read_text())
  summary = summarize(config, rows, val, sweep, workdir / "encoders")
  report_lib.write_json(workdir / "summary.json", summary)
  figs, iv, chunk = summary["figures"], summary["intervals"], config["pages"]["chunk_tokens"]
  sweep_rows = [[n, r["point"]["encoder"], r["point"]["slots_per_chunk"] or "-", f"{_ratio(r['point'], chunk):.0f}x",
                 "".join(map(str, r["point"]["hidden_layers"])), r["point"]["depth"],
                 f"{r['validation']['f1_all']:.4f}", f"{r['validation']['f1_answerable']:.4f}",
                 f"{r['validation']['hallucination_grounded']:.4f}",
                 "chosen" * (n in summary["selection"]["chosen"].values())]
                for n, r in summary["points"].items()]
  test_rows = []
  shown = [k for k in ("text_buffer", "full_context") if f"{k}/f1" in figs]
  for s in shown + sorted(set(summary["selection"]["chosen"].values())):
    cell = lambda k: "" if k not in iv else (f"{iv[k]['diff']:+.4f} [{iv[k]['ci'][0]:+.4f}, {iv[k]['ci'][1]:+.4f}]")
    lat = f"{np.median(timing_data[s]['latency_s']):.4f}" if s in timing_data else "n/a"
    test_rows.append([figures_lib.LABELS.get(s, s), f"{figs[f'{s}/f1']['mean']:.4f} (n={figs[f'{s}/f1']['n']})",
                      f"{figs[f'{s}/hallucination_grounded']['mean']:.4f}", lat, cell(f"{s}-text_buffer/f1"),
                      cell(f"{s}-text_buffer/hallucination_grounded"), cell(f"{s}-full_context/f1")])
  recon_rows = [[k, f"{r['compression_ratio']:.0f}x", f"{r['val_token_accuracy']:.4f}",
                 f"{r['val_exact_chunk_rate']:.4f}", f"{r['val_no_pages_token_accuracy']:.4f}", f"{r['val_ae_ce']:.4f}",
                 f"{r['val_continuation_ce']:.4f}"]
                for k, r in sorted(summary["reconstruction"].items(), key=lambda kv: kv[1]["compression_ratio"])]
  f = config["frontier"]
  images = plots(summary, config, timing_data, workdir)
  sections = [
      ("What ran", f"Encoders {tuple(f['encoders'])}, slots per chunk {tuple(f['slots_per_chunk'])} (`slots`), "
                   f"{tuple(f.get('pointer_slots_per_chunk', ()))} (`pointer`) and {tuple(f['icae_slots_per_chunk'])} "
                   f"(`icae`), layers {[tuple(x) for x in f['hidden_layers']]}, aggregator depths {tuple(f['depths'])} "
                   f"(`slots`, one at a time around the `cpu_slots` setting); per point {f['pretrain_steps']} "
                   f"pretraining steps and "
                   f"{f['train_steps']} QA steps; {f['num_train']} training documents, {f['num_validation']} "
                   f"validation and {f['num_test']} test questions. Every choice below is made on validation; the "
                   f"chosen points were scored once on test. Best pager: `{summary['selection']['best']}`."),
      ("Sweep (validation)", report_lib.markdown_table(
          ["point", "encoder", "slots/chunk", "compression", "layers", "depth", "val F1 (all)", "val F1 (answerable)",
           "val grounded hallucination", ""], sweep_rows)),
      ("Chosen points on test", "Differences are the point minus the text buffer (or the full context, on the "
                                "questions whose document fits), paired bootstrap 95% intervals; latencies are medians "
                                "from timing.json (they stay out of summary.json).\n\n" + report_lib.markdown_table(
          ["system", "F1 (answerable)", "grounded hallucination", "median latency (s)", "F1 - text buffer",
           "hallucination - text buffer", "F1 - full context"], test_rows)),
      ("Pretraining reconstruction against compression", report_lib.markdown_table(
          ["encoder", "compression", "token accuracy", "exact-chunk rate", "no-pages token accuracy", "AE CE",
           "continuation CE"], recon_rows) if recon_rows else "No pretrained encoders."),
      report_lib.plots_section(images),
  ]
  return report_lib.write_report(workdir, "Latent pager: the compression frontier", sections)
