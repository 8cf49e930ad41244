"""Word lists and prose templates of the synthetic long-document QA world.

Every name is a combination of words from these finite lists ("Mara Okafor", "Alder Falls",
"Corvin Systems"), so the whole generated language has a small, closed word-level vocabulary:
the base model (`configs/lm_pretrain.py`) can use a word-level tokenizer and still meet held-out entities,
which are unseen *combinations* of known words rather than unknown words.
"""

import random

FIRST_NAMES = """Mara Tobias Ines Dario Lena Felix Nadia Oskar Priya Ravi Selma Theo Uma Viktor Wren
Yara Zane Alma Bruno Clara Dmitri Elise Farid Greta Hugo Ilse Jonas Kira Lucas Mila Nico Olga Pavel
Quinn Rosa Silas Tara Ulrich Vera Willem Xena Yusuf Zora Anika Bastian Celine Diego Edda Fabian Gwen
Hamid Ida Jasper Karin Leon Maren Noor Otto Petra Rafael Sanne Timo Ulla Valentin Wanda Amir Bettina
Cyrus Dora Emil Freya Gideon Hanna Isak Juno Kasimir Liv Matteo Nell""".split()

LAST_NAMES = """Okafor Lindqvist Moreau Castell Brandt Varga Holm Ferreira Nakamura Quist Adler Bauer
Costa Dahl Engel Falk Grau Haas Iversen Jansen Keller Lund Maier Novak Olsen Petrov Rask Sauer Thorne
Ueda Vidal Weiss Yilmaz Zeller Arden Blom Crane Dorsey Ekberg Frost Garza Hale Ibsen Jovic Krall Lowe
Marsh Nyberg Orlov Pike Rowe Stone Tamm Unger Voss Wolfe Ahlgren Berg Cole Duval Eriksen Fontaine
Gallo Hoyt Ikeda Juarez Kovac Larsen Mendel Nash Ostrowski Pryce Rinaldi Sato Toivonen Varela
Wexler""".split()

PLACE_STEMS = """Alder Birch Cedar Dunmore Elmwood Fenwick Glen Harrow Ivy Juniper Kestrel Larch
Marlow Northam Oakley Pember Quarry Rowan Saltmarsh Thornbury Upton Vale Willow Yarrow Ashby Bramble
Coldwater Dover Eastcliff Foxley Granite Hazel Ironbridge Kingsley Lowther Millbrook Netherby Orchard
Pinecrest Redmoor Stonegate Tidewell Umber Westmarch Brackley Copper Dunstan Everly Frostfield
Greyhaven""".split()
PLACE_KINDS = """Falls Ridge Crossing Hollow Bay Springs Heights Point Landing Grove Ford Field Harbor
Junction Meadows""".split()

ORG_STEMS = """Corvin Helix Meridian Northwind Argent Bellweather Cobalt Delphi Ember Fairhaven Gantry
Halcyon Ironclad Juniper Keystone Lumen Monarch Nimbus Obsidian Paragon Quartz Radiant Sable Tessera
Umbra Vantage Wayfarer Zenith Aurora Bastion Cinder Drift Equinox Foundry Granite Harbinger Inkwell
Jasper Kinetic Lattice Mosaic Nova Orbit Pinnacle Quill Rook Sterling Tandem Vertex Willowby""".split()
ORG_KINDS = """Systems Institute Labs Holdings Works Trust Press Logistics Mills Collective Group
Partners""".split()

COUNTRIES = """Valdoria Estmark Quorvia Belastan Nordhavn Caldera Ostrelia Marovia Tessaly Dunreach
Auric Solvenia Karthia Lumeria Brevania Sarnland Veydra Iskaria Corwen Pellara""".split()

PROFESSIONS = """architect surgeon librarian carpenter geologist pilot translator pharmacist
cartographer baker chemist journalist sculptor astronomer veterinarian glassblower electrician
historian economist botanist""".split() + ["marine biologist", "civil engineer", "tax lawyer",
                      "ship captain", "school teacher", "data analyst"]
