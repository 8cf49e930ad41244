"""Results on disk: summary.json, published-versus-ours rows, a markdown report and its plots.

Every experiment writes the same shape of summary:
  {"experiment", "variant", "figures": {name: {"mean", "sd", "n"}}, "comparisons": [...],
   "claims": [...]}
`compare` puts a published mean +- sd beside ours and grades the gap; `claim` records a
qualitative published statement and whether it holds in our run. summary.json holds no timings,
so two runs of one config give byte-identical files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fmt(stat: dict | None, digits: int = 4) -> str:
  if not stat or stat.get("mean") is None:
    return "n/a"
  text = f"{stat['mean']:.{digits}g}"
  if stat.get("sd") is not None:
    text += f" ± {stat['sd']:.{digits}g}"
  if stat.get("n"):
    text += f" (n={stat['n']})"
  return text


def printed_resolution(text: str) -> float:
  """The rounding step of a number as printed: "0.9370" -> 1e-4, "6.6024e-03" -> 1e-7."""
  mantissa, _, exponent = text.lower().partition("e")
  decimals = len(mantissa.partition(".")[2])
  return 10.0 ** (int(exponent or 0) - decimals)


def compare(figure: str, published: tuple, ours: dict, n_published: int | None = None) -> dict:
  """A published mean (and sd over n_published seeds) beside ours, with the gap graded.

  `published` holds numbers, or strings as the source prints them (then their rounding counts as
  agreement). z is the difference over its standard error (both seed spreads); the verdict is
  `consistent` when z <= 2 or the gap is within the published rounding, `within 10%` when the
  relative gap is at most 10%, else `differs`.
  """
  p_mean, p_sd = published
  resolution = printed_resolution(p_mean) if isinstance(p_mean, str) else 0.0
  p_mean = float(p_mean)
  p_sd = None if p_sd is None else float(p_sd)
  diff = ours["mean"] - p_mean
  rel = abs(diff) / abs(p_mean) if p_mean else math.inf
  var = (ours["sd"] or 0.0) ** 2 / ours["n"]
  if p_sd is not None and n_published:
    var += p_sd**2 / n_published
  z = abs(diff) / math.sqrt(var) if var > 0 else (0.0 if diff == 0 else math.inf)
  if z <= 2 or abs(diff) <= resolution / 2:
    verdict = "consistent"
  else:
    verdict = "within 10%" if rel <= 0.10 else "differs"
  return {"figure": figure, "published": {"mean": p_mean, "sd": p_sd, "n": n_published},
          "ours": ours, "diff": diff, "rel_diff": rel, "z": z, "verdict": verdict}


def claim(text: str, published: str, ours: str, holds: bool) -> dict:
  return {"claim": text, "published": published, "ours": ours,
          "verdict": "holds" if holds else "does not hold"}


def markdown_table(headers: list[str], rows: list[list]) -> str:
  lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
  lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
  return "\n".join(lines)


def comparison_table(rows: list[dict]) -> str:
  def gap(r):
    return f"{r['diff']:+.4g} ({100 * r['rel_diff']:.1f}%, z={r['z']:.1f})"
  return markdown_table(
      ["figure", "published", "ours", "ours - published", "verdict"],
      [[r["figure"], fmt(r["published"]), fmt(r["ours"]), gap(r), r["verdict"]] for r in rows])


def claims_table(rows: list[dict]) -> str:
  return markdown_table(["claim", "published", "ours", "verdict"],
                        [[r["claim"], r["published"], r["ours"], r["verdict"]] for r in rows])


def comparisons_section(rows: list[dict], how: str = "on the difference of means", after: str = ""):
  """The report section of published figures beside ours, with the verdicts counted."""
  n = {v: sum(r["verdict"] == v for r in rows) for v in ("consistent", "within 10%", "differs")}
  text = (f"{n['consistent']} of {len(rows)} published figures are consistent with ours (|z| <= 2 {how}), "
          f"{n['within 10%']} more are within 10%, {n['differs']} differ.\n\n" + comparison_table(rows))
  return "Published figures beside ours", text + (f"\n\n{after}" if after else "")


def claims_section(rows: list[dict], note: str = ""):
  held = sum(r["verdict"] == "holds" for r in rows)
  text = f"{held} of {len(rows)} hold in our run.{' ' + note if note else ''}\n\n" + claims_table(rows)
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
