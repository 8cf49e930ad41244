"""Declining questions about names a document never mentions (`jaxlab.paging.grounding`)."""

import numpy as np

from jaxlab.data import long_doc_qa
from jaxlab.paging import grounding


def test_names_are_the_capitalised_runs_after_the_first_word():
  assert grounding.names("Where does Quinn Holm live?") == ["Quinn Holm"]
  assert grounding.names("In which country is Alder Hollow?") == ["Alder Hollow"]
  assert grounding.names("Which organisation employs the founder of Obsidian Partners?") == ["Obsidian Partners"]
  assert grounding.names("Where?") == [] and grounding.names("what is it") == []


def test_every_system_declines_where_a_name_is_unknown_and_nowhere_else():
  records = [{"question": "Where does Quinn Holm live?", "document": "Quinn Holm lives in Estmark."},
             {"question": "Where does Ada Stone live?", "document": "Quinn Holm lives in Estmark."}]
  unknown = grounding.unknown_names(records)
  assert unknown.tolist() == [False, True]
  answered = {"text_buffer": {"answers": ["Estmark", "Estmark"], "confidence": [0.5, 0.25]},
              "latent_pager": {"answers": ["Estmark", "x"], "confidence": None},
              "full_context": {"answers": [None, None], "confidence": [None, None]}}   # did not fit
  out = grounding.decline(answered, unknown)
  assert out["text_buffer"]["confidence"] == [0.5, -np.inf]
  assert out["full_context"]["confidence"] == [None, None]
  assert out["text_buffer"]["answers"] == ["Estmark", "Estmark"]   # still scored before abstaining
  assert out["latent_pager"]["confidence"] is None


def test_no_answerable_question_of_the_world_is_declined_in_any_wording():
  """The check reads names only: on the world's documents it never fires on a question the
  document answers, in the training wordings and the held-out one, and it does fire on questions
  about entities the document never names."""
  fired = {True: 0, False: 0}
  for wording in ("train", "train_b", "held_out"):
    cfg = long_doc_qa.LongDocQAConfig(name="t", min_tokens=140, max_tokens=590, multi_hop_fraction=0.5,
                                      chunk_tokens=96, chunk_overlap=16, unanswerable_fraction=0.5,
                                      question_wording=wording)
    records = list(long_doc_qa.generate_qa(cfg, "validation", 60))
    unknown = grounding.unknown_names(records)
    for r, u in zip(records, unknown):
      fired[r["answerable"]] += int(u)
  assert fired[True] == 0
  assert fired[False] > 0
