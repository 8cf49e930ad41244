"""How a run's summary is compared with its receipt's, entry by entry (`receipts.verify` runs it).

Two modes of matching figures:
- `bitwise`, on the receipt's machine kind (backend, CPU architecture and the vector extensions
  XLA used, or the accelerator model; jax and jaxlib versions) when the receipt says the run is
  deterministic there: every entry of the summary is equal to the last bit, and so is report.md
  (unless the run measured wall-clock time, which report.md then shows).
- `seed`, anywhere else: a figure with a spread ({"mean", "sd", "n"} over seeds) must lie within
  4 standard errors of the receipt's (both spreads; 4 rather than 2 because a summary holds
  hundreds of figures and both runs use the same seeds); a figure with no spread that differs is
  printed as "unchecked", never passed silently.

A compiled program's peak device memory (a figure named `peak_memory`) is the compiler's account,
not a result: in every mode it must agree within 5%, not to the bit.

In every mode these must agree, or verify fails naming the row: the config; every claim's verdict
(and its Holm column); every stated outcome (the `bar`, the `targets`); every headline figure
that has an interval lies inside the receipt's interval (in `seed` mode: within 4 standard errors
of it, each read from its own interval, for the run is another draw); every timing ratio with an interval
(timing.json entries named `*ratio*`: systems timed in the same run, on the same machine state) has
an interval that meets the receipt's (wall-clock time varies from run to run beyond one run's
interval over its timed questions), or else a point within `RATIO_DRIFT` of the receipt's, shown
as unchecked; absolute seconds in timing.json whose interval misses the
receipt's are shown as unchecked (they move with the machine's state from day to day, both systems
alike); the verdicts report.md states in its tables (those
judged on wall-clock time, rows that cite timing.json, only where the receipt keeps its timing).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

SEED_Z = 4.0
TIMING = "timing.json"
# Columns of report.md's tables that state a verdict or an outcome.
VERDICT_COLUMNS = ("verdict", "met", "holds after holm")


@dataclasses.dataclass
class Check:
  """One compared entry. ok: True agrees, False disagrees, None unchecked (nothing to judge by)."""
  kind: str            # "config", "figure", "memory", "claim", "outcome", "headline", "timing", "report", "summary"
  name: str
  receipt: object
  run: object
  ok: bool | None
  why: str = ""

  @property
  def result(self) -> str:
    return {True: "agrees", False: "DISAGREES", None: "unchecked"}[self.ok]


KINDS = ("config", "figure", "memory", "claim", "outcome", "headline", "timing", "report", "summary")


def short(value) -> str:
  if isinstance(value, dict) and set(value) <= {"mean", "sd", "n"}:
    sd = value.get("sd")
    return f"{value.get('mean')!r} ± {sd!r} (n={value.get('n')})" if sd is not None else \
        f"{value.get('mean')!r} (n={value.get('n')})"
  text = json.dumps(value) if not isinstance(value, str) else value
  return text if len(text) <= 60 else text[:57] + "..."


def _flat(tree, prefix="", stop=lambda node: False) -> dict:
  """{dotted path: leaf}; `stop(node)` keeps a dict whole as one leaf."""
  if isinstance(tree, dict) and not stop(tree):
    out = {}
    for k, v in tree.items():
      out.update(_flat(v, f"{prefix}{k}.", stop))
    return out
  if isinstance(tree, list):
    out = {}
    for i, v in enumerate(tree):
      out.update(_flat(v, f"{prefix}{i}.", stop))
    return out
  return {prefix[:-1]: tree}


def _number(x):
  if isinstance(x, str) and x in ("inf", "-inf"):
    return float(x)
  return x


def _is_number(x) -> bool:
  return isinstance(_number(x), (int, float)) and not isinstance(x, bool)


def within_seed_error(a: dict, b: dict) -> tuple[bool | None, str]:
  """Whether two {"mean", "sd", "n"} agree within seed error; None when there is no spread to judge by."""
  if a.get("n") != b.get("n"):
    return False, f"n {a.get('n')} vs {b.get('n')}"
  x, y = _number(a.get("mean")), _number(b.get("mean"))
  if x is None or y is None:
    return (True, "") if x is None and y is None else (False, "one mean is missing")
  if x == y:
    return True, ""
  n = a.get("n") or 1
  se2 = sum((s or 0.0) ** 2 / n for s in (a.get("sd"), b.get("sd")))
  if se2 > 0 and math.isfinite(se2):
    z = abs(x - y) / math.sqrt(se2)
    return z <= SEED_Z, f"z = {z:.2f}" + ("" if z <= SEED_Z else f" > {SEED_Z:g}")
  return None, f"no spread to judge by (differs by {abs(x - y):.3g})"


_ABSENT = object()   # a leaf one entry does not have (unlike a leaf whose value is None)


def _same_or_unchecked(a, b) -> tuple[bool | None, str]:
  """Equal agrees; two numbers that differ cannot be judged without a spread, nor can a number
  against None (a value not reached within a budget, as a censored step count is, or an interval's
  open end); anything else that differs (a word, a flag, a missing entry) disagrees."""
  if a == b:
    return True, ""
  if _is_number(a) and _is_number(b):
    return None, f"no spread to judge by (differs by {abs(_number(a) - _number(b)):.3g})"
  if (a is None and _is_number(b)) or (b is None and _is_number(a)):
    return None, "no spread to judge by (a number against none: not reached, or an open end)"
  return False, "differs"


def leaf_by_leaf(a, b) -> tuple[bool | None, str]:
  """Two entries without a spread (counts, shares, words, nested dicts of them): a differing word,
  flag or missing leaf disagrees; differing numbers are unchecked; else they agree."""
  fa, fb = _flat(a), _flat(b)
  results = [_same_or_unchecked(fa.get(k, _ABSENT), fb.get(k, _ABSENT)) for k in sorted(set(fa) | set(fb))]
  bad = [why for ok, why in results if ok is False]
  if bad:
    return False, bad[0]
  return (None, "no spread to judge by") if any(ok is None for ok, _ in results) else (True, "")


# A compiled program's device memory (XLA's account of its buffers), not a result of the run: it
# moves when a program gains an output or the compiler assigns buffers otherwise, so in every mode
# it must agree within MEMORY_TOLERANCE (relative), not to the bit.
MEMORY_FIGURE = "peak_memory"
MEMORY_TOLERANCE = 0.05
# A timing ratio's interval holds its timed questions' noise, not the machine's from run to run: a
# quiet rerun of the latent pager's arms study on the receipt's machine moved its latency ratio by
# +12% (3.05x [2.90, 3.17] to 3.43x [3.29, 3.56]). A ratio whose interval misses the receipt's but
# whose point lies within this share of it is shown as unchecked; a larger move fails.
RATIO_DRIFT = 0.20


def _within_drift(receipt: float | None, run: float | None) -> bool:
  return _is_number(receipt) and _is_number(run) and receipt > 0 and abs(run / receipt - 1) <= RATIO_DRIFT


def _memory_within(a, b) -> tuple[bool, str]:
  x, y = (v.get("mean") if isinstance(v, dict) else v for v in (a, b))
  if not (_is_number(x) and _is_number(y)):
    return a == b, "" if a == b else "differs"
  rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
  return rel <= MEMORY_TOLERANCE, f"{rel:.2%} apart" + ("" if rel <= MEMORY_TOLERANCE else
                                                      f" (more than {MEMORY_TOLERANCE:.0%})")


def _only_in(in_receipt: bool) -> str:
  """Why an entry that one side lacks fails: the side that has it."""
  return "only in the receipt" if in_receipt else "only in the run"


def compare_figures(receipt: dict, run: dict, match: str) -> list[Check]:
  checks = []
  for name in sorted(set(receipt) | set(run)):
    a, b = receipt.get(name), run.get(name)
    if a is None or b is None:
      checks.append(Check("figure", name, a, b, False, _only_in(a is not None)))
    elif MEMORY_FIGURE in name:
      checks.append(Check("memory", name, a, b, *_memory_within(a, b)))
    elif match == "bitwise":
      checks.append(Check("figure", name, a, b, a == b, "" if a == b else "not bitwise equal"))
    elif isinstance(a, dict) and isinstance(b, dict) and "mean" in a and "mean" in b:
      checks.append(Check("figure", name, a, b, *within_seed_error(a, b)))
    else:   # counts and shares without a spread
      checks.append(Check("figure", name, a, b, *leaf_by_leaf(a, b)))
  return checks


def _claim_outcome(c: dict) -> tuple:
  """What a claim concludes: its verdict and every Holm entry."""
  return (c.get("verdict"),) + tuple(c[k] for k in sorted(c) if k.startswith("holm"))


_DIRECTION = re.compile(r"\b(?:same|opposite) direction, not resolved")


def _resolution(outcome):
  """A verdict (or a tuple of them) at the grading's resolution: "same/opposite direction, not
  resolved" is one verdict, its direction the side of a point estimate inside noise."""
  if isinstance(outcome, tuple):
    return tuple(_resolution(x) for x in outcome)
  return _DIRECTION.sub("not resolved", outcome) if isinstance(outcome, str) else outcome


