"""Long documents with planted evidence, and their questions.

A document is a stream of passages: distractor passages (true facts about other entities of the
same world, including the question's own relations) and neutral filler, with the one or two
evidence sentences inserted at passage boundaries. Two knobs make the context-rot grid:

- `distractor_ratio`: the share of non-evidence words in distractor passages rather than filler;
- `horizon`: how far the (first-hop) evidence sentence lies from the document end, as a fraction of
  the document (0 = at the end, 1 = at the start).

Lengths are counted in whitespace-separated words, a stated approximation of tokens (a Qwen3 BPE
token count runs about 1.3x higher on this prose). Multi-hop evidence sentences are kept more than
`chunk_tokens` words apart, so no chunk of that size (with any overlap) contains both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxlab.data import lexicon as lx
from jaxlab.data import world as W

TASK_TYPES = ("single_fact", "multi_hop")


@dataclasses.dataclass(frozen=True)
class DocSpec:
  """What one document should look like; every field is a knob of the builder configs."""

  split: str = "train"
  num_tokens: int = 2000
  task_type: str = "single_fact"
  distractor_ratio: float = 0.5
  horizon: float = 0.5
  chunk_tokens: int = 1024  # multi-hop evidence lies farther apart than this; 0 disables the rule
  question_wording: str = "train"  # the question's template table, a key of lexicon.QUESTION_WORDINGS


@dataclasses.dataclass
class Sentence:
  text: str
  kind: str  # "evidence" | "distractor" | "filler"
  fact: W.Fact | None = None


@dataclasses.dataclass
class Document:
  """A generated example: the published record fields plus the sentence-level truth behind them."""

  record: dict
  passages: list[list[Sentence]]
  evidence: list[W.Fact] = dataclasses.field(default_factory=list)  # the question's facts, in hop order


def chunk_spans(num_words: int, chunk_tokens: int, overlap: int = 0) -> list[tuple[int, int]]:
  """Word spans [start, end) of overlapping chunks, as the latent pager chunks a document."""
  stride = chunk_tokens - overlap
  if stride <= 0:
    raise ValueError(f"overlap ({overlap}) must be smaller than chunk_tokens ({chunk_tokens})")
  starts = range(0, max(num_words - overlap, 1), stride)
  return [(s, min(s + chunk_tokens, num_words)) for s in starts]


def min_tokens_for(task_type: str, chunk_tokens: int) -> int:
  """Multi-hop needs room for two evidence sentences more than a chunk apart."""
  return 2 * chunk_tokens + 128 if task_type == "multi_hop" and chunk_tokens > 0 else 0


def question_text(subject: str, relations, wording: str = "train") -> str:
  """The question about `subject` along one relation or a two-hop chain, in `wording`'s templates."""
  if wording not in lx.QUESTION_WORDINGS:
    raise ValueError(f"question_wording must be one of {tuple(lx.QUESTION_WORDINGS)}, got {wording!r}")
  single, multi = lx.QUESTION_WORDINGS[wording]
  relations = tuple(relations)
  return (single[relations[0]] if len(relations) == 1 else multi[relations]).format(s=subject)


def _question(rng: np.random.Generator, world: W.World, task_type: str, wording: str = "train"):
  """(question, gold answer, evidence facts in hop order). The draws never depend on `wording`:
  relations and chains are drawn from the training tables, whose keys every wording shares."""
  if task_type == "single_fact":
    subject = world.subjects()[rng.integers(len(world.subjects()))]
    rels = [r for (s, r) in world.facts if s == subject]
    fact = world.fact(subject, rels[rng.integers(len(rels))])
    return question_text(subject, (fact.relation,), wording), fact.object, [fact]
  chains = list(lx.MULTI_QUESTIONS)
  first_rel, second_rel = chains[rng.integers(len(chains))]
  candidates = [s for (s, r) in world.facts if r == first_rel]
  subject = candidates[rng.integers(len(candidates))]
  hop1 = world.fact(subject, first_rel)
  hop2 = world.fact(hop1.object, second_rel)
  return question_text(subject, (first_rel, second_rel), wording), hop2.object, [hop1, hop2]


