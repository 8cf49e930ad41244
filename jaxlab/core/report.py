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
in the direction of the point estimate. Claims the model guarantees are `by construction` and are
not counted.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np

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


CLAIM_VERDICTS = ("holds", "same direction, not resolved", "opposite direction, not resolved",
                  "does not hold", "by construction")


def claim_verdict(interval: dict | None, by_construction: bool = False) -> str:
  """The verdict of a claim from its margin's interval (positive = the published side)."""
  if by_construction:
    return "by construction"
  if interval is None:
    return "not resolved at n=1"
  diff, ci, n = interval["diff"], interval.get("ci"), interval.get("n", 1)
  if ci is not None and ci[0] > 0:
    return "holds"
  if ci is not None and ci[1] < 0:
    return "does not hold"
  side = "same direction" if diff > 0 else "opposite direction"
  return f"{side}, not resolved at n={n}"


def claim(text: str, published: str, ours: str, interval: dict | None = None, *,
          by_construction: bool = False) -> dict:
  """A published statement, our numbers, and its verdict on `interval` ({"diff", "ci", "n"},
  oriented so that > 0 is the published side; see `claim_verdict`)."""
  if isinstance(interval, (bool, np.bool_)):  # a point estimate is not a verdict: it ignores the noise
    raise TypeError(f"claim {text!r}: pass the interval of its margin ({{'diff', 'ci', 'n'}}), not a bool")
  return {"claim": text, "published": published, "ours": ours, "verdict": claim_verdict(interval, by_construction),
          "interval": interval, "counted": not by_construction}


def verdict_kind(verdict: str) -> str:
  """One of CLAIM_VERDICTS ("..., not resolved at n=8" -> "..., not resolved")."""
  return verdict.split(" at n=")[0] if "not resolved" in verdict else verdict


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
  return text + f" (n={interval.get('n', 1)})"


def claims_table(rows: list[dict]) -> str:
  return markdown_table(["claim", "published", "ours", "margin [95% CI]", "verdict"],
                        [[r["claim"], r["published"], r["ours"], interval_text(r.get("interval")), r["verdict"]]
                         for r in rows])


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
          f"seed count), from ours alone ({n[Z_OURS] + n[Z_OURS_N]} rows, marked in the table); where a spread is zero or a "
          f"side has n = 1, no z is computed and only the published rounding decides ({n[ROUNDING]} rows). A gap "
          f"within the published rounding is always consistent.{' ' + how if how else ''}\n\n"
          + comparison_table(rows))
  return "Published figures beside ours", text + (f"\n\n{after}" if after else "")


def claim_counts(rows: list[dict]) -> dict:
  out = {v: 0 for v in CLAIM_VERDICTS + ("not resolved at n=1",)}
  for r in rows:
    kind = verdict_kind(r["verdict"])
    out[kind if kind in out else "not resolved at n=1"] += 1
  out["counted"] = sum(r["verdict"] != "by construction" for r in rows)
  return out


def claims_line(rows: list[dict]) -> str:
  n = claim_counts(rows)
  unresolved = n["same direction, not resolved"] + n["opposite direction, not resolved"] + n["not resolved at n=1"]
  line = (f"{n['holds']} of {n['counted']} graded claims hold, {n['does not hold']} do not hold, {unresolved} are "
          f"not resolved ({n['same direction, not resolved']} in the published direction, "
          f"{n['opposite direction, not resolved']} against it")
  line += f", {n['not resolved at n=1']} with no interval)" if n["not resolved at n=1"] else ")"
  if n["by construction"]:
    line += f"; {n['by construction']} more are true by construction and not counted"
  return line + "."


def claims_section(rows: list[dict], note: str = ""):
  text = (f"{claims_line(rows)} A claim holds only when the 95% interval of its margin over seeds (or days, or "
          f"questions) lies on the published side; agreeing point estimates inside the noise are not resolved."
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