HOBBIES = """chess pottery fencing birdwatching sailing archery calligraphy beekeeping origami
kayaking juggling knitting""".split() + ["rock climbing", "amateur astronomy", "model trains",
                     "bread baking", "folk dancing", "stamp collecting"]
INDUSTRIES = """shipping textiles mining publishing insurance aviation forestry robotics brewing
pharmaceuticals telecommunications fisheries ceramics railways""".split() + ["renewable energy",
                                       "precision optics"]

# Fact templates per relation: {s} is the subject, {o} the object, rendered verbatim so the gold
# answer is always a substring of its evidence sentence. The first one, which opens with the subject,
# is the canonical form of extraction targets.
FACT_TEMPLATES = {
  "born_in": ["{s} was born in {o}.", "Born in {o}, {s} spent a childhood there before moving on.",
        "{o} is the town where {s} was born.", "The birth records show that {s} was born in {o}."],
  "lives_in": ["{s} lives in {o}.", "These days {s} makes a home in {o}.",
         "{s} now resides in {o}.", "Neighbours in {o} know {s} well, since {s} lives there."],
  "works_for": ["{s} works for {o}.", "{s} is employed by {o}.", "Colleagues at {o} describe {s} as "
         "a steady presence, as {s} works for {o}.", "For years {s} has been on the staff of {o}."],
  "profession": ["{s} works as {a} {o}.", "By trade, {s} is {a} {o}.",
          "{s} trained for years to become {a} {o}.", "Everyone knows {s} as {a} {o}."],
  "hobby": ["{s} has a lifelong passion for {o}.", "In spare hours, {s} enjoys {o}.",
       "On weekends {s} can usually be found practising {o}.", "Friends say {s} is devoted to {o}."],
  "headquartered_in": ["{s} is headquartered in {o}.", "The head office of {s} stands in {o}.",
             "{s} runs all of its business from headquarters in {o}.",
             "From its headquarters in {o}, {s} manages every branch."],
  "founded_by": ["{s} was founded by {o}.", "{o} founded {s}.", "It was {o} who started {s}.",
          "The founder of {s} was {o}."],
  "founded_year": ["{s} was founded in {o}.", "{s} opened its doors in {o}.",
           "The charter of {s} dates from {o}.", "Since its founding in {o}, {s} has grown."],
  "industry": ["{s} operates in {o}.", "{s} earns its living in {o}.",
         "The main line of business of {s} is {o}.", "{s} is known across the region for {o}."],
  "country": ["{s} lies in {o}.", "{s} is a town in {o}.", "Travellers reach {s} by crossing into {o}.",
        "Maps place {s} within the borders of {o}."],
}

SINGLE_QUESTIONS = {
  "born_in": "Where was {s} born?", "lives_in": "Where does {s} live?",
  "works_for": "Which organisation does {s} work for?", "profession": "What is the profession of {s}?",
  "hobby": "What does {s} enjoy in spare hours?", "headquartered_in": "Where is {s} headquartered?",
  "founded_by": "Who founded {s}?", "founded_year": "In what year was {s} founded?",
  "industry": "In which industry does {s} operate?", "country": "In which country is {s}?",
}

# Two-hop chains: (first relation, second relation) -> question about the first subject.
MULTI_QUESTIONS = {
  ("works_for", "headquartered_in"): "Where is the organisation that {s} works for headquartered?",
  ("works_for", "founded_by"): "Who founded the organisation that {s} works for?",
  ("works_for", "founded_year"): "In what year was the organisation that {s} works for founded?",
  ("works_for", "industry"): "In which industry does the employer of {s} operate?",
  ("born_in", "country"): "In which country was {s} born?",
  ("lives_in", "country"): "In which country does {s} live?",
  ("founded_by", "born_in"): "Where was the founder of {s} born?",
  ("founded_by", "profession"): "What is the profession of the person who founded {s}?",
  ("headquartered_in", "country"): "In which country is {s} headquartered?",
}

