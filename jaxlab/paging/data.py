"""Questions for the latent-pager comparison: the synthetic long-document QA set (TFDS) or local
JSONL files in the published schema, plus the consistency probes.

Synthetic: `jaxlab.data.long_doc_qa` is built (offline, deterministic) with the config's
document lengths, chunk size (words, which sets how far apart multi-hop evidence lies),
distractor ratio and horizon. JSONL: `data.jsonl_dir` holds train.jsonl, validation.jsonl and
test.jsonl, read by `jaxlab.data.jsonl.read_jsonl` (a malformed line names file and line).

Consistency probes (synthetic test set only): for each multi-hop question, its second hop asked
directly about the true bridge entity ("Where is Corvin Systems headquartered?" beside "Where is
the organisation that Mara Okafor works for headquartered?"). Both have the same gold answer on
the same document, so a consistent reader answers both alike. Probes are marked `probe` and kept
out of every other metric.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

from jaxlab.core import checkpoint
from jaxlab.core.config import repo_path
from jaxlab.data import jsonl, lexicon, long_doc_qa

SPLITS = ("train", "validation", "test")


def _template_regex(template: str, fixed: dict[str, str]) -> re.Pattern:
  """A fact or question template as a regex: {s} captured (repeats must match the first), the
  fields in `fixed` literal, {a} an article."""
  out, seen_s = "", False
  for literal, field, _, _ in string.Formatter().parse(template):
    out += re.escape(literal)
    if field == "s":
      out += "(?P=s)" if seen_s else "(?P<s>.+?)"
      seen_s = True
    elif field == "a":
      out += "(?:a|an)"
    elif field is not None:
      out += re.escape(fixed[field])
  return re.compile(out, re.IGNORECASE)


def probe(record: dict) -> dict | None:
  """The second hop of a synthetic multi-hop record as its own question, or None."""
  if record["task_type"] != "multi_hop" or len(record.get("evidence", [])) != 2:
    return None
  for (_, second), question in lexicon.MULTI_QUESTIONS.items():
    if not _template_regex(question, {}).fullmatch(record["question"]):
      continue
    for template in lexicon.FACT_TEMPLATES[second]:
      m = _template_regex(template, {"o": record["gold_answer"]}).fullmatch(record["evidence"][1])
      if m:
        bridge = m.group("s")
        # A sentence-initial capital comes from rendering, not from the name.
        bridge = bridge if bridge in record["document"] else bridge[0].lower() + bridge[1:]
        return {"id": record["id"] + "-probe", "document": record["document"],
                "question": lexicon.SINGLE_QUESTIONS[second].format(s=bridge),
                "gold_answer": record["gold_answer"], "task_type": "single_fact", "probe": True}
  return None


ABSTENTION_KNOBS = ("unanswerable_fraction", "abstain_answer", "questions_per_document")


def synthetic_config(config, **override) -> long_doc_qa.LongDocQAConfig:
  """The TFDS config of the run's synthetic set (`override`: data fields replaced, e.g. a
  context-rot cell's distractor ratio and horizon)."""
  d = {**config.data.to_dict(), **override}
  knobs = {k: d[k] for k in ("min_tokens", "max_tokens", "distractor_ratio", "chunk_words",
                             "num_train", "num_validation", "num_test")}
  extra = {k: d[k] for k in ABSTENTION_KNOBS if d[k] != long_doc_qa.LongDocQAConfig.__dataclass_fields__[k].default}
  name = "latent_pager_" + checkpoint.fingerprint({"seed": config.seed, **knobs, "horizon": d["horizon"], **extra})
  return long_doc_qa.LongDocQAConfig(
      name=name, min_tokens=d["min_tokens"], max_tokens=d["max_tokens"], distractor_ratio=d["distractor_ratio"],
      horizon=None if d["horizon"] < 0 else d["horizon"], chunk_tokens=d["chunk_words"], num_train=d["num_train"],
      num_validation=d["num_validation"], num_test=d["num_test"], seed=config.seed,
      unanswerable_fraction=d["unanswerable_fraction"], abstain_answer=d["abstain_answer"],
      questions_per_document=d["questions_per_document"])


def load(config, workdir: Path, **override) -> dict[str, list[dict]]:
  """{split: records}; the test split ends with its consistency probes. The synthetic set is built
  under data.tfds_dir ("" = WORKDIR/tfds). `num_*` count documents: a training document may carry
  `questions_per_document` questions."""
  d = config.data
  if d.jsonl_dir:
    splits = {s: jsonl.read_jsonl(repo_path(d.jsonl_dir) / f"{s}.jsonl") for s in SPLITS}
  else:
    builder = long_doc_qa.build(synthetic_config(config, **override), str(repo_path(d.tfds_dir) if d.tfds_dir else Path(workdir) / "tfds"))
    source = builder.as_data_source()
    splits = {s: [long_doc_qa.decode_example(source[s][i]) for i in range(len(source[s]))] for s in SPLITS}
    splits = {s: sorted(r, key=lambda r: r["id"]) for s, r in splits.items()}
  for split, n in zip(SPLITS, (d.num_train, d.num_validation, d.num_test)):
    n = override.get(f"num_{split}", n)
    documents = list(dict.fromkeys(r["document"] for r in splits[split]))[:n]
    keep = set(documents)
    splits[split] = [r for r in splits[split] if r["document"] in keep]
  probes = [p for p in map(probe, splits["test"]) if p is not None]
  splits["test"] = splits["test"] + probes
  return splits
