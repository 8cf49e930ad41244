"""The text references on long documents: BM25 selection within a token budget, the oracle's
evidence chunks, the text buffer's budget rules, and the `references` mode end to end on the tiny
random Qwen3 of test_latent_pager.py."""

import json
import logging

import ml_collections
import numpy as np
import pytest

from jaxlab.core import config as config_lib
from jaxlab.data import long_doc_qa as L
from jaxlab.data.documents import chunk_spans
from jaxlab.lm import tokenizer as tok_lib
from jaxlab.paging import (arms, data, expansion, experiment, figures, hybrid, long_bar, metrics, pairs, pipeline,
                           references, retrieval)
from tests.test_latent_pager import _load, tiny_lm_folder


def test_select_keeps_the_best_pieces_that_fit_in_document_order():
  scores = np.array([0.1, 3.0, 2.0, 3.0, 0.5])
  assert retrieval.select(scores, [4, 4, 4, 4, 4], 8) == [1, 3]          # a tie goes to the earlier piece
  assert retrieval.select(scores, [4, 4, 4, 4, 4], 11) == [1, 3]         # a third does not fit
  assert retrieval.select(scores, [4, 9, 4, 4, 4], 8) == [2, 3]          # one over the budget is never kept
  assert retrieval.select(scores, [1, 1, 1, 1, 1], 5) == [0, 1, 2, 3, 4]
  assert retrieval.select(scores, [4] * 5, 3) == []


def test_merged_ids_reads_an_overlap_once_and_separates_runs():
  ids = list(range(100, 130))
  spans = chunk_spans(len(ids), 10, 2)           # (0, 10), (8, 18), (16, 26), (24, 30)
  assert retrieval.merged_ids(ids, spans, [0, 1], [-1]) == ids[0:18]
  assert retrieval.merged_ids(ids, spans, [0, 2], [-1]) == ids[0:10] + [-1] + ids[16:26]
  assert retrieval.merged_ids(ids, spans, [], [-1]) == []


def test_bm25_ranks_the_piece_that_states_the_asked_fact_first():
  pieces = ["The weather was mild and the harvest was good.",
            "Argent Works was founded by Quinn Unger in the old quarter.",
            "Quinn Unger lives in Karthia and enjoys chess."]
  scores = retrieval.bm25_scores(pieces, "Who founded Argent Works?")
  assert int(np.argmax(scores)) == 1 and scores[0] == 0.0
  assert not retrieval.bm25_scores(pieces, "xyzzy").any()


def test_indexing_a_document_logs_nothing_below_a_warning(caplog):
  with caplog.at_level(logging.DEBUG):
    retrieval.bm25_scores(["Argent Works was founded by Quinn Unger.", "Quinn Unger enjoys chess."], "Who founded it?")
  assert not [r for r in caplog.records if r.name.startswith("bm25s") and r.levelno < logging.WARNING]


def test_oracle_chunks_hold_their_evidence_on_long_documents():
  tokenizer = tok_lib.load_tokenizer("models/lm_base")
  cfg = L.LongDocQAConfig(name="long", min_tokens=1_800, max_tokens=3_000, chunk_tokens=80,
                          unanswerable_fraction=0.25)
  seen = {"single_fact": 0, "multi_hop": 0, "unanswerable": 0}
  for r in L.generate_qa(cfg, "test", 12):
    enc = tokenizer.encode(r["document"])
    spans = chunk_spans(len(enc.ids), 96, 16)
    held = retrieval.evidence_chunks(enc.offsets, r, 96, 16)
    if not r["answerable"]:
      assert held == []
      seen["unanswerable"] += 1
      continue
    seen[r["task_type"]] += 1
    # Each evidence sentence has its own chunk, the one holding most of its tokens: the whole
    # sentence wherever it is no longer than the chunks' overlap (some chunk then holds it whole).
    assert len(held) == len(r["evidence"])
    for start, end in zip(r["evidence_char_start"], r["evidence_char_end"]):
      inside = {t for t, (a, b) in enumerate(enc.offsets) if a < end and b > start}
      counts = [len(inside & set(range(s, e))) for s, e in spans]
      assert any(counts[i] == max(counts) for i in held)
      if len(inside) <= 16:
        assert any(counts[i] == len(inside) for i in held)
  assert min(seen.values()) > 0, seen


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """A finished `references` run at the smoke size: every budget rule and every chunk reader, the
  iterative reader's second query by a trained second hop."""
  root = tmp_path_factory.mktemp("references")
  workdir = root / "run"
  config = _load("long_smoke", tiny_lm_folder(root / "lm"), workdir, "--config.expansion.second_query=learned")
  experiment.run(config, workdir)
  return config, workdir