def stated_facts(passages: list[list[Sentence]]) -> list[W.Fact]:
  """Every fact a document states (evidence and distractors), in reading order, each once."""
  seen = {}
  for passage in passages:
    for sent in passage:
      if sent.fact is not None:
        seen.setdefault((sent.fact.subject, sent.fact.relation), sent.fact)
  return list(seen.values())


def question_pool(doc: Document, wording: str = "train") -> list[tuple[str, str, str]]:
  """Every (question, answer, task type) that `doc` answers by itself, each once, in reading order:
  a single-fact question per stated fact, then a two-hop question per stated chain, in `wording`'s
  templates (a training wording: the pool makes training questions).

  The pool is chosen in the canonical wording whatever `wording` is, so entry n asks the same thing
  in every wording. The world is consistent (one value per subject and relation), so each answer
  is unique."""
  return [(question_text(s, rels, wording), answer, task) for s, rels, answer, task in _asked(doc)]


def _asked(doc: Document) -> list[tuple[str, tuple[str, ...], str, str]]:
  """`question_pool`'s entries as (subject, relations, answer, task type)."""
  facts = stated_facts(doc.passages)
  by_subject = {}
  for f in facts:
    by_subject.setdefault(f.subject, []).append(f)
  asked = [(f.subject, (f.relation,), f.object, "single_fact") for f in facts]
  asked += [(f.subject, (f.relation, g.relation), g.object, "multi_hop")
            for f in facts for g in by_subject.get(f.object, []) if (f.relation, g.relation) in lx.MULTI_QUESTIONS]
  first = {}
  for s, rels, answer, task in asked:
    first.setdefault((question_text(s, rels), answer, task), (s, rels, answer, task))
  return list(first.values())


def pool_evidence(doc: Document) -> list[dict]:
  """For each entry of `question_pool`, its evidence fields as a record holds them (one sentence per
  hop, in hop order, with word and character spans in `doc.record["document"]`), or empty fields
  where a hop's fact is stated more than once (no single sentence is the evidence, so no chunk
  label is exact). The planted evidence of the document's own question is stated once."""
  statements = {}
  for sent, span in sentence_spans(doc.passages):
    if sent.fact is not None:
      statements.setdefault((sent.fact.subject, sent.fact.relation), []).append((sent.text, span))
  stated = {(f.subject, f.relation): f for f in stated_facts(doc.passages)}
  out = []
  for subject, relations, _, _ in _asked(doc):
    hops, obj = [], subject
    for rel in relations:
      hops.append(statements[(obj, rel)])
      obj = stated[(obj, rel)].object
    sentences = [h[0] for h in hops] if all(len(h) == 1 for h in hops) else []
    out.append({"evidence": [t for t, _ in sentences],
                **{f"evidence_{k}": [span[i] for _, span in sentences]
                   for i, k in enumerate(("word_start", "word_end", "char_start", "char_end"))}})
  return out


def window_questions(rng: np.random.Generator, doc: Document, n: int,
                     wordings: list[str] | None = None) -> list[tuple[str, str]]:
  """Up to `n` (question, answer) pairs that `doc` answers by itself: its own question first, then
  others drawn at random from `question_pool`. With `wordings`, pair k is worded in `wordings[k]`
  (the same pairs are drawn whatever the wordings: they are chosen in the canonical wording)."""
  own = (doc.record["question"], doc.record["gold_answer"])
  pool = question_pool(doc)
  others = [q for q in dict.fromkeys((q, a) for q, a, _ in pool) if q[0] != own[0]]
  pairs = [own] + [others[i] for i in rng.permutation(len(others))[:n - 1]]
  if wordings is None:
    return pairs
  entry = {}
  for i, (q, _, _) in enumerate(pool):
    entry.setdefault(q, i)
  own_relations = [f.relation for f in doc.evidence]
  pools = {w: question_pool(doc, w) for w in dict.fromkeys(wordings)}
  return [(question_text(doc.evidence[0].subject, own_relations, w) if k == 0 else pools[w][entry[q]][0], a)
          for k, ((q, a), w) in enumerate(zip(pairs, wordings))]


