"""The long-document bar of a `references` run, declared in its config's `bar`: the paging reader
with the best validation F1 at `bar.coverage` (as the text buffer's rule is chosen) against

- the chosen text buffer: superiority before abstaining and at `bar.coverage` (the interval of the
  difference above 0) and in hallucination as served (below 0);
- top-k retrieval at the same token budget: non-inferiority before abstaining (the interval's lower
  end at or above -`bar.f1_margin`);
- the oracle's chunks: F1 before abstaining at least `bar.oracle_share` of the oracle's (the
  interval of reader - share x oracle, paired over questions, above 0);
- latency at one question per document: text buffer / reader at least `bar.speedup` (wall clock,
  from timing.json, so in report.md only).

What reaches the LM, as a compression of the chunks it stands for (`compression`), is set by the
config: stated beside the bar, not graded (true by construction).
"""

from __future__ import annotations

from jaxlab.core import report as report_lib
from jaxlab.paging import arms, hybrid
from jaxlab.paging.bar import latency_bar
from jaxlab.paging.figures import ci_text, coverage_key, diff_text, interval

ABOVE, BELOW, NON_INFERIOR = "above", "below", "non-inferior"   # the interval above 0, below 0, above -margin


def parts(declared: dict, reader: str, buffer: str) -> list[tuple[str, str, str, str]]:
  """(part, interval key, what it asks, how it is graded) of the bar for `reader`."""
  cov = coverage_key(declared["coverage"])
  return [("f1_ungated", f"f1_raw/{reader}-text_buffer", f"F1 before abstaining above the text buffer ({buffer})",
           ABOVE),
          (cov, f"coverage/{cov}/{reader}-text_buffer",
           f"F1 at {declared['coverage']:.0%} coverage above the text buffer", ABOVE),
          ("hallucination", f"hallucination/{reader}-text_buffer", "hallucination as served below the text buffer's",
           BELOW),
          ("retrieval", f"f1_raw/{reader}-retrieval",
           f"F1 before abstaining non-inferior to top-k retrieval (margin {declared['f1_margin']:g})", NON_INFERIOR),
          ("oracle", f"f1_raw/{reader}-oracle_share",
           f"F1 before abstaining at least {declared['oracle_share']:.0%} of the oracle chunks'", ABOVE)]


def oracle_share(raw: dict, reader: str, share: float, resamples: int, seed: int) -> dict | None:
  """The paired interval of reader - share x oracle, F1 before abstaining over answerable questions."""
  return interval(raw[reader], share * raw["oracle"], resamples, seed)


def compression(config, reader: str) -> float:
  """The document tokens of the chunks `reader` reads over the tokens that reach the LM for them
  (text chunks as themselves, pages as their soft tokens)."""
  text, paged = hybrid.layout(config, reader)
  chunk, slots = int(config.pages.chunk_tokens), int(config.pager.slots_per_chunk)
  soft = int(config.expansion.tree_nodes) * slots if reader == "tree" else paged * slots
  return (text + paged) * chunk / (text * chunk + soft)


def grade(iv: dict | None, how: str, margin: float) -> bool | None:
  """Met, not met, or None where the interval is missing."""
  if not iv or iv.get("ci") is None:
    return None
  lo, hi = iv["ci"]
  return bool(lo >= -margin) if how == NON_INFERIOR else bool(hi < 0) if how == BELOW else bool(lo > 0)


def targets(declared: dict, chosen: str, buffer: str, intervals: dict) -> list[dict]:
  """The bar's answer parts for the chosen paging reader, as the report's targets."""
  out = []
  for part, key, what, how in parts(declared, chosen, buffer):
    out.append(report_lib.target(f"{chosen}: {what}", _stated(how, part, declared),
                                 grade(intervals.get(key), how, declared["f1_margin"]), diff_text(intervals, key, 3)))
  return out


def _stated(how: str, part: str, declared: dict) -> str:
  if how == NON_INFERIOR:
    return f"the 95% interval of the difference stays at or above -{declared['f1_margin']:g}"
  if part == "oracle":
    return f"the 95% interval of reader - {declared['oracle_share']:g} x oracle lies above 0"
  return f"the 95% interval of the difference lies {how} 0"


def latency_target(declared: dict, chosen: str, timed: dict | None) -> dict:
  ratio = (timed or {}).get("ratio", {}).get(f"ratio_{chosen}")
  return report_lib.target(f"{chosen}: >= {declared['speedup']:g}x lower latency than the text buffer",
                           f"text buffer / {chosen} seconds per question at one question per document, on the "
                           "point estimate", latency_bar(ratio, declared["speedup"]),
                           "n/a" if not ratio else f"{ci_text(ratio, 1)}x (timing.json)")


def section(summary: dict, timed: dict | None) -> str:
  """The report's bar section: the chosen paging reader's targets and what each reader compresses."""
  b = summary["bar"]
  declared, chosen = b["declared"], b["chosen"]
  rows = targets(declared, chosen, summary["text_buffer"]["chosen"], summary["intervals"])
  rows.append(latency_target(declared, chosen, timed))
  squeezed = ", ".join(f"{r} {x:.1f}x" for r, x in b["compression"].items())
  note = (f"The paging reader is chosen on validation (F1 at {declared['coverage']:.0%} coverage: "
          + ", ".join(f"{r} {v:.3f}" for r, v in b["validation_f1_at_coverage"].items())
          + f"). What reaches the LM against the chunks it stands for: {squeezed} (by the config, the bar asks "
          f">= {declared['compression']:g}x; not graded). The latency target is judged from timing.json.")
  return report_lib.targets_section(rows, note)[1]


def summarize(config, val: list[dict], systems: list[str], raw: dict, resamples: int, seed: int) -> tuple[dict, dict]:
  """(summary.json's `bar`, the oracle-share intervals) of a run whose readers include a paging one;
  ({}, {}) otherwise."""
  readers = [r for r in systems if r in hybrid.READERS]
  if not readers or "oracle_share" not in config.bar:   # a run made before the bar was declared in its config
    return {}, {}
  declared = {k: config.bar[k] for k in ("coverage", "f1_margin", "oracle_share", "speedup", "compression")}
  scores = {r: arms.validation_score(val, r, declared["coverage"]) for r in readers}
  intervals = {f"f1_raw/{r}-oracle_share": oracle_share(raw, r, declared["oracle_share"], resamples, seed)
               for r in readers if "oracle" in raw}
  return ({"declared": declared, "chosen": arms.best(scores), "validation_f1_at_coverage": scores,
           "compression": {r: compression(config, r) for r in readers}},
          {k: v for k, v in intervals.items() if v is not None})