def test_references_mode_answers_with_every_system_and_chooses_on_validation(finished):
  config, workdir = finished
  systems = ["text_buffer_first", "text_buffer_last", "text_buffer_bm25", "retrieval", "expanded", "iterative",
             "extracted", "oracle", "paged", "hybrid"]
  for name in ("predictions.jsonl", "validation.jsonl"):
    rows = [json.loads(line) for line in (workdir / name).read_text().splitlines()]
    assert rows and all(list(r["answers"]) == systems for r in rows) and not any(r["probe"] for r in rows)
  summary = json.loads((workdir / "summary.json").read_text())
  chosen = summary["text_buffer"]["chosen"]
  scores = summary["text_buffer"]["validation_f1_at_coverage"]
  assert chosen in systems[:3] and scores[chosen] == max(scores.values())
  assert set(summary["thresholds"]) == set(systems)
  for s in systems:
    assert f"f1_raw/{s}" in summary["figures"]
    assert (f"f1_raw/{s}-text_buffer" in summary["intervals"]) == (s != chosen)
  for s, other in [v for v in references.VERSUS if set(v) <= set(systems)]:   # the tree: its own test
    assert {f"f1_raw/{s}-{other}", f"hallucination/{s}-{other}"} <= set(summary["intervals"])
    assert f"The {s} reader minus {other}" in (workdir / "report.md").read_text()
  assert summary["test_world"]["builder"].startswith("latent_pager_")
  assert summary["documents"]["test"]["documents"] == config.data.num_test
  read = summary["documents"]["test"]["evidence_read"]
  test = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  answerable = sum(r["answerable"] for r in test)
  assert read["n"] == answerable
  assert all(0.0 <= read[r] <= 1.0 for r in ("retrieval", "expanded", "iterative", "extracted", "paged", "hybrid"))
  for task, shares in read["by_task"].items():
    assert shares["n"] == sum(r["answerable"] and r["task_type"] == task for r in test)
  assert sum(t["n"] for t in read["by_task"].values()) == answerable
  assert "(chosen)" in (workdir / "report.md").read_text()
  timed = json.loads((workdir / "timing.json").read_text())   # the chosen text buffer against each reader, timed
  assert set(timed["systems"]) == {chosen, "retrieval", "expanded", "iterative", "extracted", "paged", "hybrid"}
  assert timed["text_buffer"] == chosen and len(timed["ids"]) == config.eval.latency_questions
  for t in timed["systems"].values():
    assert len(t["wall_s"]) == config.eval.latency_questions and min(t["wall_s"]) > 0
  assert set(timed["ratio"]) == {f"ratio_{s}" for s in ("retrieval", "expanded", "iterative", "extracted", "paged",
                                                         "hybrid")}
  wall = {s: np.mean(t["wall_s"]) for s, t in timed["systems"].items()}
  assert np.isclose(timed["ratio"]["ratio_hybrid"]["mean"], wall[chosen] / wall["hybrid"])
  assert "Latency at one question per document" in (workdir / "report.md").read_text()


def test_the_long_bar_grades_the_paging_reader_chosen_on_validation(finished):
  config, workdir = finished
  summary = json.loads((workdir / "summary.json").read_text())
  bar, iv = summary["bar"], summary["intervals"]
  val = [json.loads(line) for line in (workdir / "validation.jsonl").read_text().splitlines()]
  scores = {r: arms.validation_score(val, r, config.bar.coverage) for r in ("paged", "hybrid")}
  assert bar["validation_f1_at_coverage"] == scores and scores[bar["chosen"]] == max(scores.values())
  test = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  f1 = lambda s: np.array([metrics.token_f1(r["answers"][s], r["gold_answer"]) for r in test if r["answerable"]])
  for r in ("paged", "hybrid"):   # reader - share x oracle, paired over the answerable questions
    assert np.isclose(iv[f"f1_raw/{r}-oracle_share"]["diff"], np.mean(f1(r) - config.bar.oracle_share * f1("oracle")),
                      rtol=0, atol=1e-12)
  report = (workdir / "report.md").read_text().split("\n## The long-document bar\n")[1]
  met = {True: "met", False: "not met", None: "n/a"}
  for part, key, _, how in long_bar.parts(bar["declared"], bar["chosen"], summary["text_buffer"]["chosen"]):
    graded = long_bar.grade(iv.get(key), how, config.bar.f1_margin)
    assert f"| {figures.diff_text(iv, key, 3)} | {met[graded]} |" in report, part
  assert f"{bar['chosen']}: >= 5x lower latency" in report