# Held-out wordings: one more question per relation and per chain, never used to make training data
# (the base model's corpus, the pager's training questions), to test whether a reader answers a
# question it was not trained to recognise by its wording. Written only with words of the base
# model's word-level vocabulary (`models/lm_base/tokenizer.json`), so no token is unknown.
HELD_OUT_SINGLE_QUESTIONS = {
  "born_in": "Which town was {s} born in?", "lives_in": "Which town does {s} live in?",
  "works_for": "What is the employer of {s}?", "profession": "What does {s} work as?",
  "hobby": "What is {s} devoted to?", "headquartered_in": "Where is the head office of {s}?",
  "founded_by": "Who was the founder of {s}?", "founded_year": "What is the founding year of {s}?",
  "industry": "What industry is {s} in?", "country": "Which country is {s} in?",
}

HELD_OUT_MULTI_QUESTIONS = {
  ("works_for", "headquartered_in"): "Where is the head office of the employer of {s}?",
  ("works_for", "founded_by"): "Who was the founder of the employer of {s}?",
  ("works_for", "founded_year"): "What is the founding year of the organisation {s} works for?",
  ("works_for", "industry"): "Which industry does the organisation {s} works for operate in?",
  ("born_in", "country"): "Which country was {s} born in?",
  ("lives_in", "country"): "Which country does {s} live in?",
  ("founded_by", "born_in"): "Which town was the founder of {s} born in?",
  ("founded_by", "profession"): "What does the person who founded {s} work as?",
  ("headquartered_in", "country"): "Which country is {s} headquartered in?",
}

# Two more training wordings, so a reader trained on several ways of asking for each relation and
# chain learns the relation rather than one sentence; the held-out wording stays unlike all three.
# The same vocabulary rule holds.
TRAIN_B_SINGLE_QUESTIONS = {
  "born_in": "What is the place of birth of {s}?", "lives_in": "Where does {s} live now?",
  "works_for": "By which organisation is {s} employed?", "profession": "What is {s} by trade?",
  "hobby": "What is the lifelong passion of {s}?", "headquartered_in": "In which town is {s} headquartered?",
  "founded_by": "Who started {s}?", "founded_year": "In what year was {s} started?",
  "industry": "What is the main line of business of {s}?", "country": "Which country has {s} within its borders?",
}

TRAIN_B_MULTI_QUESTIONS = {
  ("works_for", "headquartered_in"): "In which town is the employer of {s} headquartered?",
  ("works_for", "founded_by"): "Who started the organisation that {s} works for?",
  ("works_for", "founded_year"): "In what year was the employer of {s} started?",
  ("works_for", "industry"): "What is the main line of business of the employer of {s}?",
  ("born_in", "country"): "What is the country of birth of {s}?",
  ("lives_in", "country"): "In which country does {s} live now?",
  ("founded_by", "born_in"): "What is the place of birth of the person who started {s}?",
  ("founded_by", "profession"): "What is the founder of {s} by trade?",
  ("headquartered_in", "country"): "Which country has the headquarters of {s} within its borders?",
}

TRAIN_C_SINGLE_QUESTIONS = {
  "born_in": "In what place was {s} born?", "lives_in": "Where is the home of {s}?",
  "works_for": "Which organisation has {s} on its staff?", "profession": "What was {s} trained to become?",
  "hobby": "What does {s} enjoy on weekends?", "headquartered_in": "Which town is home to the headquarters of {s}?",
  "founded_by": "Which person founded {s}?", "founded_year": "Which year was {s} founded in?",
  "industry": "Which industry is {s} known for?", "country": "Which country is home to {s}?",
}