# The relations of each kind of entity, and the kind of entity each relation points to.
KIND_RELATIONS = {"person": W.PERSON_RELATIONS, "org": W.ORG_RELATIONS, "place": W.PLACE_RELATIONS}
OBJECT_KIND = {"born_in": "place", "lives_in": "place", "works_for": "org", "headquartered_in": "place",
               "founded_by": "person"}


def mentioned_entities(doc: Document) -> dict[str, str]:
  """Entity name -> kind ("person", "org", "place") of every entity the document states a fact about
  or names as a fact's object."""
  kind_of = {r: k for k, rels in KIND_RELATIONS.items() for r in rels}
  out = {}
  for f in stated_facts(doc.passages):
    out.setdefault(f.subject, kind_of[f.relation])
    if f.relation in OBJECT_KIND:
      out.setdefault(f.object, OBJECT_KIND[f.relation])
  return out


def unanswerable_question(rng: np.random.Generator, doc: Document, split: str, task_type: str,
                          wording: str = "train") -> dict:
  """A question of the form `task_type` that `doc` cannot answer, with what makes it so.

  Half the time (or when the document leaves no gap) it asks about an entity of the split that
  the document never names ("absent_entity"); otherwise about an entity the document names and a
  relation it never states for it ("absent_relation"; for two hops, the first hop is stated and
  the second is not, or the first is missing). Returns {"question", "kind", "subject", "relations"};
  `wording` sets only how the question reads.
  """
  stated = {(f.subject, f.relation): f for f in stated_facts(doc.passages)}
  entities = mentioned_entities(doc)
  if task_type == "single_fact":
    gaps = [(s, (r,)) for s, k in entities.items() for r in KIND_RELATIONS[k] if (s, r) not in stated]
  else:
    gaps = []
    for s, k in entities.items():
      for (r1, r2) in lx.MULTI_QUESTIONS:
        if r1 not in KIND_RELATIONS[k]:
          continue
        first = stated.get((s, r1))
        if first is None or (first.object, r2) not in stated:
          gaps.append((s, (r1, r2)))
  if gaps and rng.random() < 0.5:
    subject, relations = gaps[rng.integers(len(gaps))]
    kind = "absent_relation"
  else:
    chains = list(lx.SINGLE_QUESTIONS) if task_type == "single_fact" else list(lx.MULTI_QUESTIONS)
    kind_of = {r: k for k, rels in KIND_RELATIONS.items() for r in rels}
    rel = chains[rng.integers(len(chains))]
    relations = (rel,) if task_type == "single_fact" else rel
    names = [n for n in W.name_pools(split)[kind_of[relations[0]]] if n not in doc.record["document"]]
    subject, kind = names[rng.integers(len(names))], "absent_entity"
  return {"question": question_text(subject, relations, wording), "kind": kind, "subject": subject,
          "relations": list(relations)}


def _passage(rng, world: W.World, distractor: bool, excluded: set) -> list[Sentence]:
  """A distractor passage states 2-4 facts about one entity (never an evidence fact, so the evidence
  sentence stays the only place the answer is stated); a filler passage is 3-6 neutral sentences."""
  if distractor:
    subjects = world.subjects()
    for _ in range(8):  # an entity whose every fact is excluded is rare; retry a few times
      subject = subjects[rng.integers(len(subjects))]
      facts = [f for (s, r), f in world.facts.items() if s == subject and (s, r) not in excluded]
      if facts:
        k = min(len(facts), int(rng.integers(2, 5)))
        chosen = [facts[i] for i in rng.permutation(len(facts))[:k]]
        return [Sentence(W.render_fact(rng, f), "distractor", f) for f in chosen]
  return [Sentence(W.filler_sentence(rng), "filler") for _ in range(int(rng.integers(3, 7)))]


def _words(passage: list[Sentence]) -> int:
  return sum(len(s.text.split()) for s in passage)