def _at_boundary(receipt: dict, run: dict) -> str:
  """Why a verdict changed when both margins agree within seed error: the receipt's interval ends
  near zero, so another draw of the same spread lands on the other side of a verdict's line."""
  a, b = receipt.get("interval") or {}, run.get("interval") or {}
  if not (_has_interval(a) and _has_interval(b)) or _point(a) is None or _point(b) is None:
    return ""
  check = _interval_within_seed_error("claim", "", a, b)
  if not check.ok:
    return ""
  edge = min(abs(_number(v)) for v in a["ci"])
  return f" at its boundary: the margins agree within seed error ({check.why or 'equal'}), the receipt's interval " \
         f"ending {edge:.2g} from zero"


def compare_claims(receipt: list, run: list, match: str) -> list[Check]:
  checks = []
  by_text = {c["claim"]: c for c in run}
  for c in receipt:
    other = by_text.pop(c["claim"], None)
    if other is None:
      checks.append(Check("claim", c["claim"], c["verdict"], None, False, "only in the receipt"))
    elif match == "seed" and _claim_outcome(other) != _claim_outcome(c) and \
        _resolution(_claim_outcome(other)) == _resolution(_claim_outcome(c)):
      check = _interval_within_seed_error("claim", c["claim"], c.get("interval") or {}, other.get("interval") or {}) \
          if _has_interval(c.get("interval")) and _has_interval(other.get("interval")) else None
      ok = check is not None and check.ok is True
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], ok,
                          f"an unresolved estimate's side, its margin within seed error ({check.why or 'equal'})" if ok
                          else "an unresolved estimate's side changed and its margin moved beyond seed error"))
    elif _claim_outcome(other) != _claim_outcome(c):
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], False,
                          "the verdict changed" + (_at_boundary(c, other) if match == "seed" else "")))
    elif match == "bitwise" and other != c:
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], False,
                          "interval or numbers not bitwise equal"))
    else:
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], True))
  for text, other in by_text.items():
    checks.append(Check("claim", text, None, other["verdict"], False, "only in the run"))
  return checks


