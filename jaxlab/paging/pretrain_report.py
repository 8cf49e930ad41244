"""summary.json, report.md and the curve of an encoder pretraining run (held-out
reconstruction token accuracy and exact-chunk rate, which the frontier sets against compression).

Reads WORKDIR/pretrain_log.jsonl (one line per evaluation) and config.json; no timings enter
summary.json, so a rebuild is byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from jaxlab.core import report as report_lib

SHOWN = ("val_token_accuracy", "val_exact_chunk_rate", "val_ae_ce", "val_continuation_ce", "val_no_pages_ce",
         "val_no_pages_token_accuracy", "val_qa_ce")


def history(workdir: Path) -> list[dict]:
  """The evaluations of the run, one per step (a resumed run may have logged a step twice: the last wins)."""
  rows = {}
  for line in (Path(workdir) / "pretrain_log.jsonl").read_text().splitlines():
    r = json.loads(line)
    rows[r["step"]] = r
  return [rows[k] for k in sorted(rows)]


def summarize(config: dict, rows: list[dict]) -> dict:
  last = rows[-1]
  p, pages = config["pager"], config["pages"]
  return {"experiment": config["experiment"], "variant": config.get("variant"), "encoder": p["encoder"],
          "slots_per_chunk": p["slots_per_chunk"], "chunk_tokens": pages["chunk_tokens"],
          "compression_ratio": pages["chunk_tokens"] / p["slots_per_chunk"], "hidden_layers": pages["hidden_layers"],
          "steps": last["step"], "documents_seen": last["step"] * config["pretrain"]["batch_size"],
          "held_out_chunks": last.get("val_chunks"), "final": {k: last[k] for k in SHOWN if k in last},
          "history": [{k: r[k] for k in ("step", "loss", "token_accuracy_train", *SHOWN) if k in r} for r in rows]}


def plot(rows: list[dict], workdir: Path) -> str:
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  steps = [r["step"] for r in rows]
  axes[0].plot(steps, [r["val_token_accuracy"] for r in rows], "o-", label="reconstruction (own pages)")
  axes[0].plot(steps, [r["val_no_pages_token_accuracy"] for r in rows], "--", color="grey", label="no pages")
  axes[0].plot(steps, [r["val_exact_chunk_rate"] for r in rows], "s-", label="exact chunks")
  axes[0].set_title("held-out token accuracy / exact-chunk rate")
  axes[1].plot(steps, [r["val_ae_ce"] for r in rows], "o-", label="autoencoding")
  axes[1].plot(steps, [r["val_continuation_ce"] for r in rows], "o-", label="continuation")
  axes[1].plot(steps, [r["val_no_pages_ce"] for r in rows], "--", color="grey", label="no pages")
  axes[1].set_title("held-out cross-entropy (nats per token)")
  for ax in axes:
    ax.set_xlabel("step")
    ax.legend()
  return report_lib.save_plot(fig, workdir, "pretrain_curve.png")


def write(workdir) -> Path:
  workdir = Path(workdir)
  config = json.loads((workdir / "config.json").read_text())
  rows = history(workdir)
  summary = summarize(config, rows)
  report_lib.write_json(workdir / "summary.json", summary)
  f = summary["final"]
  table = report_lib.markdown_table(
      ["step", "train loss", "token acc (own pages)", "exact chunks", "AE CE", "continuation CE", "no-pages CE",
       "no-pages token acc", "QA CE"],
      [[r["step"], "" if r["loss"] is None else f"{r['loss']:.4f}", f"{r['val_token_accuracy']:.4f}",
        f"{r['val_exact_chunk_rate']:.4f}", f"{r['val_ae_ce']:.4f}", f"{r['val_continuation_ce']:.4f}",
        f"{r['val_no_pages_ce']:.4f}", f"{r['val_no_pages_token_accuracy']:.4f}",
        f"{r.get('val_qa_ce', float('nan')):.4f}"] for r in rows])
  sections = [
      ("What ran", f"Variant `{config.get('variant')}`: the `{summary['encoder']}` encoder, "
                   f"{summary['slots_per_chunk']} pages per {summary['chunk_tokens']}-token chunk (compression "
                   f"{summary['compression_ratio']:.1f}x), layers {tuple(summary['hidden_layers'])}, on the frozen LM "
                   f"`{config['model']['path']}`; {summary['steps']} steps of {config['pretrain']['batch_size']} "
                   f"rows ({summary['documents_seen']:,} rows drawn from {config['pretrain']['documents']:,} generated "
                   f"documents of {config['data']['questions_per_document']} questions, each row a document and up to "
                   f"{config['train']['questions_per_row']} of its questions), objectives "
                   f"autoencoding x {config['pretrain']['ae_weight']} + continuation x "
                   f"{config['pretrain']['continuation_weight']} + question answering x "
                   f"{config['pretrain']['qa_weight']}. "
                   + (f"Started from `{config['pager']['init']}` (step 0: its held-out figures). "
                      if config["pager"].get("init") else "")
                   + (f"Each document cut to {config['pages']['max_pages']} of its chunks: those holding its "
                      "questions' evidence, the rest drawn at random. "
                      if config["pretrain"].get("chunks") == "evidence" else "")
                   + f"Held out: {summary['held_out_chunks']} documents about validation-split entities (one chunk "
                   "and one question each)."),
      ("Result", f"Reconstruction token accuracy {f['val_token_accuracy']:.4f} (teacher forced; the frozen LM with no "
                 f"pages: {f['val_no_pages_token_accuracy']:.4f}); exact-chunk rate {f['val_exact_chunk_rate']:.4f} "
                 "(every token of the chunk right, which is exactly when greedy decoding regenerates it); "
                 f"cross-entropy {f['val_ae_ce']:.4f} from the chunk's own pages, {f['val_continuation_ce']:.4f} from "
                 f"the previous chunks' pages, {f['val_no_pages_ce']:.4f} from none; question answering "
                 f"cross-entropy {f['val_qa_ce']:.4f} (answer and EOS tokens)."),
      ("Curve", table + f"\n\n![pretraining curve]({plot(rows, workdir)})"),
  ]
  return report_lib.write_report(workdir, "Page encoder pretraining", sections)