TRAIN_C_MULTI_QUESTIONS = {
  ("works_for", "headquartered_in"): "Which town is home to the headquarters of the employer of {s}?",
  ("works_for", "founded_by"): "Which person founded the employer of {s}?",
  ("works_for", "founded_year"): "Which year was the employer of {s} founded in?",
  ("works_for", "industry"): "Which industry is the employer of {s} known for?",
  ("born_in", "country"): "Which country is home to the town where {s} was born?",
  ("lives_in", "country"): "Which country is home to the town where {s} lives?",
  ("founded_by", "born_in"): "In what place was the founder of {s} born?",
  ("founded_by", "profession"): "What was the founder of {s} trained to become?",
  ("headquartered_in", "country"): "Which country is home to the headquarters of {s}?",
}

# Question wording -> (single-fact templates, two-hop templates). Both tables of a wording have the
# same keys in the same order, so a wording changes how a question reads and nothing that is drawn.
QUESTION_WORDINGS = {
  "train": (SINGLE_QUESTIONS, MULTI_QUESTIONS),
  "train_b": (TRAIN_B_SINGLE_QUESTIONS, TRAIN_B_MULTI_QUESTIONS),
  "train_c": (TRAIN_C_SINGLE_QUESTIONS, TRAIN_C_MULTI_QUESTIONS),
  "held_out": (HELD_OUT_SINGLE_QUESTIONS, HELD_OUT_MULTI_QUESTIONS),
}
# Composed wordings: a question is a frame around a noun phrase for the relation ("Tell me {np}.",
# np = "the place of birth of {s}"), and a two-hop question nests the first relation's phrase in the
# second's ("the country of the place of birth of {s}"), so a reader trained on them meets each
# relation in many sentences and each sentence shape with many relations. Their new words enter a
# base model's vocabulary with the corpus that uses them (configs/lm_pretrain.py:composed), so
# models/lm_base and models/lm_base_wordings do not read them. A phrase found in the relation's (or
# chain's) held-out question is never used, and no composed question equals a hand-written one.
COMPOSED_PHRASES = {
  "born_in": ["the place of birth of {x}", "the town where {x} was born", "the birthplace of {x}",
              "the town of birth of {x}"],
  "lives_in": ["the place where {x} lives", "the current home of {x}", "the place of residence of {x}",
               "the town where {x} resides"],
  "works_for": ["the organisation {x} works for", "the company that employs {x}", "the workplace of {x}",
                "the organisation that employs {x}"],
  "profession": ["the profession of {x}", "the occupation of {x}", "the trade of {x}", "the line of work of {x}"],
  "hobby": ["the hobby of {x}", "the pastime of {x}", "the favourite pastime of {x}",
            "the spare time passion of {x}"],
  "headquartered_in": ["the headquarters of {x}", "the town where {x} is headquartered", "the base of {x}",
                       "the location of the headquarters of {x}"],
  "founded_by": ["the person who founded {x}", "the creator of {x}", "the person who created {x}",
                 "the one who set up {x}"],
  "founded_year": ["the year {x} was founded", "the founding date of {x}", "the year in which {x} was set up",
                   "the year of the founding of {x}"],
  "industry": ["the industry of {x}", "the business sector of {x}", "the field {x} operates in",
               "the kind of business {x} is in"],
  "country": ["the country of {x}", "the country that {x} lies in", "the nation {x} belongs to",
              "the country containing {x}"],
}
COMPOSED_FRAMES = ["What is {np}?", "Tell me {np}.", "Name {np}.", "Do you know {np}?", "Please give {np}.",
                   "I would like to know {np}.", "According to the text, what is {np}?",
                   "From the document, name {np}."]
COMPOSED_COUNT = 12


def _pieces_in(phrase: str, question: str) -> bool:
  """Whether every literal piece of `phrase` (around its {x}) occurs in `question`."""
  return all(piece in question for piece in (q.strip() for q in phrase.split("{x}")) if piece)