def _outcomes(summary: dict) -> dict:
  """{name: outcome} of what a summary says is met: its bar's parts and its targets."""
  out = {f"bar.{k}": v for k, v in _flat(summary.get("bar") or {}).items()}
  for t in summary.get("targets") or []:
    out[f"target: {t.get('target')}"] = t.get("met")
  return out


def _target_figures(summary: dict) -> dict:
  """{name: what a target's figure read ("ours", its interval as text)}, as `_outcomes` names them."""
  return {f"target: {t.get('target')}": t.get("ours") for t in summary.get("targets") or []}


def compare_outcomes(receipt: dict, run: dict) -> list[Check]:
  a, b = _outcomes(receipt), _outcomes(run)
  ours_a, ours_b = _target_figures(receipt), _target_figures(run)
  def why(k):
    if a.get(k) == b.get(k):
      return ""
    if k not in a or k not in b:
      return _only_in(k in a)
    if ours_a.get(k) and ours_b.get(k):   # where each figure lies against the target's line
      return f"the outcome changed: the receipt's figure {ours_a[k]}, the run's {ours_b[k]}"
    return "the outcome changed"
  return [Check("outcome", k, a.get(k), b.get(k), a.get(k) == b.get(k), why(k)) for k in sorted(set(a) | set(b))]


def _point(entry: dict):
  return _number(entry.get("mean", entry.get("diff")))


def _has_interval(entry) -> bool:
  return isinstance(entry, dict) and isinstance(entry.get("ci"), list) and len(entry["ci"]) == 2 and \
      all(_is_number(x) for x in entry["ci"])


