"""The text references on documents longer than the LM's window (the `references` mode): what a
paging system has to beat or reach, each reading at most `text_buffer.max_context_tokens` tokens of
context, all answered by the frozen LM with the answer settings shared with the pager:

- the text buffer under each budget rule of `references.keep` (`text_buffer.KEEP`: its notes'
  first tokens, their last, or the notes that best match the question), its notes extracted once
  and shared by every rule; the best rule is chosen on validation;
- `retrieval`: the document's chunks (the page store's) scored against the question by BM25
  (`retrieval.bm25_scores`), the best that fit the budget read as text in document order;
- `expanded`: the chunks a trained scorer picks from each chunk's cached keys (`expansion`:
  selective expansion over its tokens' LM embeddings or its pages, per `expansion.index`), the
  best that fit the budget read as text in document order;
- `iterative`: two rounds: the scorer's top chunk, then the chunk whose text best matches, by BM25,
  a second query (a two-hop question's first evidence names its subject; the second names the
  bridge entity, which the question does not): with `expansion.second_query = "draft"`, the answer
  the `expanded` reader drafted from the scorer's chunks (ITER-RETGEN's retrieve, draft, retrieve
  again); with `"bridge"`, the top chunk's words that the question does not use (the entities
  beside the subject); with no query (an abstention) or no match, the scorer's next chunk; with
  `"learned"`, not BM25 but a second trained scorer whose query is the question followed by the
  top chunk (`expansion`'s second hop: a multi-hop dense retriever's); with `"entity"`, not BM25
  but the first scorer, asked the question of each name that stands beside the question's own in
  a sentence of the top chunk (the candidate bridge entities), the best over names;
- `extracted`: sentences, not chunks: those that name the question's names, or the names that
  stand beside them in the scorer's top chunk (a two-hop question's candidate bridge entities),
  taken from the chunks in the scorer's order while they fit the budget, read in document order
  (extractive compression keyed on the names, with the scorer's choice as its order);
- `oracle`: the chunks that hold the question's evidence (one per evidence sentence) read as text,
  the ceiling of reading the right text; an unanswerable question has none, and the oracle then
  reads what `retrieval` reads.

Choice, on validation only: the text buffer's rule with the highest F1 at `bar.coverage` over
every validation question (`arms.validation_score`); every system's abstention threshold by the
run's `eval.threshold_rule`. The test split is then answered once by every system, and
`summary.json` holds, per system: F1 before abstaining on the answerable questions, F1 at each of
`eval.coverages` over every question, hallucination as served (`metrics.category`), with intervals
of each system minus the chosen text buffer (and of each pair of `VERSUS` that both read); what the
documents are (tokens, chunks, their ratio to the window); and how often each scored reader's
chunks hold the evidence. Where a paging reader answers, the long-document bar declared in the
config is graded for the one chosen on validation (`long_bar`) and ends report.md.

Two paging systems read by the same scorer (`hybrid`): `paged`, the pager reading the pages of
the top chunks, and `hybrid`, the top chunks as text beside the pages of the next ones; and one
that reads every chunk with no scorer: `tree`, the pages of pages of the whole document. Each
fine-tunes its pager on the training questions reading its own pages, chosen by validation F1.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxlab.core import report as report_lib
from jaxlab.core.config import from_dict
from jaxlab.core.stats import bootstrap_claim
from jaxlab.data.documents import chunk_spans
from jaxlab.paging import (analysis, arms, data, expansion, figures as figures_lib, hybrid, long_bar, metrics,
                           pipeline, reader_timing, retrieval, selective, train as train_lib)
from jaxlab.paging.text_buffer import generate_rows, wrap

TEXT_READERS = ("retrieval", "expanded", "iterative", "extracted", "oracle")
READERS = TEXT_READERS + hybrid.READERS
SCORED = ("expanded", "iterative", "extracted") + hybrid.SCORED   # the readers that read by the expansion scorer's scores
# (reader, the reader it is compared with beside the text buffer): the learned choice of chunks
# against BM25's, pages added to (or read instead of) the expanded text, and every chunk's pages
# folded by the tree against the chosen chunks' pages.
VERSUS = (("expanded", "retrieval"), ("iterative", "expanded"), ("extracted", "expanded"), ("extracted", "retrieval"),
          ("hybrid", "expanded"), ("paged", "expanded"), ("tree", "paged"), ("paged", "retrieval"), ("hybrid", "retrieval"), ("tree", "retrieval"))


def text_buffer_name(keep: str) -> str:
  return "text_buffer_" + (keep or "first")


def chosen_chunks(tokenizer, record: dict, reader: str, chunk_tokens: int, overlap: int, budget: int,
                  separator: list[int], scores=None) -> tuple[list[int], list[tuple[int, int]], list[int], list[int]]:
  """(the document's token ids, its chunk spans, the chunks `reader` reads, the chunks that hold
  the evidence) of one record. `scores`: the record's chunk scores (the `expanded` reader's);
  None scores the chunks by BM25."""
  enc = tokenizer.encode(record["document"])
  spans = chunk_spans(len(enc.ids), chunk_tokens, overlap)
  sizes = [e - s + len(separator) for s, e in spans]
  held = retrieval.evidence_chunks(enc.offsets, record, chunk_tokens, overlap)
  if held and reader == "oracle":
    kept = [held[i] for i in retrieval.select(np.zeros(len(held)), [sizes[i] for i in held], budget + len(separator))]
  else:
    if scores is None:
      scores = retrieval.bm25_scores(_chunk_texts(record["document"], enc.offsets, spans), record["question"])
    kept = retrieval.select(scores, sizes, budget + len(separator))
  return enc.ids, spans, kept, held


def _chunk_texts(document: str, offsets, spans) -> list[str]:
  return [document[offsets[s][0]:offsets[e - 1][1]] for s, e in spans]


def iterative_scores(tokenizer, config, records: list[dict], scores: list[np.ndarray], drafts: list[str] | None,
                     second=None) -> list:
  """Per record, the `iterative` reader's chunk scores (`retrieval.second_round`): the scorer's
  top chunk, then the chunks by BM25 of the second query (`expansion.second_query`): the draft
  answer (`drafts`: the `expanded` reader's; an abstention drafts nothing), or the top chunk's
  words that the question does not use; or by `second` (an `expansion.Expander`): the trained
  second hop given the top chunk, or the first scorer asked the question of each bridge name."""
  c, out = config, []
  mode = expansion.second_query(c)
  if mode == "learned":
    return [retrieval.second_round(first, hop)
            for first, hop in zip(scores, second.scores(records, expansion.tops(scores)))]
  if mode == "entity":
    return [retrieval.second_round(first, hop) for first, hop in
            zip(scores, entity_scores(tokenizer, config, records, scores, second))]
  for i, (r, first) in enumerate(zip(records, scores)):
    texts = record_chunk_texts(tokenizer, c, r)
    if not expansion.needs_draft(c):
      asked = set(metrics.normalize(r["question"]).split())
      query = " ".join(w for w in texts[int(np.argmax(first))].split() if metrics.normalize(w) not in asked)
    else:
      draft = drafts[i]
      query = "" if metrics.normalize(draft) == metrics.normalize(c.data.abstain_answer) else draft
    second = retrieval.bm25_scores(texts, query) if query.strip() else np.zeros(len(texts))
    out.append(retrieval.second_round(first, second))
  return out


def record_chunk_texts(tokenizer, config, record: dict) -> list[str]:
  """The text of each of the record's document's chunks (the page store's chunking)."""
  enc = tokenizer.encode(record["document"])
  return _chunk_texts(record["document"], enc.offsets,
                      chunk_spans(len(enc.ids), config.pages.chunk_tokens, config.pages.chunk_overlap))


def entity_scores(tokenizer, config, records: list[dict], scores: list[np.ndarray], scorer) -> list[np.ndarray]:
  """Per record, `scorer`'s chunk scores for its question asked of each bridge name of its top
  chunk (`retrieval.bridge_names`; the question's name replaced by it), the best over names; zeros
  where the top chunk names none (the reader then takes the first scorer's next chunk)."""
  asked, owner = [], []
  for i, (r, first) in enumerate(zip(records, scores)):
    top = record_chunk_texts(tokenizer, config, r)[int(np.argmax(first))]
    for name in retrieval.bridge_names(r["question"], top):
      asked.append({**r, "question": retrieval.substitute(r["question"], name)})
      owner.append(i)
  out = [None] * len(records)
  for i, got in zip(owner, scorer.scores(asked) if asked else []):
    out[i] = got if out[i] is None else np.maximum(out[i], got)
  return [np.zeros(len(s)) if o is None else o for o, s in zip(out, scores)]


def extracted_spans(tokenizer, config, record: dict, scores) -> list[tuple[int, int]]:
  """The character spans of the document sentences the `extracted` reader reads, in document
  order: those naming one of the question's names or of the bridge names beside them in the
  sentences of the scorer's top chunk (`retrieval.bridge_names`), each ranked by the best of the
  chunks it overlaps in the order of `scores` (ties: the earlier sentence), kept while their
  tokens fit `text_buffer.max_context_tokens` (`retrieval.select`)."""
  document = record["document"]
  enc = tokenizer.encode(document)
  spans = chunk_spans(len(enc.ids), config.pages.chunk_tokens, config.pages.chunk_overlap)
  starts = np.array([enc.offsets[s][0] for s, _ in spans])
  ends = np.array([enc.offsets[e - 1][1] for _, e in spans])
  rank = np.empty(len(spans), np.int64)
  rank[np.argsort(-np.asarray(scores, np.float64), kind="stable")] = np.arange(len(spans))
  sentences = retrieval.sentence_spans(document)
  over = lambda a, b: (starts < b) & (ends > a)
  top = int(np.argmax(rank == 0))
  beside = " ".join(document[a:b] for a, b in sentences if over(a, b)[top])
  names = set(retrieval.NAME.findall(record["question"])) | set(retrieval.bridge_names(record["question"], beside))
  named = [(a, b) for a, b in sentences if any(n in document[a:b] for n in names) and over(a, b).any()]
  best = [-int(rank[over(a, b)].min()) for a, b in named]
  sizes = [len(tokenizer.encode(document[a:b]).ids) for a, b in named]
  return [named[i] for i in retrieval.select(best, sizes, config.text_buffer.max_context_tokens)]


def extracted_contexts(tokenizer, config, records: list[dict], scores: list[np.ndarray]) -> list[list[int]]:
  """Per record, the token ids the `extracted` reader reads: its sentences (`extracted_spans`),
  joined by spaces, at most `text_buffer.max_context_tokens`."""
  return [tokenizer.encode(" ".join(r["document"][a:b] for a, b in extracted_spans(tokenizer, config, r, s))
                           ).ids[:config.text_buffer.max_context_tokens] for r, s in zip(records, scores)]


def chunk_contexts(tokenizer, records: list[dict], reader: str, chunk_tokens: int, overlap: int, budget: int,
                   separator: str, scores=None) -> list[list[int]]:
  """Per record, the token ids `reader` reads: its chosen chunks, in document order, overlapping
  chunks merged, runs joined by `separator`, at most `budget` tokens. `scores`: per record, its
  chunk scores (None: BM25's)."""
  sep = tokenizer.encode(separator).ids if separator else []
  out = []
  for i, r in enumerate(records):
    ids, spans, kept, _ = chosen_chunks(tokenizer, r, reader, chunk_tokens, overlap, budget, sep,
                                        None if scores is None else scores[i])
    out.append(retrieval.merged_ids(ids, spans, kept, sep)[:budget])
  return out


def evidence_read(tokenizer, records: list[dict], chunk_tokens: int, overlap: int, budget: int,
                  separator: str, scored: dict | None = None, config=None) -> dict:
  """How often `retrieval` (and each reader of `scored`: {name: per-record chunk scores}) reads
  every chunk that holds the evidence (the `extracted` reader, given `config`: every evidence
  sentence), over the answerable records; `by_task`, the same per task type (a two-hop question's
  second evidence names the bridge entity, not the question's subject)."""
  sep = tokenizer.encode(separator).ids if separator else []
  answerable = [i for i, r in enumerate(records) if r.get("answerable", True)]
  tasks = sorted({records[i]["task_type"] for i in answerable})
  out, by_task = {}, {t: {"n": sum(records[i]["task_type"] == t for i in answerable)} for t in tasks}
  share = lambda got: float(np.mean(got)) if got else None
  for name, scores in {"retrieval": None, **(scored or {})}.items():
    got = {}
    for i in answerable:
      if name == "extracted":
        kept = extracted_spans(tokenizer, config, records[i], scores[i])
        got[i] = all(any(a <= s and e <= b for a, b in kept)
                     for s, e in zip(records[i]["evidence_char_start"], records[i]["evidence_char_end"]))
        continue
      _, _, kept, held = chosen_chunks(tokenizer, records[i], name, chunk_tokens, overlap, budget, sep,
                                       None if scores is None else scores[i])
      got[i] = set(held) <= set(kept)
    out[name] = share(list(got.values()))
    for t in tasks:
      by_task[t][name] = share([g for i, g in got.items() if records[i]["task_type"] == t])
  return {**out, "n": len(answerable), "by_task": by_task}


def read(setup: pipeline.Setup, config, records: list[dict], reader: str, tb, scores=None,
         batch_size: int | None = None) -> dict:
  """{"answers", "confidence"} of the frozen LM reading `reader`'s chunks for each record
  (`scores`: per record, the chunk scores it reads by; None: BM25's), in batches of `batch_size`
  (default `eval.batch_size`)."""
  c = config
  if reader == "extracted":
    contexts = extracted_contexts(setup.tokenizer, c, records, scores)
  else:
    contexts = chunk_contexts(setup.tokenizer, records, reader, c.pages.chunk_tokens, c.pages.chunk_overlap,
                              c.text_buffer.max_context_tokens, c.text_buffer.separator, scores)
  rows = [wrap(setup.tokenizer, c.prompts.answer, "context", ids, question=r["question"])
          for ids, r in zip(contexts, records)]
  answers, conf = generate_rows(tb.answerer, setup.tokenizer, rows, batch_size or c.eval.batch_size, tb.answer_width,
                                reader, setup.abstain, confidence=True)
  return {"answers": answers, "confidence": conf.tolist()}


def answer(setup: pipeline.Setup, config, records: list[dict], expanded=None, second=None) -> tuple[dict, dict]:
  """Every reference's answers on `records`: {system: {"answers", "confidence"}}, and the chunk
  scores each scored text reader read by ({reader: per-record scores}); `expanded`: the `expanded`
  reader's chunk scores per record; `second`: the trained second hop, if any."""
  notes = setup.text_buffer(records, keep="bm25")
  notes.buffer_ids([r["document"] for r in records])   # every rule reads these notes
  out, scores = {}, ({"expanded": expanded} if "expanded" in config.references.readers else {})
  for keep in config.references.keep:
    tb = notes.with_keep(keep)
    answers, conf = tb.answer(records)
    out[text_buffer_name(keep)] = {"answers": answers, "confidence": conf.tolist()}
  for reader in config.references.readers:
    if reader == "iterative":
      drafts = out["expanded"]["answers"] if expansion.needs_draft(config) else None
      scores[reader] = iterative_scores(setup.tokenizer, config, records, expanded, drafts, second)
      out[reader] = read(setup, config, records, reader, notes, scores[reader])
    elif reader in TEXT_READERS:
      if reader == "extracted":
        scores[reader] = expanded
      out[reader] = read(setup, config, records, reader, notes, expanded if reader in ("expanded", "extracted")
                         else None)
  return out, scores


def expander(setup: pipeline.Setup, config, workdir: Path, splits: dict):
  """(the `expanded` reader's trained scorer (`expansion.fit`), chosen by the validation F1 of the
  frozen LM reading the chunks it picks; the iterative reader's trained second hop, chosen by its
  validation F1, or None where its second query is not learned)."""
  val = [r for r in splits["validation"] if not r.get("probe")]
  answerer = setup.text_buffer(val[:1])

  def val_f1(scores_of):
    got = read(setup, config, val, "expanded", answerer, scores_of(val))
    return train_lib.mean_f1(got["answers"], val)

  first = expansion.fit(setup, config, workdir, splits, val_f1)[0]
  if expansion.second_query(config) == "entity":
    return first, first   # the first scorer asks the question of each bridge name
  if not expansion.learned_second(config):
    return first, None
  first_val = first.scores(val)

  def iterative_f1(scores_of):
    second = scores_of(val)   # each record's first chunk comes from the same `first`
    scores = [retrieval.second_round(f, h) for f, h in zip(first_val, second)]
    return train_lib.mean_f1(read(setup, config, val, "iterative", answerer, scores)["answers"], val)

  return first, expansion.fit(setup, config, workdir, splits, iterative_f1, first=first)[0]


def document_stats(tokenizer, records: list[dict], chunk_tokens: int, overlap: int, window: int) -> dict:
  """Tokens and chunks per document, and the tokens' ratio to the LM's window."""
  tokens = np.array([len(tokenizer.encode(d).ids) for d in dict.fromkeys(r["document"] for r in records)])
  chunks = np.array([len(chunk_spans(int(n), chunk_tokens, overlap)) for n in tokens])
  q = lambda x: {"min": int(x.min()), "median": float(np.median(x)), "max": int(x.max())}
  return {"documents": len(tokens), "tokens": q(tokens), "chunks": q(chunks),
          "window_multiple": {k: v / window for k, v in q(tokens).items()}}


def run(config, workdir: Path):
  """The `references` mode: answer validation and test with every reference, then `report`."""
  workdir = Path(workdir)
  setup = pipeline.Setup(config, workdir)
  c = config
  readers = tuple(c.references.readers)
  scoring = bool(set(readers) & set(SCORED))
  paged = [r for r in readers if r in hybrid.READERS]
  splits = data.load(data.DataSpec.of(config), workdir,
                     splits=("train", "validation", "test") if scoring or paged else ("validation", "test"))
  records = {s: [r for r in splits[s] if not r.get("probe")] for s in splits}
  chooser, second = expander(setup, config, workdir, splits) if scoring else (None, None)
  scored = {s: chooser.scores(records[s]) if chooser else None for s in records if s != "train" or paged}
  answered, text_scored = {}, {}
  for s in ("validation", "test"):
    answered[s], text_scored[s] = answer(setup, config, records[s], scored[s], second)
  read_by = lambda s: {
      **evidence_read(setup.tokenizer, records[s], c.pages.chunk_tokens, c.pages.chunk_overlap,
                      c.text_buffer.max_context_tokens, c.text_buffer.separator, text_scored[s], c),
      **{r: hybrid.evidence_read(setup.tokenizer, c, r, records[s], scored[s]) for r in paged}}
  stats = {s: {**document_stats(setup.tokenizer, splits[s], c.pages.chunk_tokens, c.pages.chunk_overlap,
                                c.model.context_tokens), "evidence_read": read_by(s)}
           for s in ("validation", "test")}
  trained = {}
  for reader in paged:
    trained[reader] = hybrid.fit(setup, config, workdir, reader, splits, scored)
    for s in ("validation", "test"):
      answered[s][reader] = hybrid.answer(setup, config, reader, trained[reader], records[s], scored[s])
  systems = [text_buffer_name(k) for k in c.references.keep] + list(readers)
  answered = {s: {name: got[name] for name in systems} for s, got in answered.items()}
  val_rows = [{"gold_answer": r["gold_answer"], **{k: {s: answered["validation"][s][k][i] for s in systems}
                                                   for k in ("answers", "confidence")}}
              for i, r in enumerate(records["validation"])]
  rule, _ = chosen_buffer(val_rows, systems, c.bar.coverage)
  timed = reader_timing.measure(setup, config, records["test"][:c.eval.latency_questions], rule, read, chooser,
                                trained, iterative_scores, second)
  if jax.process_index() != 0:
    return None
  for split, name in (("validation", "validation.jsonl"), ("test", "predictions.jsonl")):
    pipeline.write_predictions(workdir / name, records[split], answered[split])
  (workdir / "documents.json").write_text(json.dumps(stats, indent=1) + "\n")
  report_lib.write_json(workdir / reader_timing.FILE, timed)
  return report(workdir)


def chosen_buffer(val: list[dict], systems: list[str], coverage: float) -> tuple[str, dict]:
  """(the text buffer rule with the best validation F1 at `coverage`, the earlier on a tie; every
  rule's score) over validation rows as predictions files hold them."""
  scores = {s: arms.validation_score(val, s, coverage) for s in systems if s.startswith("text_buffer_")}
  return arms.best(scores), scores


def per_question(config: dict, rows: list[dict], val: list[dict], systems=None) -> tuple[dict, dict]:
  """(each system's abstention threshold, chosen on validation; per system (of `systems`, by
  default every one), the test arrays its figures come from: `raw` F1 before abstaining (NaN where
  unanswerable), `halluc` hallucination as served at that threshold, `conf` confidence and `util`
  answer F1 (each NaN where it gave no answer), over every test question but the consistency probes)."""
  abstain = config["data"]["abstain_answer"]
  rows = [r for r in rows if not r.get("probe")]
  systems = list(rows[0]["answers"]) if systems is None else systems
  chosen = analysis.thresholds(val, config, systems)
  final = {s: analysis.final_answers(rows, s, chosen, abstain) for s in systems}
  _, halluc = analysis.served(rows, final, abstain)
  answerable = np.array([r.get("answerable", True) for r in rows])
  util = analysis.raw_f1(rows, systems)
  return chosen, {s: {"raw": np.where(answerable, util[s], np.nan), "halluc": halluc[s],
                      "conf": np.array([r["confidence"].get(s) for r in rows], np.float64), "util": util[s]}
                  for s in systems}


def paired(a: dict, b: dict, coverages, boots: int, seed: int) -> dict:
  """a - b on the same questions (`per_question`'s arrays of two systems): F1 before abstaining,
  hallucination as served and F1 at each coverage, each a paired-bootstrap interval."""
  out = {"f1_raw": figures_lib.interval(a["raw"], b["raw"], boots, seed),
         "hallucination": figures_lib.interval(a["halluc"], b["halluc"], boots, seed)}
  for c in coverages:
    out[f"coverage/{figures_lib.coverage_key(c)}"] = bootstrap_claim(
        lambda i, c=c: (selective.f1_at_coverage(a["conf"], a["util"], c, i)
                        - selective.f1_at_coverage(b["conf"], b["util"], c, i)), len(a["conf"]), boots, seed)
  return out


def summarize(config: dict, rows: list[dict], val: list[dict], documents: dict) -> dict:
  """summary.json of a `references` run (see the module docstring)."""
  ev = config["eval"]
  boots, seed, coverage = ev["bootstrap"], config["seed"], config["bar"]["coverage"]
  systems = list(rows[0]["answers"])
  best, scores = chosen_buffer(val, systems, coverage)
  chosen, q = per_question(config, rows, val)
  raw = {s: q[s]["raw"] for s in systems}
  figures, intervals = {}, {}

  def differences(s, other, label):
    intervals.update({f"{k}/{s}-{label}": v for k, v in paired(q[s], q[other], ev["coverages"], boots, seed).items()})

  for s in systems:
    figures[f"f1_raw/{s}"] = figures_lib.mean_ci(raw[s], boots, seed)
    figures[f"hallucination/{s}"] = figures_lib.mean_ci(q[s]["halluc"], boots, seed)
    for c in ev["coverages"]:
      figures[f"coverage/{figures_lib.coverage_key(c)}/{s}"] = {
          "mean": float(selective.f1_at_coverage(q[s]["conf"], q[s]["util"], c)), "n": len(rows)}
    if s != best:
      differences(s, best, "text_buffer")
  for s, other in VERSUS:
    if {s, other} <= set(systems):
      differences(s, other, other)
  declared, share = long_bar.summarize(from_dict(config), val, systems, raw, boots, seed)
  intervals.update(share)
  return {"experiment": config["experiment"], "variant": config.get("variant"),
          "test_world": data.test_world(data.DataSpec.of(from_dict(config))), "documents": documents,
          "text_buffer": {"validation_f1_at_coverage": scores, "chosen": best, "coverage": coverage},
          "thresholds": chosen, "figures": figures, "intervals": intervals, **({"bar": declared} if declared else {})}


def report(workdir) -> Path:
  """summary.json and report.md of a finished `references` run."""
  workdir = Path(workdir)
  config, rows, val = figures_lib.read_run(workdir)
  documents = json.loads((workdir / "documents.json").read_text())
  summary = summarize(config, rows, val, documents)
  report_lib.write_json(workdir / "summary.json", summary)
  timed = None
  if (workdir / reader_timing.FILE).is_file():   # wall-clock figures stay out of summary.json
    raw = json.loads((workdir / reader_timing.FILE).read_text())
    timed = {**raw, **reader_timing.summarize(raw, config["eval"]["bootstrap"], config["seed"])}
    report_lib.write_json(workdir / reader_timing.FILE, timed)
  bar = "" if "bar" not in summary else f"\n## The long-document bar\n\n{long_bar.section(summary, timed)}\n"
  path = workdir / "report.md"
  path.write_text(markdown(config, summary) + ("" if timed is None else "\n" + latency_text(timed)) + bar)
  return path


def latency_text(timed: dict) -> str:
  """The latency table of timing.json (`reader_timing`)."""
  base = timed["text_buffer"]
  rows = [[s, figures_lib.ci_text(timed["latency"][s], 3),
           "" if s == base else figures_lib.ci_text(timed["ratio"][f"ratio_{s}"], 1) + "x"]
          for s in [base] + [r for r in READERS if r in timed["systems"]]]
  return "\n".join([
      f"Latency at one question per document, nothing cached, one question at a time ({len(timed['ids'])} test "
      "questions, each on its own document; the systems in turn; wall seconds, from timing.json):", "",
      report_lib.markdown_table(["system", "seconds per question", f"{base} / system"], rows), ""])


def page_layout(config: dict, reader: str) -> str:
  """What `reader` reads, in words."""
  text, paged = hybrid.layout(from_dict(config), reader)
  slots = config["pager"]["slots_per_chunk"]
  if reader == "tree":
    e = config["expansion"]
    return (f"the tree reader reads the pages of every chunk through {e['tree_depth']} levels of fan-out "
            f"{e['tree_fanout']} (at most {e['tree_nodes']} top nodes: {e['tree_nodes'] * slots} soft tokens)")
  pages = f"the pages of the {'next' if text else 'top'} {paged} chunks ({paged * slots} soft tokens)"
  top = "the top chunk" if text == 1 else f"the top {text} chunks"
  return f"the {reader} reader reads " + (f"{top} as text and " if text else "") + pages


def markdown(config: dict, summary: dict) -> str:
  figs, ints, tb = summary["figures"], summary["intervals"], summary["text_buffer"]
  best = tb["chosen"]
  doc = summary["documents"]["test"]
  budget = config["text_buffer"]["max_context_tokens"]
  cov = figures_lib.coverage_key(tb["coverage"])
  rows = []
  for s in [best] + [s for s in summary["thresholds"] if s != best]:
    vs = lambda key: "" if s == best else figures_lib.diff_text(ints, key.format(s=s), 3)
    rows.append([s + (" (chosen)" if s == best else ""), figures_lib.ci_text(figs[f"f1_raw/{s}"], 3),
                 vs("f1_raw/{s}-text_buffer"), figures_lib.num(figs[f"coverage/{cov}/{s}"]["mean"]),
                 vs("coverage/" + cov + "/{s}-text_buffer"), figures_lib.ci_text(figs[f"hallucination/{s}"], 3),
                 vs("hallucination/{s}-text_buffer")])
  head = ["system", "F1 before abstaining", "minus text buffer", f"F1 at {tb['coverage']:.0%} coverage",
          "minus text buffer", "hallucination as served", "minus text buffer"]
  d = lambda key: figures_lib.diff_text(ints, key, 3)
  versus = [f"The {s} reader minus {other}: F1 before abstaining {d(f'f1_raw/{s}-{other}')}, at "
            f"{tb['coverage']:.0%} coverage {d(f'coverage/{cov}/{s}-{other}')}, hallucination as served "
            f"{d(f'hallucination/{s}-{other}')}." for s, other in VERSUS if f"f1_raw/{s}-{other}" in ints]
  return "\n".join([
      f"# Latent pager references: {summary.get('variant')}", "",
      f"Test world {summary['test_world']['seed']} ({summary['test_world']['builder']}): "
      f"{doc['documents']} documents of {doc['tokens']['min']}-{doc['tokens']['max']} tokens "
      f"(median {doc['tokens']['median']:.0f}; {doc['window_multiple']['min']:.1f}x-"
      f"{doc['window_multiple']['max']:.1f}x the LM's window of {config['model']['context_tokens']}), "
      f"{doc['chunks']['min']}-{doc['chunks']['max']} chunks each; the top BM25 chunks hold all the evidence of "
      f"{doc['evidence_read']['retrieval']:.0%} of the {doc['evidence_read']['n']} answerable questions"
      + (f", the expansion scorer's {doc['evidence_read']['expanded']:.0%}" if "expanded" in doc["evidence_read"]
         else "")
      + (f", the iterative reader's {doc['evidence_read']['iterative']:.0%}" if "iterative" in doc["evidence_read"]
         else "")
      + (f", the extracted reader's sentences {doc['evidence_read']['extracted']:.0%}"
         if "extracted" in doc["evidence_read"] else "")
      + "".join(f", the {r} reader's chunks {doc['evidence_read'][r]:.0%}" for r in hybrid.READERS
                if doc["evidence_read"].get(r) is not None) + ". "
      f"Every text reader reads at most {budget} tokens of context"
      + "".join(f"; {page_layout(config, r)}" for r in hybrid.READERS if r in summary["thresholds"])
      + "; the text buffer's rule was chosen on validation "
      f"(F1 at {tb['coverage']:.0%} coverage: "
      + ", ".join(f"{k} {v:.3f}" for k, v in tb["validation_f1_at_coverage"].items()) + ").", "",
      report_lib.markdown_table(head, rows), ""] + ([" ".join(versus), ""] if versus else []))
