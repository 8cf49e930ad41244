"""A procedural world of people, places and organisations with consistent facts.

Each document gets its own small world drawn from a NumPy Generator, so facts never need to be
memorised across documents: they must be read. Entity names are combinations of lexicon words,
and every combination belongs to exactly one split (`entity_split`), so validation and test
documents only mention entities that training never saw.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxlab.data import lexicon as lx

SPLITS = ("train", "validation", "test")

PERSON_RELATIONS = ("born_in", "lives_in", "works_for", "profession", "hobby")
ORG_RELATIONS = ("headquartered_in", "founded_by", "founded_year", "industry")
PLACE_RELATIONS = ("country",)


def entity_split(i: int, j: int) -> str:
  """The split that owns the name built from word indices (i, j): 10% test, 10% validation.

  The mixing constant makes both words vary across buckets, so every split still sees every word."""
  bucket = (i * 3 + j * 7) % 10
  return "test" if bucket == 0 else "validation" if bucket == 1 else "train"


def _pool(first: list[str], second: list[str], split: str) -> list[str]:
  return [f"{a} {b}" for i, a in enumerate(first) for j, b in enumerate(second) if entity_split(i, j) == split]


_POOLS: dict[str, dict[str, list[str]]] = {}


def name_pools(split: str) -> dict[str, list[str]]:
  """People, place and organisation names owned by `split` (cached: pools are fixed lists)."""
  if split not in SPLITS:
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
  if split not in _POOLS:
    _POOLS[split] = {"person": _pool(lx.FIRST_NAMES, lx.LAST_NAMES, split),
             "place": _pool(lx.PLACE_STEMS, lx.PLACE_KINDS, split),
             "org": _pool(lx.ORG_STEMS, lx.ORG_KINDS, split)}
  return _POOLS[split]


@dataclasses.dataclass(frozen=True)
class Fact:
  relation: str
  subject: str
  object: str


@dataclasses.dataclass
class World:
  """Entities of one document and their facts, keyed (subject, relation) -> Fact."""

  people: list[str]
  places: list[str]
  orgs: list[str]
  facts: dict[tuple[str, str], Fact]

  def fact(self, subject: str, relation: str) -> Fact:
    return self.facts[(subject, relation)]

  def subjects(self) -> list[str]:
    return self.people + self.orgs + self.places


def make_world(rng: np.random.Generator, split: str, n_people: int, n_places: int, n_orgs: int) -> World:
  """Sample entities without replacement from the split's pools and give each one value per relation,
  so the world is consistent: any sentence about it, evidence or distractor, agrees with the others."""
  pools = name_pools(split)
  pick = lambda kind, n: [str(x) for x in rng.choice(pools[kind], size=min(n, len(pools[kind])), replace=False)]
  people, places, orgs = pick("person", n_people), pick("place", n_places), pick("org", n_orgs)
  choose = lambda seq: str(seq[rng.integers(len(seq))])
  facts: dict[tuple[str, str], Fact] = {}

  def add(rel, s, o):
    facts[(s, rel)] = Fact(rel, s, o)

  for p in people:
    add("born_in", p, choose(places))
    add("lives_in", p, choose(places))
    add("works_for", p, choose(orgs))
    add("profession", p, choose(lx.PROFESSIONS))
    add("hobby", p, choose(lx.HOBBIES))
  for o in orgs:
    add("headquartered_in", o, choose(places))
    add("founded_by", o, choose(people))
    add("founded_year", o, str(int(rng.integers(1850, 2021))))
    add("industry", o, choose(lx.INDUSTRIES))
  for c in places:
    add("country", c, choose(lx.COUNTRIES))
  return World(people, places, orgs, facts)


def render_fact(rng: np.random.Generator, fact: Fact) -> str:
  """One of the relation's templates, chosen at random: varied prose for the same fact."""
  templates = lx.FACT_TEMPLATES[fact.relation]
  return render_template(templates[rng.integers(len(templates))], fact)


def render_template(template: str, fact: Fact) -> str:
  article = "an" if fact.object[0].lower() in "aeiou" else "a"
  text = template.format(s=fact.subject, o=fact.object, a=article)
  return text[0].upper() + text[1:]


def canonical_fact(fact: Fact) -> str:
  """The first template of the relation: the fixed form used as an extraction target."""
  return render_template(lx.FACT_TEMPLATES[fact.relation][0], fact)


def filler_sentence(rng: np.random.Generator) -> str:
  """A neutral sentence naming no entity, so it can never answer or confuse a question."""
  template = lx.FILLER_TEMPLATES[rng.integers(len(lx.FILLER_TEMPLATES))]
  slots = {k: v[rng.integers(len(v))] for k, v in lx.FILLER_WORDS.items()}
  return template.format(**slots)