def in_interval(kind: str, name: str, a: dict, b, overlap: bool = False, seed: bool = False) -> Check:
  """The run's point estimate must lie in the receipt's interval (with `seed`, within seed error
  of it: `_interval_within_seed_error`); with `overlap` (timings: each
  run's interval holds only its own timed questions' noise, not the machine's from run to run),
  the run's interval must meet the receipt's."""
  x = _point(b) if isinstance(b, dict) else None
  if x is None or not _is_number(x):
    return Check(kind, name, a, b, False, "the run has no figure here")
  lo, hi = (_number(v) for v in a["ci"])
  if overlap and _has_interval(b):
    blo, bhi = (_number(v) for v in b["ci"])
    ok = blo <= hi and lo <= bhi
    return Check(kind, name, f"{_point(a):.4g} [{lo:.4g}, {hi:.4g}]", f"{x:.4g} [{blo:.4g}, {bhi:.4g}]", ok,
                 "" if ok else "its interval misses the receipt's")
  if seed:
    return _interval_within_seed_error(kind, name, a, b)
  inside = lo <= x <= hi
  return Check(kind, name, f"{_point(a):.4g} [{lo:.4g}, {hi:.4g}]", f"{x:.4g}", inside,
               "" if inside else "outside the receipt's interval")


def _facing_se(entry, toward: float) -> float:
  """The standard error an interval implies on the side facing `toward`: that half-width / 1.96
  (a t interval at 10 units is about 15% wider, so this errs toward a larger error)."""
  if not _has_interval(entry):
    return 0.0
  lo, hi = (_number(v) for v in entry["ci"])
  return max(0.0, (hi - _point(entry)) if toward > _point(entry) else (_point(entry) - lo)) / 1.96


def _interval_within_seed_error(kind: str, name: str, a: dict, b: dict) -> Check:
  """Seed mode: the run is another draw, so both intervals' errors count, as for figures: the two
  points within SEED_Z standard errors of their difference, each error read from its own interval
  on the side facing the other point. (The run's point inside the receipt's 95% interval is the
  bitwise mode's rule: a faithful rerun with the same spread misses it one time in six.)"""
  x, y = _point(a), _point(b)
  lo, hi = (_number(v) for v in a["ci"])
  shown = f"{y:.4g}" + (" [{:.4g}, {:.4g}]".format(*(_number(v) for v in b["ci"])) if _has_interval(b) else "")
  se = math.hypot(_facing_se(a, y), _facing_se(b, x))
  if x == y:
    ok, why = True, ""
  elif se > 0:
    z = abs(x - y) / se
    ok, why = z <= SEED_Z, f"z = {z:.2f}" + ("" if z <= SEED_Z else f" > {SEED_Z:g}")
  else:
    ok, why = None, f"no spread to judge by (differs by {abs(x - y):.3g})"
  return Check(kind, name, f"{x:.4g} [{lo:.4g}, {hi:.4g}]", shown, ok, why)


def compare_intervals(kind: str, receipt: dict, run: dict, only_intervals: bool = False,
                       other_hardware: bool = False, seed: bool = False) -> list[Check]:
  """Every entry with an interval: the run's figure inside it; any other leaf (unless
  `only_intervals`): equal, or unchecked where two numbers differ with nothing to judge them by.
  Timing: absolute seconds are shown, not judged; ratios of two systems timed in one run are
  judged (a move within `RATIO_DRIFT` is unchecked), except when the run's hardware differs from
  the receipt's (`other_hardware`), where the relative cost of two programs moves with it."""
  stop = lambda node: "ci" in node or "mean" in node or "diff" in node
  a, b = _flat(receipt, stop=stop), _flat(run, stop=stop)
  checks = []
  for name in sorted(set(a) | set(b)):
    x, y = a.get(name), b.get(name)
    if _has_interval(x) and _point(x) is not None:
      check = in_interval(kind, name, x, y, overlap=kind == "timing", seed=seed)
      if kind == "timing" and check.ok is False and "ratio" not in name.rsplit(".", 1)[-1] and _has_interval(y):
        check = dataclasses.replace(check, ok=None, why="absolute seconds: moved with the machine's state "
                                    "(ratios of systems timed in the same run are judged)")
      elif kind == "timing" and check.ok is False and other_hardware and _has_interval(y):
        check = dataclasses.replace(check, ok=None, why="a ratio measured on other hardware (verdicts that cite "
                                    f"{TIMING} are judged)")
      elif kind == "timing" and check.ok is False and _has_interval(y) and _within_drift(_point(x), _point(y)):
        check = dataclasses.replace(check, ok=None, why=f"moved {_point(y) / _point(x) - 1:+.0%}, within the "
                                    f"{RATIO_DRIFT:.0%} a wall-clock ratio drifts between runs on one machine")
      checks.append(check)
    elif only_intervals:
      continue
    elif isinstance(x, dict) and isinstance(y, dict) and "sd" in x:
      checks.append(Check(kind, name, x, y, *within_seed_error(x, y)))
    elif isinstance(x, dict) and isinstance(y, dict) and _point(x) is not None:
      checks.append(Check(kind, name, x, y, *_same_or_unchecked(_point(x), _point(y))))
    else:   # a word, a flag, a count, or a dict such as {"steps", "reached", "ci"}: leaf by leaf
      checks.append(Check(kind, name, x, y, *leaf_by_leaf(x, y)))
  return checks