def _copy_run(workdir, to, change):
  """The run's config and answers in `to`, each test and validation row passed through `change`."""
  to.mkdir()
  (to / "config.json").write_bytes((workdir / "config.json").read_bytes())
  for name in ("predictions.jsonl", "validation.jsonl"):
    rows = [change(json.loads(line)) for line in (workdir / name).read_text().splitlines()]
    (to / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
  return to


def _as_retrieval(row):
  """A test or validation row whose hybrid answered as its retrieval did."""
  for k in ("answers", "confidence"):
    row[k]["hybrid"] = row[k]["retrieval"]
  return row


def test_compare_pairs_one_system_of_two_runs_as_a_run_pairs_two_of_its_systems(finished, tmp_path, capsys):
  """Run B: run A with retrieval's answers and confidences as its hybrid's, in both splits. A's hybrid
  minus B's is then A's hybrid minus A's retrieval, interval for interval as A's summary holds it
  (B's threshold chosen on B's validation rows); a run against itself differs by zero."""
  from launch import main

  _, workdir = finished
  intervals = json.loads((workdir / "summary.json").read_text())["intervals"]

  other = _copy_run(workdir, tmp_path / "b", _as_retrieval)
  out = tmp_path / "pair.json"
  assert main.main(["compare", str(workdir), str(other), "--system", "hybrid", "--out", str(out)]) == 0
  result = json.loads(out.read_text())
  assert result["differences"] == {k.removesuffix("/hybrid-retrieval"): v for k, v in intervals.items()
                                   if k.endswith("/hybrid-retrieval")}
  assert len(result["differences"]) == 2 + len(json.loads((workdir / "config.json").read_text())["eval"]["coverages"])
  printed = capsys.readouterr().out
  d = result["differences"]["f1_raw"]
  assert f"A - B f1_raw: {d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]" in printed
  same = pairs.paired_runs(workdir, workdir, "paged")["differences"]
  assert all(v["diff"] == 0 for v in same.values() if v is not None)


def test_compare_refuses_runs_that_do_not_pair_in_one_line(finished, tmp_path, capsys):
  from launch import main

  _, workdir = finished

  def reworded(row):
    row["question"] = row["question"] + " (reworded)" if row["id"].endswith("3") else row["question"]
    return row

  other = _copy_run(workdir, tmp_path / "b", reworded)
  assert main.main(["compare", str(workdir), str(other), "--system", "hybrid"]) == 2
  assert "answered different test questions" in capsys.readouterr().err
  assert main.main(["compare", str(workdir), str(workdir), "--system", "pager"]) == 2
  assert "has no answers of 'pager'; its systems: text_buffer_first" in capsys.readouterr().err
  assert main.main(["compare", str(workdir), str(tmp_path), "--system", "hybrid"]) == 2
  assert "config.json not found" in capsys.readouterr().err


def _reseeded(workdir, to, seed, change=lambda row: row, **fields):
  """`_copy_run` with the config's training seed (and any other `section.field`) set."""
  run = _copy_run(workdir, to, change)
  config = json.loads((run / "config.json").read_text())
  for key, value in {"train.seed": seed, **fields}.items():
    section, field = key.split(".")
    config[section][field] = value
  (run / "config.json").write_text(json.dumps(config))
  return run


def test_seeds_grades_a_system_against_another_seed_by_seed_and_over_seeds(finished, tmp_path, capsys):
  """Three runs of one design: the run, a copy at training seed 1 whose hybrid answered as its
  retrieval did, and one at seed 2 whose hybrid gave every answerable test question its gold
  answer. Seed by seed, hybrid - text_buffer is the run's own summary interval (text_buffer: the
  rule each run chose on validation; for seed 1, retrieval's interval), and 1 minus the text
  buffer's F1 for seed 2; over seeds, the observed margins are the means of the seeds'."""
  from launch import main

  _, workdir = finished
  intervals = json.loads((workdir / "summary.json").read_text())["intervals"]

  def gold(row):
    if "answers" in row and row.get("answerable", True) and not row.get("probe") and row["id"].startswith("test"):
      row["answers"]["hybrid"] = row["gold_answer"]
    return row

  runs = [workdir, _reseeded(workdir, tmp_path / "s1", 1, _as_retrieval), _reseeded(workdir, tmp_path / "s2", 2, gold)]
  out = tmp_path / "seeds.json"
  assert main.main(["seeds", *map(str, runs), "--system", "hybrid", "--against", "text_buffer", "--out", str(out)]) == 0
  result = json.loads(out.read_text())
  assert result["reference_shared_by_seeds"] and [r["training_seed"] for r in result["per_seed"]][1:] == [1, 2]
  own = lambda system: {k.removesuffix(f"/{system}-text_buffer"): v for k, v in intervals.items()
                        if k.endswith(f"/{system}-text_buffer")}
  per_seed = [r["differences"] for r in result["per_seed"]]
  assert per_seed[:2] == [own("hybrid"), own("retrieval")] and len(per_seed[0]) > 2
  buffer = result["per_seed"][2]["against"]
  rows = [r for r in map(json.loads, (workdir / "predictions.jsonl").read_text().splitlines())
          if not r.get("probe") and r.get("answerable", True)]
  text_f1 = np.mean([metrics.token_f1(r["answers"][buffer], r["gold_answer"]) for r in rows])
  assert per_seed[2]["f1_raw"]["diff"] == pytest.approx(1 - text_f1, abs=1e-12) and text_f1 < 1
  over = result["differences_over_seeds"]
  assert set(over) == set(per_seed[0])
  for name in over:
    assert over[name]["n_seeds"] == 3 and over[name]["ci"][0] <= over[name]["diff"] <= over[name]["ci"][1]
    assert over[name]["diff"] == pytest.approx(np.mean([d[name]["diff"] for d in per_seed]), abs=1e-12)
  printed = capsys.readouterr().out
  d = over["f1_raw"]
  assert f"hybrid - text_buffer over seeds, f1_raw: {d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]" in printed
  # The long-document bar's answer parts, graded over seeds: three runs that answered alike give
  # each part the run's own observed difference.
  same = pairs.seed_runs([workdir, _reseeded(workdir, tmp_path / "c1", 1), _reseeded(workdir, tmp_path / "c2", 2)],
                         "hybrid", "retrieval")["bar_over_seeds"]
  assert len(same["intervals"]) == len(same["targets"]) == 5
  for key, v in same["intervals"].items():
    assert v["diff"] == pytest.approx(intervals[key]["diff"], abs=1e-12), key
  assert "the long-document bar over seeds" in printed and len(result["bar_over_seeds"]["targets"]) == 5
  # The other system trained too: paired with the system seed by seed, not shared.
  trained = pairs.seed_runs(runs, "retrieval", "hybrid")
  assert not trained["reference_shared_by_seeds"]
  assert trained["differences_over_seeds"]["f1_raw"]["diff"] == pytest.approx(
      np.mean([r["differences"]["f1_raw"]["diff"] for r in trained["per_seed"]]), abs=1e-12)


def test_seeds_refuses_what_is_not_one_design_over_seeds_in_one_line(finished, tmp_path, capsys):
  from launch import main

  _, workdir = finished
  seed_1 = _reseeded(workdir, tmp_path / "s1", 1)
  refusals = [([workdir], "it needs two runs or more, got 1"),
              ([workdir, seed_1, _reseeded(workdir, tmp_path / "again", 1)], "share training seed 1"),
              ([workdir, _reseeded(workdir, tmp_path / "other", 3, **{"pager.slots_per_chunk": 99})],
               "differ in pager.slots_per_chunk"),
              ([workdir, seed_1, "--against", "pager"], "has no answers of 'pager'")]
  for runs, message in refusals:
    args = ["seeds", *map(str, runs), "--system", "hybrid"]
    assert main.main(args + ([] if "--against" in args else ["--against", "retrieval"])) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_grading_asks_the_whole_interval_on_the_declared_side_and_states_compression():
  inside, above, below = {"ci": [-0.01, 0.03]}, {"ci": [0.001, 0.03]}, {"ci": [-0.05, -0.001]}
  assert [long_bar.grade(i, long_bar.ABOVE, 0.02) for i in (inside, above, below)] == [False, True, False]
  assert [long_bar.grade(i, long_bar.BELOW, 0.02) for i in (inside, above, below)] == [False, False, True]
  assert [long_bar.grade(i, long_bar.NON_INFERIOR, 0.02) for i in (inside, above, below)] == [True, True, False]
  assert long_bar.grade(None, long_bar.ABOVE, 0.02) is None and long_bar.grade({"ci": None}, long_bar.ABOVE, 0) is None
  # Pages at 32x beside one chunk of text: 33 chunks of 96 tokens in 96 tokens of text and 96 soft tokens.
  c = config_lib.load("configs/latent_pager.py:long_32x_long_mean", [], experiment.validate)
  assert (long_bar.compression(c, "paged"), long_bar.compression(c, "hybrid")) == (32.0, 16.5)


def test_the_first_tokens_rule_answers_as_the_compared_text_buffer_does(finished):
  config, workdir = finished
  setup = pipeline.Setup(config, workdir)
  records = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  plain = setup.text_buffer(records)                      # `compare`'s text buffer: text_buffer.keep = ""
  answers, _ = plain.answer(records)
  assert answers == [r["answers"]["text_buffer_first"] for r in records]
  notes = setup.text_buffer(records, keep="bm25")
  notes.buffer_ids([r["document"] for r in records])
  first, last = notes.with_keep(""), notes.with_keep("last")
  for r in records:
    assert first.buffers[r["document"]] == plain.buffers[r["document"]]
    joined = setup.tokenizer.encode(notes.separator.join(notes.buffers[r["document"]])).ids
    assert last.buffers[r["document"]] == joined[-config.text_buffer.max_context_tokens:]
    kept = notes.context_ids(r, notes.buffers[r["document"]])
    assert len(kept) <= config.text_buffer.max_context_tokens


def test_oracle_reads_its_evidence_chunks_and_retrieval_the_best_scored(finished):
  config, workdir = finished
  setup = pipeline.Setup(config, workdir)
  ids = [json.loads(line)["id"] for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  test = {r["id"]: r for r in data.load(data.DataSpec.of(config), workdir, splits=("test",))["test"]}
  records = [test[i] for i in ids]
  c, budget = config.pages, config.text_buffer.max_context_tokens
  read = {reader: references.chunk_contexts(setup.tokenizer, records, reader, c.chunk_tokens, c.chunk_overlap,
                                            budget, config.text_buffer.separator) for reader in ("oracle", "retrieval")}
  for i, r in enumerate(records):
    enc = setup.tokenizer.encode(r["document"])
    spans = chunk_spans(len(enc.ids), c.chunk_tokens, c.chunk_overlap)
    held = retrieval.evidence_chunks(enc.offsets, r, c.chunk_tokens, c.chunk_overlap)
    assert bool(held) == r["answerable"]
    oracle = read["oracle"][i]
    assert 0 < len(oracle) <= budget and 0 < len(read["retrieval"][i]) <= budget
    if held:   # two chunks fit the budget: every evidence chunk is read
      assert oracle == retrieval.merged_ids(enc.ids, spans, held, [])
    else:
      assert oracle == read["retrieval"][i]
    texts = [r["document"][enc.offsets[s][0]:enc.offsets[e - 1][1]] for s, e in spans]
    best = int(np.argmax(retrieval.bm25_scores(texts, r["question"])))
    s, e = spans[best]
    assert any(read["retrieval"][i][k:k + e - s] == enc.ids[s:e] for k in range(len(read["retrieval"][i])))


def test_the_expanded_reader_reads_what_its_restored_scorer_picks(finished):
  config, workdir = finished
  history = json.loads((workdir / "expansion" / "history.json").read_text())
  assert history[0]["step"] == 0 and history[-1]["step"] > 0      # the untrained scorer is a candidate too
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  chooser, _ = expansion.fit(setup, config, workdir, splits, val_f1=None, restore_only=True)
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  test = {r["id"]: r for r in splits["test"]}
  records = [test[r["id"]] for r in rows]
  scores = chooser.scores(records)
  assert [len(s) for s in scores] == [len(setup.store.chunks(r["document"])) for r in records]
  got = references.read(setup, config, records, "expanded", setup.text_buffer(records), scores)
  assert got["answers"] == [r["answers"]["expanded"] for r in rows]
  # The iterative reader: the scorer's top chunk, then the second hop's best given that chunk.
  hop, history = expansion.fit(setup, config, workdir, splits, val_f1=None, restore_only=True, first=chooser)
  assert history[-1]["step"] > 0 and (workdir / expansion.SECOND_FOLDER / "history.json").is_file()
  tops = expansion.tops(scores)
  hop_scores = hop.scores(records, tops)
  second = references.iterative_scores(setup.tokenizer, config, records, scores, None, hop)
  again = references.read(setup, config, records, "iterative", setup.text_buffer(records), second)
  assert again["answers"] == [r["answers"]["iterative"] for r in rows]
  for first, h, s, top in zip(scores, hop_scores, second, tops):
    assert h[top] == -np.inf and np.isfinite(np.delete(h, top)).all()      # the top chunk is never a candidate
    order = np.argsort(-s, kind="stable")
    assert order[0] == top and order[1] == int(np.argmax(h))
  # The second hop's query: the question's tokens, then the top chunk's.
  batch = hop.features.batch(records[:2], firsts=tops[:2])
  for i, r in enumerate(records[:2]):
    asked = setup.tokenizer.encode(r["question"]).ids
    chunk = setup.store.chunks(r["document"])[tops[i]]
    n = min(len(asked) + len(chunk), hop.features.width)
    assert batch["question_mask"][i].sum() == n and not batch["page_mask"][i, tops[i]]
  # With the draft answer as the second query: the chunk BM25 matches best to the draft comes next.
  draft_config = config.copy_and_resolve_references()
  draft_config.expansion.second_query = "draft"
  second = references.iterative_scores(setup.tokenizer, draft_config, records, scores, got["answers"])
  for r, first, s, draft in zip(records, scores, second, got["answers"]):
    assert int(np.argmax(s)) == int(np.argmax(first))
    if draft.strip() and draft != config.data.abstain_answer:
      enc = setup.tokenizer.encode(r["document"])
      spans = chunk_spans(len(enc.ids), config.pages.chunk_tokens, config.pages.chunk_overlap)
      bm = retrieval.bm25_scores([r["document"][enc.offsets[a][0]:enc.offsets[b - 1][1]] for a, b in spans], draft)
      runner_up = int(np.argsort(-s, kind="stable")[1])
      assert bm[runner_up] == max(bm[i] for i in range(len(spans)) if i != int(np.argmax(first)))


def test_the_bridge_query_finds_the_chunk_that_names_the_top_chunks_entity():
  tokenizer = tok_lib.load_tokenizer("models/lm_base")
  filler = "The weather was mild and the harvest was good in every valley that year."
  document = " ".join(["Fabian Stone works for Corvin Systems.", filler, "Fabian Stone likes chess.", filler,
                       "Corvin Systems is headquartered in Vale Field.", filler])
  record = {"document": document, "question": "Where is the organisation that Fabian Stone works for headquartered?"}
  config = ml_collections.ConfigDict(dict(pages=dict(chunk_tokens=8, chunk_overlap=0),
                                          expansion=dict(second_query="bridge"), data=dict(abstain_answer="unknown")))
  enc = tokenizer.encode(document)
  spans = chunk_spans(len(enc.ids), 8, 0)
  texts = [document[enc.offsets[a][0]:enc.offsets[b - 1][1]] for a, b in spans]
  first = np.array([2.0 if "works for" in t else (1.0 if "chess" in t else 0.0) for t in texts])
  got = references.iterative_scores(tokenizer, config, [record], [first], None)[0]
  order = np.argsort(-got, kind="stable")
  assert "works for" in texts[order[0]] and "Corvin" in texts[order[1]] and "chess" not in texts[order[1]]
  assert "chess" in texts[np.argsort(-first, kind="stable")[1]]    # the first round alone reads the hobby second


def test_bridge_names_stand_beside_the_questions_name_and_replace_it():
  text = ("port. Fabian Stone works for Corvin Systems. Mosaic Holdings earns its living in fisheries. "
          "Friends say Fabian Stone is devoted to chess, as Lena Varga is. An old mill still rests")
  question = "Where is the organisation that Fabian Stone works for headquartered?"
  assert retrieval.bridge_names(question, text) == ["Corvin Systems", "Lena Varga"]
  assert retrieval.bridge_names(question, "Mosaic Holdings earns its living in fisheries.") == []
  assert retrieval.bridge_names("Where was Mara Okafor born?", "Mara Okafor was born.") == []
  assert (retrieval.substitute(question, "Corvin Systems")
          == "Where is the organisation that Corvin Systems works for headquartered?")


def test_the_entity_query_asks_the_first_scorer_of_each_bridge_name():
  tokenizer = tok_lib.load_tokenizer("models/lm_base")
  facts = ["Fabian Stone works for Corvin Systems.", "The harvest was good that year.",
           "Corvin Systems opened its doors in 1931.", "Corvin Systems is headquartered in Vale Field."]
  pad = lambda sentence: sentence + " the" * (12 - len(tokenizer.encode(sentence).ids))   # one chunk a sentence
  document = " ".join(map(pad, facts))
  question = "Where is the organisation that Fabian Stone works for headquartered?"
  records = [{"document": document, "question": question}, {"document": " ".join([pad(facts[1])] * 2), "question": question}]
  config = ml_collections.ConfigDict(dict(pages=dict(chunk_tokens=12, chunk_overlap=0),
                                          expansion=dict(second_query="entity"), data=dict(abstain_answer="unknown")))
  texts = [references.record_chunk_texts(tokenizer, config, r) for r in records]

  class Scorer:   # a chunk scores by the question's words it shares, the question's name counting most
    asked = []

    def scores(self, rows):
      self.asked += [r["question"] for r in rows]
      return [np.array([sum(w in t.lower() for w in r["question"].lower().strip("?").split())
                        + 5.0 * sum(n in t for n in retrieval.NAME.findall(r["question"]))
                        for t in references.record_chunk_texts(tokenizer, config, r)]) for r in rows]

  first = [np.array([3.0 if "works for" in t else 0.0 for t in ts]) for ts in texts]
  got = references.iterative_scores(tokenizer, config, records, first, None, Scorer())
  assert Scorer.asked == ["Where is the organisation that Corvin Systems works for headquartered?"]
  order = np.argsort(-got[0], kind="stable")
  assert len(texts[0]) == 4 and list(order[:2]) == [0, 3]      # the fact, then its bridge's head office
  # No name beside the question's in the top chunk: the first scorer's order.
  assert list(np.argsort(-got[1], kind="stable")) == list(np.argsort(-first[1], kind="stable"))


def test_the_extracted_reader_fills_its_budget_with_named_sentences_in_the_scorers_order():
  tokenizer = tok_lib.load_tokenizer("models/lm_base")
  facts = ["Fabian Stone works for Corvin Systems.", "The harvest was good that year.",
           "Mosaic Holdings earns its living in fisheries.", "Corvin Systems is headquartered in Vale Field.",
           "Fabian Stone was born in Alder Falls."]
  pad = lambda sentence: sentence + " " + " ".join(["The", "mill", "was", "old."] * 4)
  document = " ".join(map(pad, facts))
  record = {"document": document, "question": "Where is the organisation that Fabian Stone works for headquartered?",
            "evidence_char_start": [document.index(facts[0]), document.index(facts[3])]}
  record["evidence_char_end"] = [s + len(f) for s, f in zip(record["evidence_char_start"], (facts[0], facts[3]))]
  config = ml_collections.ConfigDict(dict(pages=dict(chunk_tokens=32, chunk_overlap=0),
                                          text_buffer=dict(max_context_tokens=64, separator="")))
  texts = references.record_chunk_texts(tokenizer, config, record)
  top = next(i for i, t in enumerate(texts) if facts[0] in t)
  scores = np.array([5.0 if i == top else (2.0 if facts[4] in t else 1.0) for i, t in enumerate(texts)])
  spans = references.extracted_spans(tokenizer, config, record, scores)
  read = [document[a:b] for a, b in spans]
  # The question's name and the bridge beside it in the top chunk; no filler, no other organisation.
  assert read == [facts[0], facts[3], facts[4]] and spans == sorted(spans)
  context = references.extracted_contexts(tokenizer, config, [record], [scores])[0]
  assert tokenizer.decode(context) == tokenizer.decode(tokenizer.encode(" ".join(read)).ids)
  # A smaller budget keeps the sentences of the better-ranked chunks first.
  small = config.copy_and_resolve_references()
  small.text_buffer.max_context_tokens = len(tokenizer.encode(facts[0] + " " + facts[4]).ids)
  assert [document[a:b] for a, b in references.extracted_spans(tokenizer, small, record, scores)] == [facts[0], facts[4]]
  record["answerable"], record["task_type"] = True, "multi_hop"
  shares = references.evidence_read(tokenizer, [record], 32, 0, 64, "", {"extracted": [scores]}, config)
  assert shares["extracted"] == 1.0
  shares = references.evidence_read(tokenizer, [record], 32, 0, 64, "", {"extracted": [scores]}, small)
  assert shares["extracted"] == 0.0


def test_second_round_ranks_the_first_rounds_best_then_the_second_score():
  first = np.array([0.2, 0.9, 0.5, 0.1])
  order = lambda s: list(np.argsort(-s, kind="stable"))
  assert order(retrieval.second_round(first, np.array([0.0, 0.0, 0.0, 3.0]))) == [1, 3, 2, 0]
  assert order(retrieval.second_round(first, np.zeros(4))) == [1, 2, 0, 3]          # no match: the first round's order
  assert order(retrieval.second_round(first, np.array([5.0, 9.0, 5.0, 0.0]))) == [1, 2, 0, 3]   # tie: by the first
  assert retrieval.select(retrieval.second_round(first, np.array([0.0, 0.0, 0.0, 3.0])), [4] * 4, 8) == [1, 3]


def test_first_questions_keep_each_documents_first_ones_in_order():
  records = [{"document": d} for d in "aaabbcaab"]
  assert hybrid.first_questions(records, 1) == [0, 3, 5]
  assert hybrid.first_questions(records, 2) == [0, 1, 3, 4, 5]
  assert hybrid.first_questions(records, 0) == list(range(9))


def test_picks_read_the_best_chunks_as_text_then_the_next_as_pages():
  scores = np.array([0.1, 3.0, 2.0, 3.0, 0.5, 2.5])
  assert hybrid.picks(scores, 1, 2) == ([1], [3, 5])          # a tie goes to the earlier chunk
  assert hybrid.picks(scores, 0, 3) == ([], [1, 3, 5])
  assert hybrid.picks(scores, 2, 10) == ([1, 3], [0, 2, 4, 5])  # a short document: every chunk read


def test_the_paging_readers_read_the_pages_of_their_picks(finished):
  config, workdir = finished
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  chooser, _ = expansion.fit(setup, config, workdir, splits, val_f1=None, restore_only=True)
  records = {s: [r for r in recs if not r.get("probe")] for s, recs in splits.items()}
  scored = {s: chooser.scores(recs) for s, recs in records.items()}
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  assert [r["id"] for r in rows] == [r["id"] for r in records["test"]]
  c = config.pages
  for reader in hybrid.SCORED:   # the tree reader: tests/test_paging_tree.py
    text, paged = hybrid.layout(config, reader)
    docs, prompts = hybrid.inputs(setup, config, reader, records["test"], scored["test"])
    for r, s, items, prompt in zip(records["test"], scored["test"], docs.items, prompts):
      chunks = setup.store.chunks(r["document"])
      order = np.argsort(-s, kind="stable")
      assert items == [chunks[i] for i in sorted(order[text:text + paged])]   # pages in document order
      if not text:
        assert prompt == config.prompts.pager.format(question=r["question"])
        continue
      enc = setup.tokenizer.encode(r["document"])
      s0, e0 = chunk_spans(len(enc.ids), c.chunk_tokens, c.chunk_overlap)[order[0]]
      best = r["document"][enc.offsets[s0][0]:enc.offsets[e0 - 1][1]]
      assert prompt == config.prompts.answer.format(context=best, question=r["question"])
    trained = hybrid.fit(setup, config, workdir, reader, splits, scored, restore_only=True)
    assert trained["history"][-1]["step"] > 0
    got = hybrid.answer(setup, config, reader, trained, records["test"], scored["test"])
    assert got["answers"] == [r["answers"][reader] for r in rows]
    assert np.allclose(got["confidence"], [r["confidence"][reader] for r in rows], rtol=0, atol=1e-5)


def test_references_mode_needs_a_rule(tmp_path):
  with pytest.raises(config_lib.ConfigError, match=r"config\.references\.keep"):
    config_lib.load("configs/latent_pager.py:smoke", ["--config.mode=references"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"config\.references\.readers"):
    config_lib.load("configs/latent_pager.py:long", ["--config.references.readers=('bm25',)"], experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"'iterative' reads the draft answers of 'expanded'"):
    config_lib.load("configs/latent_pager.py:long", ["--config.references.readers=('iterative','expanded')"],
                    experiment.validate)
  with pytest.raises(config_lib.ConfigError, match=r"config\.expansion\.hybrid_page_chunks.*window of 256"):
    config_lib.load("configs/latent_pager.py:long", ["--config.expansion.hybrid_page_chunks=20"], experiment.validate)


def test_state_keys_are_the_lms_states_of_each_chunk_read_alone(finished):
  config, workdir = finished
  setup = pipeline.Setup(config, workdir)
  records = data.load(data.DataSpec.of(config), workdir, splits=("test",))["test"][:2]
  states = config.copy_and_resolve_references()
  states.expansion.index, states.expansion.key_layers = "states", (0, 2)
  features = expansion.Features(setup, states, expansion.ExpansionSpec.of(states), records)
  batch = features.batch(records)
  d = setup.lm.cfg.hidden_size
  for i, r in enumerate(records):
    chunks = setup.store.chunks(r["document"])
    assert batch["page_mask"][i].sum() == len(chunks)
    last = chunks[-1]
    ids = np.full((1, config.pages.chunk_tokens), setup.pad, np.int32)
    ids[0, :len(last)] = last
    _, want = setup.lm(ids, np.arange(ids.shape[1])[None] < len(last), hidden_layers=(0, 2))
    got = batch["pages"][i, len(chunks) - 1]
    assert got.shape == (config.pages.chunk_tokens, 2 * d)
    assert batch["key_mask"][i, len(chunks) - 1].sum() == len(last) and not batch["key_mask"][i, len(chunks):].any()
    np.testing.assert_allclose(got[:len(last)], np.concatenate([np.asarray(w[0]) for w in want], -1)[:len(last)],
                               rtol=1e-3, atol=1e-3)   # kept in float16 (11 bits), another program
