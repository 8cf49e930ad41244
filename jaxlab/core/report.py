"""The one grading standard, and results on disk: summary.json, tables, a markdown report, plots.

Every experiment writes the same shape of summary:
  {"experiment", "variant", "figures": {name: {"mean", "sd", "n"}}, "comparisons": [...],
   "claims": [...]}
summary.json holds no timings, so two runs of one config give byte-identical files.

**Figures** (`compare`): a published mean beside ours. With a spread on both sides the gap is
graded by z (the difference over its standard error); where the published figure has no spread,
by z on our standard error alone ("published spread unknown"); where a spread is zero or a side
has n = 1, z means nothing and only the published rounding decides. A gap within the published
rounding is always consistent. Verdicts: `consistent` (|z| <= 2 or within rounding),
`within 10%`, `differs`.

**Claims** (`claim`): a published qualitative statement, graded on a 95% interval over seeds (or
days, or questions) of a margin that is positive on the published side (`stats.bootstrap_claim`,
`stats.paired_bootstrap`, or an exact interval where one fits). `holds` needs the whole interval
above zero and `does not hold` the whole interval below; an interval across zero is "not resolved"
in the direction of the point estimate. A claim over fewer than `stats.MIN_UNITS` units (seeds, or
days) has "too few seeds to grade": below that the 95% interval covers clearly less than 95%
(docs/grading.md). Claims the model guarantees are `by construction`. Neither kind is counted.

A report grades many claims at once, so each claims section also says which hold after Holm's
correction at 5% familywise over its counted claims (`holds_after_holm`), on each claim's p-value
(interval["p"]).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np

from jaxlab.core import stats

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FIGURE_VERDICTS = ("consistent", "within 10%", "differs")
Z_BOTH, ROUNDING = "z", "rounding (a spread is zero or n = 1)"
Z_OURS, Z_OURS_N = "z on ours (published spread unknown)", "z on ours (published n unknown)"


def fmt(stat: dict | None, digits: int = 4) -> str:
  if not stat or stat.get("mean") is None:
    return "n/a"
  text = f"{stat['mean']:.{digits}g}"
  if stat.get("sd") is not None:
    text += f" ± {stat['sd']:.{digits}g}"
  if stat.get("n"):
    text += f" (n={stat['n']})"
  return text


def printed_resolution(text) -> float:
  """The rounding step of a number as printed: "0.9370" -> 1e-4, "6.6024e-03" -> 1e-7, 48 -> 1.
  A float is read as its shortest repr (0.616 -> 1e-3)."""
  text = repr(text) if isinstance(text, float) else str(text)
  mantissa, _, exponent = text.lower().partition("e")
  decimals = len(mantissa.partition(".")[2])
  return 10.0 ** (int(exponent or 0) - decimals)


def _spread(sd, n, mean=0.0) -> float | None:
  """A usable standard deviation, or None when there is none: not given, n = 1, or zero up to float
  noise (a flat figure's sd of 1e-12 would turn any gap into an enormous z)."""
  if sd is None or n is not None and n < 2:
    return None
  sd = float(sd)
  return sd if math.isfinite(sd) and sd > 1e-9 * max(1.0, abs(float(mean))) else None


def compare(figure: str, published: tuple, ours: dict, n_published: int | None = None) -> dict:
  """A published (mean, sd) beside ours ({"mean", "sd", "n"} over seeds), the gap graded.

  `published` holds numbers, or strings as the source prints them (their rounding then counts as
  agreement); sd None when the source prints none. `n_published` is the published number of
  seeds (None: unknown, then the published spread cannot give a standard error).
  """
  p_mean, p_sd = published
  resolution = printed_resolution(p_mean)
  p_mean = float(p_mean)
  p_sd = None if p_sd is None else float(p_sd)
  diff = ours["mean"] - p_mean
  rel = abs(diff) / abs(p_mean) if p_mean else (0.0 if diff == 0 else math.inf)
  our_sd = _spread(ours.get("sd"), ours.get("n"), ours["mean"])
  if our_sd is None or (n_published is not None and n_published < 2):
    method = ROUNDING  # a published single run has no standard error, with or without a printed sd
  elif p_sd is None:
    method = Z_OURS
  elif _spread(p_sd, n_published, p_mean) is None:
    method = ROUNDING
  elif not n_published:
    method = Z_OURS_N
  else:
    method = Z_BOTH
  z = None
  if method != ROUNDING:
    var = our_sd**2 / ours["n"] + (p_sd**2 / n_published if method == Z_BOTH else 0.0)
    z = abs(diff) / math.sqrt(var)
  # A hair of slack: a figure printed to its last digit is "within rounding" at exactly half a step.
  within_rounding = abs(diff) <= resolution / 2 * (1 + 1e-9)
  if within_rounding or (z is not None and z <= 2):
    verdict = "consistent"
  else:
    verdict = "within 10%" if rel <= 0.10 else "differs"
  return {"figure": figure, "published": {"mean": p_mean, "sd": p_sd, "n": n_published},
          "ours": ours, "diff": diff, "rel_diff": rel, "z": z, "method": method,
          "resolution": resolution, "verdict": verdict}


TOO_FEW = "too few seeds to grade"
CLAIM_VERDICTS = ("holds", "same direction, not resolved", "opposite direction, not resolved",
                  "does not hold", TOO_FEW, "by construction")
HOLM_ALPHA = 0.05


def interval_units(interval: dict | None) -> int:
  """The units an interval's coverage rests on: its n (seeds, days, questions); for a nested
  interval the fewer of seeds and units."""
  if interval is None:
    return 1
  return int(min(interval.get("n", 1), interval.get("n_seeds", interval.get("n", 1))))


def claim_verdict(interval: dict | None, by_construction: bool = False) -> str:
  """The verdict of a claim from its margin's interval (positive = the published side)."""
  if by_construction:
    return "by construction"
  n = interval_units(interval)
  if n < stats.MIN_UNITS:
    return f"{TOO_FEW}, not resolved at n={n}"
  diff, ci = interval["diff"], interval.get("ci")
  if ci is not None and ci[0] > 0:
    return "holds"
  if ci is not None and ci[1] < 0:
    return "does not hold"
  side = "same direction" if diff > 0 else "opposite direction"
  return f"{side}, not resolved at n={n}"


def claim(text: str, published: str, ours: str, interval: dict | None = None, *,
          by_construction: bool = False) -> dict:
  """A published statement, our numbers, and its verdict on `interval` ({"diff", "ci", "n"} and,
  for the Holm column, "p"; oriented so that > 0 is the published side; see `claim_verdict`).
  `counted`: whether it is graded (not by construction, not too few seeds)."""
  if isinstance(interval, (bool, np.bool_)):  # a point estimate is not a verdict: it ignores the noise
    raise TypeError(f"claim {text!r}: pass the interval of its margin ({{'diff', 'ci', 'n'}}), not a bool")
  verdict = claim_verdict(interval, by_construction)
  return {"claim": text, "published": published, "ours": ours, "verdict": verdict,
          "interval": interval, "counted": verdict_kind(verdict) not in (TOO_FEW, "by construction")}


def verdict_kind(verdict: str) -> str:
  """One of CLAIM_VERDICTS ("..., not resolved at n=8" -> "..., not resolved")."""
  if verdict.startswith(TOO_FEW):
    return TOO_FEW
  return verdict.split(" at n=")[0] if "not resolved" in verdict else verdict


def _counted(row: dict) -> bool:
  return bool(row.get("counted", verdict_kind(row["verdict"]) not in (TOO_FEW, "by construction")))


def _p(row: dict) -> float | None:
  p = (row.get("interval") or {}).get("p")
  return None if p is None or not math.isfinite(p) else float(p)


def holds_after_holm(rows: list[dict], alpha: float = HOLM_ALPHA) -> list[bool | None]:
  """Per claim: does it hold after Holm's correction over the report's counted claims?

  The family is every counted claim; each enters with its interval's two-sided p-value, and one
  whose interval carries none enters as p = 1 (never rejected, yet it tightens the others'
  thresholds, so the familywise error stays <= alpha). A rejected claim holds when its verdict
  does (rejection at p < 0.05 puts the 95% interval off zero, on the verdict's side). None: not
  counted, or no p-value."""
  family = [i for i, r in enumerate(rows) if _counted(r)]
  reject = stats.holm([1.0 if _p(rows[i]) is None else _p(rows[i]) for i in family], alpha)
  out: list[bool | None] = [None] * len(rows)
  for i, rejected in zip(family, reject):
    if _p(rows[i]) is not None:
      out[i] = bool(rejected) and rows[i]["verdict"] == "holds"
  return out


def markdown_table(headers: list[str], rows: list[list]) -> str:
  lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
  lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
  return "\n".join(lines)


def comparison_table(rows: list[dict]) -> str:
  def gap(r):
    z = "" if r.get("z") is None else f", z={r['z']:.1f}"
    return f"{r['diff']:+.4g} ({100 * r['rel_diff']:.1f}%{z})"
  return markdown_table(
      ["figure", "published", "ours", "ours - published", "graded by", "verdict"],
      [[r["figure"], fmt(r["published"]) if r["published"]["sd"] is not None else f"{r['published']['mean']:.4g} "
        "(published spread unknown)", fmt(r["ours"]), gap(r), r["method"], r["verdict"]] for r in rows])


def interval_text(interval: dict | None, digits: int = 3) -> str:
  if interval is None:
    return "n/a"
  text = f"{interval['diff']:+.{digits}g}"
  if interval.get("ci") is not None:
    lo, hi = interval["ci"]
    text += f" [{lo:+.{digits}g}, {hi:+.{digits}g}]"
  p = interval.get("p")
  return text + f" (n={interval.get('n', 1)}" + ("" if p is None else f", p={p:.2g}") + ")"


def claims_table(rows: list[dict]) -> str:
  holm = {True: "yes", False: "no", None: "—"}
  return markdown_table(["claim", "published", "ours", "margin [95% CI]", "verdict", "holds after Holm"],
                        [[r["claim"], r["published"], r["ours"], interval_text(r.get("interval")), r["verdict"],
                          holm[h]] for r, h in zip(rows, holds_after_holm(rows))])


def figure_counts(rows: list[dict]) -> dict:
  out = {v: sum(r["verdict"] == v for r in rows) for v in FIGURE_VERDICTS}
  out.update({m: sum(r["method"] == m for r in rows) for m in (Z_BOTH, Z_OURS, Z_OURS_N, ROUNDING)})
  return out


def comparisons_section(rows: list[dict], how: str = "", after: str = ""):
  """The report section of published figures beside ours, the verdicts and methods counted."""
  n = figure_counts(rows)
  text = (f"{n['consistent']} of {len(rows)} published figures are consistent with ours, {n['within 10%']} more "
          f"are within 10%, {n['differs']} differ. Method: |z| <= 2 is consistent, z being the difference over its "
          f"standard error from both seed spreads ({n[Z_BOTH]} rows); where the published figure has no spread (or no "
          f"seed count), from ours alone ({n[Z_OURS] + n[Z_OURS_N]} rows, marked in the table); where a spread is "
          f"zero or a "
          f"side has n = 1, no z is computed and only the published rounding decides ({n[ROUNDING]} rows). A gap "
          f"within the published rounding is always consistent.{' ' + how if how else ''}\n\n"
          + comparison_table(rows))
  return "Published figures beside ours", text + (f"\n\n{after}" if after else "")


def claim_counts(rows: list[dict]) -> dict:
  """Claims per verdict kind; "counted" (graded), "holds after Holm", and "no p" (graded claims
  whose interval carries no p-value)."""
  out = {v: 0 for v in CLAIM_VERDICTS + ("not resolved at n=1",)}
  for r in rows:
    kind = verdict_kind(r["verdict"])
    out[kind if kind in out else "not resolved at n=1"] += 1
  out["counted"] = sum(_counted(r) for r in rows)
  out["holds after Holm"] = sum(h is True for h in holds_after_holm(rows))
  out["no p"] = sum(_counted(r) and _p(r) is None for r in rows)
  return out


def claims_line(rows: list[dict]) -> str:
  n = claim_counts(rows)
  unresolved = n["same direction, not resolved"] + n["opposite direction, not resolved"] + n["not resolved at n=1"]
  line = (f"{n['holds']} of {n['counted']} graded claims hold ({n['holds after Holm']} after Holm's correction at "
          f"{HOLM_ALPHA:.0%} familywise), {n['does not hold']} do not hold, {unresolved} are not resolved "
          f"({n['same direction, not resolved']} in the published direction, "
          f"{n['opposite direction, not resolved']} against it")
  line += f", {n['not resolved at n=1']} with no interval)" if n["not resolved at n=1"] else ")"
  if n["no p"]:
    line += f"; {n['no p']} graded claims carry no p-value and count as not holding after Holm"
  if n[TOO_FEW]:
    line += f"; {n[TOO_FEW]} more have too few seeds to grade (n < {stats.MIN_UNITS}) and are not counted"
  if n["by construction"]:
    line += f"; {n['by construction']} more are true by construction and not counted"
  return line + "."


def claims_section(rows: list[dict], note: str = ""):
  text = (f"{claims_line(rows)} A claim holds only when the 95% interval of its margin over seeds (or days, or "
          f"questions) lies on the published side; agreeing point estimates inside the noise are not resolved. "
          f"A claim over fewer than {stats.MIN_UNITS} seeds (or days) is not graded: there the 95% interval covers "
          f"clearly less than 95% (docs/grading.md). \"holds after Holm\" is yes for a claim that holds and also "
          f"survives Holm's step-down correction over this report's graded claims at {HOLM_ALPHA:.0%} familywise, on "
          f"the p-value of its interval (—: not graded, or no p-value; a graded claim without one counts as p = 1)."
          f"{' ' + note if note else ''}\n\n" + claims_table(rows))
  return "Published claims", text


def plots_section(images: list[str]):
  return "Plots", "\n\n".join(f"![{name}]({name})" for name in images)


def _clean(x):
  if isinstance(x, float) and not math.isfinite(x):
    return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
  if isinstance(x, dict):
    return {k: _clean(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_clean(v) for v in x]
  return x


def write_json(path: Path, data) -> None:
  Path(path).write_text(json.dumps(_clean(data), indent=1, sort_keys=True) + "\n")


def save_plot(fig, workdir: Path, name: str) -> str:
  fig.savefig(Path(workdir) / name, dpi=110, bbox_inches="tight")
  plt.close(fig)
  return name


def write_report(workdir: Path, title: str, sections: list[tuple[str, str]]) -> Path:
  body = [f"# {title}", ""]
  for heading, text in sections:
    body += [f"## {heading}", "", text.strip(), ""]
  path = Path(workdir) / "report.md"
  path.write_text("\n".join(body))
  return path


def target(name: str, text: str, met: bool | None, ours: str) -> dict:
  """One of the experiment's own targets: what it asks (`text`), what we measured (`ours`), and
  whether it is met (None where this run cannot judge it, e.g. a regime it needs did not run)."""
  return {"target": name, "text": text, "ours": ours, "met": None if met is None else bool(met)}


def targets_line(rows: list[dict]) -> str:
  met, unjudged = sum(r["met"] is True for r in rows), sum(r["met"] is None for r in rows)
  return f"{met} of {len(rows)} targets met" + (f" ({unjudged} cannot be judged in this run)." if unjudged else ".")


def targets_section(rows: list[dict], note: str = ""):
  """The report section of the experiment's own targets (not published claims): a count line and
  a table of each target, ours, and met / not met / n/a."""
  show = {True: "met", False: "not met", None: "n/a"}
  table = markdown_table(["target", "stated as", "ours", "met"],
                         [[r["target"], r["text"], r["ours"], show[r["met"]]] for r in rows])
  return "Targets", f"{targets_line(rows)}{' ' + note if note else ''}\n\n" + table