def report_verdicts(text: str, timed: bool = True) -> dict:
  """{table heading column | first cell: the row's verdict cells} of report.md's tables whose
  header has a verdict or outcome column. A row that cites timing.json is judged on wall-clock
  time: kept only when `timed` (the receipt keeps its timing to judge it by)."""
  out, lines, i = {}, text.splitlines(), 0
  while i < len(lines):
    if not lines[i].startswith("|"):
      i += 1
      continue
    table = []
    while i < len(lines) and lines[i].startswith("|"):
      table.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
      i += 1
    header = [h.lower() for h in table[0]]
    cols = [j for j, h in enumerate(header) if h in VERDICT_COLUMNS]
    for row in table[2:] if cols else ():
      if not timed and any(TIMING in cell for cell in row):
        continue
      key = f"{table[0][0]} | {row[0]}"
      value = " / ".join(row[j] for j in cols if j < len(row))
      out[key] = value if key not in out else out[key] + " ; " + value
  return out


def compare_report(receipt_text: str, run_text: str, bitwise: bool, timed: bool, seed: bool = False) -> list[Check]:
  """report.md's verdict cells; in `seed` mode at the grading's resolution (`_resolution`: the
  claim's own check judges whether its margin stayed within seed error)."""
  a, b = report_verdicts(receipt_text, timed), report_verdicts(run_text, timed)
  same = lambda k: a.get(k) == b.get(k) or (seed and k in a and k in b and _resolution(a[k]) == _resolution(b[k]))
  checks = [Check("report", k, a.get(k), b.get(k), same(k), "" if same(k) else "report.md states another verdict")
            for k in sorted(set(a) | set(b))]
  if bitwise:
    same = receipt_text == run_text
    checks.append(Check("report", "report.md", "bytes", "bytes" if same else "other bytes", same,
                        "" if same else "not bitwise equal"))
  return checks


def _rest(summary: dict) -> dict:
  """A summary without its figures and claims (compared by their own rules)."""
  return {k: v for k, v in summary.items() if k not in ("figures", "claims")}


def compare_rest(receipt: dict, run: dict) -> list[Check]:
  """Bitwise: every other entry of the summary (comparison rows, learned parameters, ...)."""
  a, b = _flat(_rest(receipt)), _flat(_rest(run))
  def why(path):
    if a.get(path) == b.get(path):
      return ""
    return "not bitwise equal" if path in a and path in b else _only_in(path in a)
  return [Check("summary", path, a.get(path), b.get(path), a.get(path) == b.get(path), why(path))
          for path in sorted(set(a) | set(b))]


def _entries(tree, prefix="") -> set:
  """The dotted paths of a summary's entries, a list counted as one (its length may follow the
  results, which another machine kind moves)."""
  if not isinstance(tree, dict) or not tree:
    return {prefix[:-1]}
  return set().union(*(_entries(v, f"{prefix}{k}.") for k, v in tree.items()))


def compare_entries(receipt: dict, run: dict) -> list[Check]:
  """Within seed error, where values may move: whether the summary reports the same entries. An
  entry only in the run comes from code that reports more than the receipt's did, so the receipt
  cannot vouch for it (and on its own machine kind it fails bitwise): made again, it would."""
  a, b = _entries(_rest(receipt)), _entries(_rest(run))
  mark = lambda path, side: "present" if path in side else None
  return [Check("summary", path, mark(path, a), mark(path, b), False, _only_in(path in a))
          for path in sorted(a ^ b)] or [Check("summary", "entries", len(a), len(b), True)]