def make_document(rng: np.random.Generator, spec: DocSpec, doc_id: str) -> Document:
  """Generate one document, its question and the positions of its evidence."""
  if spec.task_type not in TASK_TYPES:
    raise ValueError(f"task_type must be one of {TASK_TYPES}, got {spec.task_type!r}")
  if not 0.0 <= spec.horizon <= 1.0 or not 0.0 <= spec.distractor_ratio <= 1.0:
    raise ValueError(f"horizon and distractor_ratio must lie in [0, 1], got {spec}")
  n = spec.num_tokens
  world = W.make_world(rng, spec.split, n_people=max(8, n // 150), n_places=max(6, n // 400),
             n_orgs=max(6, n // 400))
  question, answer, evidence = _question(rng, world, spec.task_type, spec.question_wording)
  excluded = {(f.subject, f.relation) for f in evidence}
  ev_sents = [Sentence(W.render_fact(rng, f), "evidence", f) for f in evidence]
  budget = n - sum(len(s.text.split()) for s in ev_sents)

  # The ratio is a share of words: distractor and filler passages differ in length, so each passage
  # goes to whichever kind is behind its target share (with jitter, so the pattern is not periodic).
  body, total, distracting = [], 0, 0
  while total < budget:
    behind = distracting - spec.distractor_ratio * total + rng.normal(0.0, 60.0) < 0
    is_distractor = spec.distractor_ratio == 1.0 or (spec.distractor_ratio > 0.0 and behind)
    body.append(_passage(rng, world, is_distractor, excluded))
    total += _words(body[-1])
    distracting += _words(body[-1]) if body[-1][0].kind == "distractor" else 0
  offsets = np.cumsum([0] + [_words(p) for p in body])  # word offset of each passage boundary

  # Hop 1 goes to the boundary nearest the horizon; hop 2 (multi-hop) to a random boundary far enough
  # away from it, counting the words of both evidence sentences so the final gap is still > chunk.
  slots = [int(np.argmin(np.abs(offsets - (1.0 - spec.horizon) * total)))]
  if len(ev_sents) == 2:
    gap = spec.chunk_tokens + sum(len(s.text.split()) for s in ev_sents) if spec.chunk_tokens > 0 else 0
    far = np.flatnonzero(np.abs(offsets - offsets[slots[0]]) > gap)
    far = far if far.size or gap else np.arange(len(offsets))  # a window smaller than two passages
    if far.size == 0:
      raise ValueError(f"{n} words leave no room for multi-hop evidence {spec.chunk_tokens} words apart")
    slots.append(int(far[rng.integers(far.size)]))
  passages = list(body)
  for slot, sent in sorted(zip(slots, ev_sents), key=lambda t: -t[0]):  # insert from the back
    passages.insert(slot, [sent])
  return Document(_record(passages, ev_sents, doc_id, question, answer, spec), passages, evidence)


def sentence_spans(passages: list[list[Sentence]]) -> list[tuple[Sentence, tuple[int, int, int, int]]]:
  """Every sentence with its (word start, word end, char start, char end) in the document the
  passages join into (`_record`'s text)."""
  out, word, char = [], 0, 0
  for pi, passage in enumerate(passages):
    for si, sent in enumerate(passage):
      char += len(_separator(pi, si))
      nw = len(sent.text.split())
      out.append((sent, (word, word + nw, char, char + len(sent.text))))
      word += nw
      char += len(sent.text)
  return out


def _separator(pi: int, si: int) -> str:
  return ("\n\n" if si == 0 else " ") if pi or si else ""  # passages are blank-line separated


def _record(passages, ev_sents, doc_id, question, answer, spec: DocSpec) -> dict:
  """Join passages into text and locate the evidence sentences in words and characters."""
  located = sentence_spans(passages)
  document = "".join(_separator(pi, si) + sent.text for pi, passage in enumerate(passages)
                     for si, sent in enumerate(passage))
  word = located[-1][1][1] if located else 0
  spans = {id(sent): span for sent, span in located}
  pos = [spans[id(s)] for s in ev_sents]
  return {
    "id": doc_id, "document": document, "question": question, "gold_answer": answer,
    "task_type": spec.task_type,
    "evidence": [s.text for s in ev_sents],
    "evidence_word_start": [p[0] for p in pos], "evidence_word_end": [p[1] for p in pos],
    "evidence_char_start": [p[2] for p in pos], "evidence_char_end": [p[3] for p in pos],
    # float32 values, as TFDS stores them, so a record read back equals the one generated.
    "num_tokens": word,
    "horizon": float(np.float32(spec.horizon)), "distractor_ratio": float(np.float32(spec.distractor_ratio)),
  }
