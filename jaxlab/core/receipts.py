"""Reproduction receipts: a run's summary checked figure by figure against the committed one.

A receipt is the folder `results/<experiment>/<variant>/` holding what the documented command
wrote to its workdir: `config.json`, `summary.json` and `report.md`, plus `receipt.json`, which
says how it was made: {"command", "machine", "match"}. `jaxlab receipt WORKDIR` writes one;
`jaxlab verify WORKDIR` checks a run against the receipt of its experiment and variant (read from
its config.json), and `jaxlab verify --all [--quick]` reruns every receipt's variant (only the
smoke ones with --quick) and checks each.

How figures are matched (`match`):
- `bitwise`: the run is deterministic on one machine kind (backend, CPU architecture and vector
  extensions or accelerator model, jax and jaxlib versions), so on the receipt's machine kind
  every figure's mean, sd and n must be equal to the last bit, and so must the claims' verdicts
  and intervals and every other entry of the summary.
- `seed`: within seed error. Each figure's n must be equal and its means within 4 standard
  errors of their difference (both seed spreads; 4 rather than 2 because a summary holds hundreds
  of figures and both runs use the same seeds, so honest differences are far smaller); a figure
  without a spread must agree to a relative 1e-6. Claims are listed where their verdict moved,
  not failed: they follow the figures, and one near zero can flip on float noise.
A `bitwise` receipt checked on another machine kind is checked within seed error, and the
output says so. A receipt without receipt.json is checked within seed error.

Either way the run's config must equal the receipt's: a run with other settings is not the
receipt's run, and comparing its figures would mean nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import shutil
from pathlib import Path

import jax
import jaxlib

from jaxlab.core import config as config_lib
from jaxlab.core import report

RESULTS = Path(__file__).resolve().parents[2] / "results"
MATCHES = ("bitwise", "seed")
SEED_Z = 4.0
FILES = ("config.json", "summary.json", "report.md")
# x86 vector extensions that change what XLA's CPU backend emits (and so the last bits).
_ISA = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile")


def machine() -> dict:
  """The machine kind a deterministic run reproduces bitwise on."""
  device = jax.devices()[0]
  kind = {"backend": jax.default_backend(), "arch": platform.machine(), "jax": jax.__version__,
          "jaxlib": jaxlib.__version__}
  if device.platform == "cpu":
    kind["cpu_features"] = _cpu_features()
  else:
    kind["device_kind"] = device.device_kind
  return kind


def _cpu_features() -> list[str]:
  try:
    text = Path("/proc/cpuinfo").read_text()
  except OSError:
    return []
  flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
  return [f for f in _ISA if f in flags]


def folder(experiment: str, variant: str, root: Path = RESULTS) -> Path:
  return Path(root) / experiment / variant


def _read(path: Path):
  return json.loads(Path(path).read_text())


def save(workdir, root: Path = RESULTS, match: str = "bitwise") -> Path:
  """Copies a finished run's config.json, summary.json and report.md into its receipt folder and
  writes receipt.json (the command, this machine's kind, `match`). Returns the folder."""
  if match not in MATCHES:
    raise ValueError(f"match must be one of {MATCHES}, got {match!r}")
  workdir = Path(workdir)
  missing = [name for name in FILES if not (workdir / name).is_file()]
  if missing:
    raise FileNotFoundError(f"{workdir} has no {', '.join(missing)}: is it the workdir of a finished run?")
  config = _read(workdir / "config.json")
  out = folder(config["experiment"], config["variant"], root)
  out.mkdir(parents=True, exist_ok=True)
  for name in FILES:
    shutil.copyfile(workdir / name, out / name)
  command = f"jaxlab run configs/{config['experiment']}.py:{config['variant']} --workdir WORKDIR"
  report.write_json(out / "receipt.json", {"command": command, "machine": machine(), "match": match})
  return out


def find(root: Path = RESULTS, quick: bool = False, experiments=()) -> list[tuple[str, str]]:
  """(experiment, variant) of every committed receipt; only smoke variants when `quick`."""
  found = []
  for summary in sorted(Path(root).glob("*/*/summary.json")):
    experiment, variant = summary.parent.parent.name, summary.parent.name
    if (not quick or variant == "smoke") and (not experiments or experiment in experiments):
      found.append((experiment, variant))
  return found


@dataclasses.dataclass
class Check:
  """One compared entry: a figure, a claim, a config field or another summary entry."""
  kind: str            # "figure", "claim", "config", "summary"
  name: str
  receipt: object
  run: object
  ok: bool
  why: str = ""


@dataclasses.dataclass
class Verification:
  workdir: Path
  receipt: Path
  match: str           # how figures were matched: "bitwise" or "seed"
  note: str            # why that match (the receipt's, or a different machine kind)
  checks: list

  @property
  def failures(self) -> list[Check]:
    return [c for c in self.checks if not c.ok]

  @property
  def ok(self) -> bool:
    return not self.failures

  def table(self, verbose: bool = False) -> str:
    """Counts per kind, then every disagreement (every entry with `verbose`), as markdown."""
    kinds = [k for k in ("config", "figure", "claim", "summary") if any(c.kind == k for c in self.checks)]
    counts = report.markdown_table(
        ["compared", "agree", "disagree"],
        [[f"{k}s" if k != "summary" else "other summary entries", sum(c.ok for c in self.checks if c.kind == k),
          sum(not c.ok for c in self.checks if c.kind == k)] for k in kinds])
    shown = self.checks if verbose else [c for c in self.checks if not c.ok or c.why.startswith("note")]
    rows = [[c.kind, c.name, _short(c.receipt), _short(c.run), "agrees" if c.ok else "DISAGREES", c.why]
            for c in shown]
    head = (f"verify {self.workdir} against {self.receipt} ({self.match}: {self.note})\n\n{counts}")
    if not rows:
      return head
    return head + "\n\n" + report.markdown_table(["kind", "entry", "receipt", "run", "result", "why"], rows)


def _short(value) -> str:
  if isinstance(value, dict) and set(value) <= {"mean", "sd", "n"}:
    sd = value.get("sd")
    return f"{value.get('mean')!r} ± {sd!r} (n={value.get('n')})" if sd is not None else \
        f"{value.get('mean')!r} (n={value.get('n')})"
  text = json.dumps(value) if not isinstance(value, str) else value
  return text if len(text) <= 60 else text[:57] + "..."


def _flat(tree, prefix="") -> dict:
  if isinstance(tree, dict):
    out = {}
    for k, v in tree.items():
      out.update(_flat(v, f"{prefix}{k}."))
    return out
  if isinstance(tree, list):
    out = {}
    for i, v in enumerate(tree):
      out.update(_flat(v, f"{prefix}{i}."))
    return out
  return {prefix[:-1]: tree}


def _number(x):
  if isinstance(x, str) and x in ("inf", "-inf"):
    return float(x)
  return x


def _within_seed_error(a: dict, b: dict) -> tuple[bool, str]:
  if a.get("n") != b.get("n"):
    return False, f"n {a.get('n')} vs {b.get('n')}"
  x, y = _number(a.get("mean")), _number(b.get("mean"))
  if x is None or y is None:
    return x is None and y is None, "" if x is None and y is None else "one mean is missing"
  if x == y:
    return True, ""
  n = a.get("n") or 1
  se2 = sum((s or 0.0) ** 2 / n for s in (a.get("sd"), b.get("sd")))
  if se2 > 0 and math.isfinite(se2):
    z = abs(x - y) / math.sqrt(se2)
    return z <= SEED_Z, f"z = {z:.2f}" + ("" if z <= SEED_Z else f" > {SEED_Z:g}")
  rel = abs(x - y) / max(1.0, abs(x), abs(y))
  return rel <= 1e-6, f"no spread to judge by; relative gap {rel:.2g}"


def _compare_figures(receipt: dict, run: dict, match: str) -> list[Check]:
  checks = []
  for name in sorted(set(receipt) | set(run)):
    a, b = receipt.get(name), run.get(name)
    if a is None or b is None:
      checks.append(Check("figure", name, a, b, False, "only in the " + ("run" if a is None else "receipt")))
    elif match == "bitwise":
      checks.append(Check("figure", name, a, b, a == b, "" if a == b else "not bitwise equal"))
    else:
      ok, why = _within_seed_error(a, b)
      checks.append(Check("figure", name, a, b, ok, why))
  return checks


def _compare_claims(receipt: list, run: list, match: str) -> list[Check]:
  checks = []
  by_text = {c["claim"]: c for c in run}
  for c in receipt:
    other = by_text.pop(c["claim"], None)
    if other is None:
      checks.append(Check("claim", c["claim"], c["verdict"], None, False, "only in the receipt"))
    elif match == "bitwise":
      same = other == c
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], same,
                          "" if same else "verdict, interval or numbers not bitwise equal"))
    else:
      moved = other["verdict"] != c["verdict"]
      checks.append(Check("claim", c["claim"], c["verdict"], other["verdict"], True,
                          "note: the verdict moved (graded on figures within seed error)" if moved else ""))
  for text, other in by_text.items():
    checks.append(Check("claim", text, None, other["verdict"], False, "only in the run"))
  return checks