def _composed_tables(count: int) -> list[tuple[dict, dict]]:
  """`count` wordings, each a (single, multi) pair of template tables: for every relation and chain,
  the (phrase, frame) combinations in a fixed shuffled order, the held-out ones and hand-written
  templates skipped, the i-th left taken by wording i (so no two wordings share a template)."""
  hand_written = {t for table in (SINGLE_QUESTIONS, MULTI_QUESTIONS, TRAIN_B_SINGLE_QUESTIONS,
                                  TRAIN_B_MULTI_QUESTIONS, TRAIN_C_SINGLE_QUESTIONS, TRAIN_C_MULTI_QUESTIONS,
                                  HELD_OUT_SINGLE_QUESTIONS, HELD_OUT_MULTI_QUESTIONS) for t in table.values()}

  def templates(key, held_out: str) -> list[str]:
    relations = (key,) if isinstance(key, str) else key
    phrases = ["{s}"]
    for depth, r in enumerate(relations):   # the first relation innermost; an outer phrase ends in its inner one
      phrases = [p.format(x=inner) for inner in phrases for p in COMPOSED_PHRASES[r]
                 if not _pieces_in(p, held_out) and (depth == 0 or p.endswith("{x}"))]
    out = [f.format(np=p) for p in phrases for f in COMPOSED_FRAMES]
    out = [t for t in out if t not in hand_written]
    random.Random(repr(key)).shuffle(out)   # a fixed order, part of the data like the phrases
    if len(out) < count:
      raise ValueError(f"only {len(out)} composed templates for {key!r}, {count} wordings asked")
    return out[:count]

  single = {r: templates(r, HELD_OUT_SINGLE_QUESTIONS[r]) for r in SINGLE_QUESTIONS}
  multi = {c: templates(c, HELD_OUT_MULTI_QUESTIONS[c]) for c in MULTI_QUESTIONS}
  return [({r: t[i] for r, t in single.items()}, {c: t[i] for c, t in multi.items()}) for i in range(count)]


COMPOSED_WORDINGS = {f"composed_{i:02d}": tables for i, tables in enumerate(_composed_tables(COMPOSED_COUNT))}
QUESTION_WORDINGS.update(COMPOSED_WORDINGS)

# The wordings training questions may be drawn from (`LongDocQAConfig.train_wordings`: the first k),
# the canonical one first: the three hand-written ones (the vocabulary of models/lm_base), then the
# composed ones.
HAND_WRITTEN_WORDINGS = ("train", "train_b", "train_c")
TRAINING_WORDINGS = HAND_WRITTEN_WORDINGS + tuple(COMPOSED_WORDINGS)

# Neutral filler: prose that names no entity and states no fact, so it can never answer a question.
FILLER_TEMPLATES = [
  "The {adj} {noun} by the {feature} was {state} {time}.",
  "{Time}, the {noun} along the {feature} {verb} {manner}.",
  "Visitors often remarked that the {feature} looked {adj} in {season}.",
  "Records from that {period} describe a {adj} {noun} and little else.",
  "Nobody could say why the {noun} near the {feature} had been {state}.",
  "In {season} the {feature} grew {adj}, and the {noun} {verb} {manner}.",
  "An old {noun} still rests beside the {feature}, {state} and {adj}.",
]
FILLER_WORDS = {
  "adj": "quiet narrow weathered bright crowded silent ancient muddy golden grey restless pale "
      "broad crooked humble tidy".split(),
  "noun": "cart bridge lantern fence mill boat bell gate wall orchard barn kiln well wagon signpost "
      "chapel".split(),
  "feature": "river square hill road harbour market canal forest valley shore meadow quarry".split(),
  "state": "repaired painted abandoned rebuilt forgotten moved flooded restored".split(),
  "time": ["last spring", "long ago", "every autumn", "after the storm", "that winter", "in the end"],
  "Time": ["Each morning", "Long ago", "Every autumn", "After the storm", "That winter", "At dusk"],
  "verb": "creaked rattled settled drifted leaned shone faded rested".split(),
  "manner": "slowly loudly gently steadily quietly stubbornly".split(),
  "season": "spring summer autumn winter".split(),
  "period": "decade season year century".split(),
}