def _compare_rest(receipt: dict, run: dict) -> list[Check]:
  """Bitwise: every other entry of the summary (comparison rows, learned parameters, ...)."""
  strip = lambda s: {k: v for k, v in s.items() if k not in ("figures", "claims")}
  a, b = _flat(strip(receipt)), _flat(strip(run))
  checks = [Check("summary", path, a.get(path), b.get(path), a.get(path) == b.get(path),
                  "" if a.get(path) == b.get(path) else "not bitwise equal")
            for path in sorted(set(a) | set(b))]
  return checks


def verify(workdir, root: Path = RESULTS, match: str | None = None) -> Verification:
  """Checks the finished run in `workdir` against its committed receipt.

  `match` forces "bitwise" or "seed"; None takes the receipt's, falling back to "seed" on another
  machine kind. Raises FileNotFoundError when the run or the receipt is missing.
  """
  workdir = Path(workdir)
  for name in ("config.json", "summary.json"):
    if not (workdir / name).is_file():
      raise FileNotFoundError(f"{workdir / name} is missing: is {workdir} the workdir of a finished run?")
  config, summary = _read(workdir / "config.json"), _read(workdir / "summary.json")
  where = folder(config["experiment"], config["variant"], root)
  if not (where / "summary.json").is_file():
    raise FileNotFoundError(f"no receipt for {config['experiment']}:{config['variant']} at {where} "
                            "(write one with `jaxlab receipt WORKDIR` after the documented run)")
  meta = _read(where / "receipt.json") if (where / "receipt.json").is_file() else {}
  if match is not None:
    note = "asked for"
  elif meta.get("match") == "bitwise" and meta.get("machine") == machine():
    match, note = "bitwise", "the receipt's machine kind"
  elif meta.get("match") == "bitwise":
    match, note = "seed", "the receipt is bitwise on another machine kind, so within seed error here"
  else:
    match, note = "seed", "the receipt asks for seed error" if meta else "the receipt records no machine"
  checks = []
  receipt_config = _read(where / "config.json") if (where / "config.json").is_file() else None
  if receipt_config is not None:
    a, b = config_lib.fields(receipt_config), config_lib.fields(config)
    checks += [Check("config", f, a.get(f), b.get(f), False, "the run's config differs from the receipt's")
               for f in config_lib.differences(receipt_config, config)]
    if checks:  # another config's figures say nothing about this receipt
      return Verification(workdir, where, match, note, checks)
    checks.append(Check("config", "config.json", "equal", "equal", True))
  receipt = _read(where / "summary.json")
  checks += _compare_figures(receipt.get("figures", {}), summary.get("figures", {}), match)
  checks += _compare_claims(receipt.get("claims", []), summary.get("claims", []), match)
  if match == "bitwise":
    checks += _compare_rest(receipt, summary)
  return Verification(workdir, where, match, note, checks)
