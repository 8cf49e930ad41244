"""Reproduction receipts: a run's summary checked entry by entry against the committed one.

A receipt is the folder `results/<experiment>/<variant>/` holding what the documented command
wrote to its workdir: `config.json`, `summary.json`, `report.md` (and `timing.json` where the run
measured wall-clock figures; smoke receipts keep none: their few timed questions on a busy test
machine say nothing), plus `receipt.json`: the command, the machine kind, how figures are matched,
and the run's provenance (git commit and whether the tree was dirty, the versions of jaxlab and
its numeric libraries, the device, the CPU instruction set XLA generated code for, the command
line). `jaxlab run` writes that provenance to the workdir; `jaxlab receipt WORKDIR` makes the
receipt; `jaxlab verify WORKDIR` checks a run against the receipt of its experiment and variant;
`jaxlab verify --all [--quick]` reruns every receipt's variant (only smoke with --quick) and
checks each (`--record` writes `verified.json` beside a receipt a clean commit's run agrees with);
`jaxlab receipts` lists the receipts and whether the files their results depend on changed since
the later of their commit and their last recorded verification.

How figures, claims, intervals and report.md are matched (bitwise on the receipt's machine kind,
else within seed error): `jaxlab/core/agreement.py`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import shutil
from pathlib import Path

from jaxlab.core import agreement, dependencies
from jaxlab.core import config as config_lib
from jaxlab.core import provenance as provenance_lib
from jaxlab.core import report
from jaxlab.core.agreement import KINDS, TIMING, Check

REPO = config_lib.REPO
RESULTS = REPO / "results"
MATCHES = ("bitwise", "seed")
FILES = ("config.json", "summary.json", "report.md")
VERIFIED = "verified.json"


def folder(experiment: str, variant: str, root: Path = RESULTS) -> Path:
  return Path(root) / experiment / variant


def _read(path: Path):
  return json.loads(Path(path).read_text())


def save(workdir, root: Path = RESULTS, match: str = "bitwise") -> Path:
  """Copies a finished run's config.json, summary.json, report.md (and timing.json, except for
  smoke variants) into its receipt folder, drops the folder's verified.json (it checked another
  run) and writes receipt.json: the command, this machine's
  kind, `match` and the run's provenance (the workdir's, or this process's when the run wrote
  none). Returns the folder."""
  if match not in MATCHES:
    raise ValueError(f"match must be one of {MATCHES}, got {match!r}")
  workdir = Path(workdir)
  missing = [name for name in FILES if not (workdir / name).is_file()]
  if missing:
    raise FileNotFoundError(f"{workdir} has no {', '.join(missing)}: is it the workdir of a finished run?")
  config = _read(workdir / "config.json")
  out = folder(config["experiment"], config["variant"], root)
  out.mkdir(parents=True, exist_ok=True)
  timed = (workdir / TIMING).is_file() and config["variant"] != "smoke"
  for name in FILES + ((TIMING,) if timed else ()):
    shutil.copyfile(workdir / name, out / name)
  if not timed and (out / TIMING).exists():
    (out / TIMING).unlink()
  if (out / VERIFIED).exists():   # a check of the run this receipt replaces says nothing about this one
    (out / VERIFIED).unlink()
  command = f"jaxlab run configs/{config['experiment']}.py:{config['variant']} --workdir WORKDIR"
  made = provenance_lib.read(workdir) or provenance_lib.provenance()
  report.write_json(out / "receipt.json", {"command": command, "machine": provenance_lib.machine(made), "match": match,
                                           "provenance": made})
  return out


def find(root: Path = RESULTS, quick: bool = False, experiments=()) -> list[tuple[str, str]]:
  """(experiment, variant) of every committed receipt; only smoke variants when `quick`."""
  found = []
  for summary in sorted(Path(root).glob("*/*/summary.json")):
    experiment, variant = summary.parent.parent.name, summary.parent.name
    if (not quick or variant == "smoke") and (not experiments or experiment in experiments):
      found.append((experiment, variant))
  return found


def is_receipt(path, root: Path = RESULTS) -> bool:
  """Whether `path` is a receipt folder (under the receipts root, or holding a receipt.json)."""
  path = Path(path).resolve()
  return (path / "receipt.json").is_file() or path == Path(root).resolve() or Path(root).resolve() in path.parents


@dataclasses.dataclass
class Verification:
  workdir: Path
  receipt: Path
  match: str           # how figures were matched: "bitwise" or "seed"
  note: str            # why that match (the receipt's, or a different machine kind)
  checks: list
  provenance: tuple = (None, None)   # (the receipt's, the run's)

  @property
  def failures(self) -> list[Check]:
    return [c for c in self.checks if c.ok is False]

  @property
  def unchecked(self) -> list[Check]:
    return [c for c in self.checks if c.ok is None]

  @property
  def ok(self) -> bool:
    return not self.failures

  def table(self, verbose: bool = False) -> str:
    """Provenance side by side, counts per kind, then every disagreement and unchecked entry
    (every entry with `verbose`), as markdown."""
    kinds = [k for k in KINDS if any(c.kind == k for c in self.checks)]
    names = {"summary": "other summary entries", "report": "report verdicts", "memory": "peak memory figures"}
    name = lambda k: names.get(k, f"{k}s")
    counts = report.markdown_table(
        ["compared", "agree", "disagree", "unchecked"],
        [[name(k), *(sum(c.ok is v for c in self.checks if c.kind == k) for v in (True, False, None))]
         for k in kinds])
    shown = self.checks if verbose else [c for c in self.checks if c.ok is not True]
    rows = [[c.kind, c.name, agreement.short(c.receipt), agreement.short(c.run), c.result, c.why] for c in shown]
    head = (f"verify {self.workdir} against {self.receipt}\nmode: {self.match} ({self.note})\n\n"
            f"{provenance_table(*self.provenance)}\n\n{counts}")
    if not rows:
      return head
    return head + "\n\n" + report.markdown_table(["kind", "entry", "receipt", "run", "result", "why"], rows)


def _provenance_rows(p: dict | None) -> dict:
  if not p:
    return {}
  rows = {"commit": f"{(p.get('commit') or 'unknown')[:12]}{' (dirty)' if p.get('dirty') else ''}",
          "device": f"{p.get('device')} x{p.get('devices')}, {p.get('processes')} process(es)",
          "cpu": p.get("cpu"), "XLA's instruction set": " ".join(p.get("cpu_isa") or []) +
          (f" (capped at {p['xla_cpu_max_isa']})" if p.get("xla_cpu_max_isa") else ""),
          "CPU threads": p.get("cpu_threads", "not recorded"),
          "command": p.get("command")}
  if "xla_codegen" in p:
    rows["XLA flags that change its code"] = " ".join(p["xla_codegen"]) or "none"
  rows.update({name: version for name, version in (p.get("versions") or {}).items()})
  return rows


def provenance_table(receipt: dict | None, run: dict | None) -> str:
  a, b = _provenance_rows(receipt), _provenance_rows(run)
  keys = list(dict.fromkeys([*a, *b])) or ["commit"]
  return report.markdown_table(["provenance", "receipt", "run"],
                               [[k, a.get(k, "not recorded"), b.get(k, "not recorded")] for k in keys])


class NotARun(ValueError):
  """`verify` was pointed at something other than a finished run's workdir."""


def verify(workdir, root: Path = RESULTS, match: str | None = None) -> Verification:
  """Checks the finished run in `workdir` against its committed receipt.

  `match` forces "bitwise" or "seed"; None takes the receipt's, falling back to "seed" on another
  machine kind. Raises FileNotFoundError when the run or the receipt is missing, NotARun when
  `workdir` is a receipt folder.
  """
  workdir = Path(workdir)
  if is_receipt(workdir, root):
    raise NotARun(f"{workdir} is a receipt, not a run: checking a receipt against itself proves nothing. Run "
                  "its command (receipt.json) into a new workdir and verify that, or `jaxlab verify --all`")
  for name in ("config.json", "summary.json"):
    if not (workdir / name).is_file():
      raise FileNotFoundError(f"{workdir / name} is missing: is {workdir} the workdir of a finished run?")
  config, summary = _read(workdir / "config.json"), _read(workdir / "summary.json")
  where = folder(config["experiment"], config["variant"], root)
  if not (where / "summary.json").is_file():
    raise FileNotFoundError(f"no receipt for {config['experiment']}:{config['variant']} at {where} "
                            "(write one with `jaxlab receipt WORKDIR` after the documented run)")
  meta = _read(where / "receipt.json") if (where / "receipt.json").is_file() else {}
  run_made = provenance_lib.read(workdir)
  here = provenance_lib.machine(run_made)   # with the flags the run compiled with, where it recorded them
  made_on = (meta.get("provenance") or {}).get("cpu")
  recorded = meta.get("machine") or {}
  # A receipt that records no machine is bitwise on no kind, and its timing is judged as if made here.
  differ = provenance_lib.kind_differences(recorded, here, made_on)
  other_hardware = bool(recorded) and bool(set(provenance_lib.HARDWARE) & set(differ))
  if match is not None:
    note = "asked for"
  elif meta.get("match") == "bitwise" and not differ:
    match, note = "bitwise", "the receipt is deterministic on this machine kind, and this is that kind"
  elif meta.get("match") == "bitwise":
    match, note = "seed", f"the receipt is bitwise on another machine kind (differs in {', '.join(differ)})"
  else:
    match, note = "seed", "the receipt asks for seed error" if meta else "the receipt records no machine"
  verification = Verification(workdir, where, match, note, [], (meta.get("provenance"), run_made))
  checks = verification.checks
  receipt_config = _read(where / "config.json") if (where / "config.json").is_file() else None
  if receipt_config is not None:
    a, b = config_lib.fields(receipt_config), config_lib.fields(config)
    checks += [Check("config", f, a.get(f), b.get(f), False, "the run's config differs from the receipt's")
               for f in config_lib.differences(receipt_config, config)]
    if checks:  # another config's figures say nothing about this receipt
      return verification
    checks.append(Check("config", "config.json", "equal", "equal", True))
  receipt = _read(where / "summary.json")
  checks += agreement.compare_figures(receipt.get("figures", {}), summary.get("figures", {}), match)
  checks += agreement.compare_claims(receipt.get("claims", []), summary.get("claims", []), match)
  checks += agreement.compare_outcomes(receipt, summary)
  checks += agreement.compare_intervals("headline", receipt.get("headline") or {}, summary.get("headline") or {},
                              seed=match == "seed")
  if (where / TIMING).is_file():
    if (workdir / TIMING).is_file():
      checks += agreement.compare_intervals("timing", _read(where / TIMING), _read(workdir / TIMING),
                                            only_intervals=True, other_hardware=other_hardware)
    else:
      checks.append(Check("timing", TIMING, "present", None, False, "the run wrote no timing.json"))
  if (where / "report.md").is_file() and (workdir / "report.md").is_file():
    checks += agreement.compare_report((where / "report.md").read_text(), (workdir / "report.md").read_text(),
                              match == "bitwise" and not (workdir / TIMING).is_file(), (where / TIMING).is_file(),
                              seed=match == "seed")
  checks += (agreement.compare_rest if match == "bitwise" else agreement.compare_entries)(receipt, summary)
  return verification


def _latest(a: str | None, b: str | None) -> str | None:
  """Of two commits, the later one (the other being its ancestor); either when one is unknown."""
  if not (a and b):
    return a or b
  return b if provenance_lib.git("merge-base", "--is-ancestor", a, b) is not None else a


def listing(root: Path = RESULTS) -> list[dict]:
  """Every receipt with its commit, its last recorded verification, and the commits since the
  later of the two that touched its experiment's code."""
  rows = []
  for experiment, variant in find(root):
    where = folder(experiment, variant, root)
    meta = _read(where / "receipt.json") if (where / "receipt.json").is_file() else {}
    made = meta.get("provenance") or {}
    checked = _read(where / VERIFIED) if (where / VERIFIED).is_file() else {}
    commit = made.get("commit")
    since = None
    current = _latest(commit, checked.get("commit"))
    if current:
      ran = _read(where / "config.json") if (where / "config.json").is_file() else None
      paths = dependencies.code_paths(experiment, ran)
      log = provenance_lib.git("log", "--format=%h", f"{current}..HEAD", "--", *paths)
      since = None if log is None else [line for line in log.splitlines() if line]
    committed = provenance_lib.git("log", "-1", "--format=%h", "--", str(where / "summary.json"))
    rows.append({"experiment": experiment, "variant": variant, "commit": commit, "dirty": made.get("dirty"),
                 "match": meta.get("match"), "verified": checked or None, "code_changed_since": since,
                 "committed_in": committed or None})
  return rows


def record(result: Verification, root: Path = RESULTS) -> tuple[Path | None, str]:
  """Writes the receipt's verified.json after a verification that agreed: the run's commit, the
  mode and the machine kind it matched on, the counts, and the date, so `jaxlab receipts` can tell
  a receipt shown to hold at later code from one older than its code. Refuses (None and why) when
  the run disagreed, or came from a dirty tree or an unknown commit."""
  run = result.provenance[1] or {}
  if not result.ok:
    return None, f"{len(result.failures)} disagree"
  if not run.get("commit") or run.get("dirty") is not False:
    return None, "the run's code was not a clean commit (provenance.json: commit, dirty)"
  config = _read(result.workdir / "config.json")
  where = folder(config["experiment"], config["variant"], root)
  count = lambda v: sum(c.ok is v for c in result.checks)
  report.write_json(where / VERIFIED, {
      "commit": run["commit"], "date": datetime.date.today().isoformat(), "match": result.match,
      "why": result.note, "machine": provenance_lib.machine(run), "agree": count(True), "unchecked": count(None),
      "command": run.get("command")})
  return where / VERIFIED, "recorded"


def listing_table(rows: list[dict]) -> str:
  def changed(r):
    if r["commit"] is None:
      return "unknown (no commit recorded)"
    if r["code_changed_since"] is None:
      return "unknown (commit not in this checkout)"
    n = len(r["code_changed_since"])
    shown = ", ".join(r["code_changed_since"][:3]) + (", ..." if n > 3 else "")
    return f"yes: {n} commit{'s' if n > 1 else ''} ({shown})" if n else "no"

  def verified(r):
    v = r["verified"]
    return f"{v['commit'][:12]} ({v['match']}, {v['date']})" if v else "never"
  return report.markdown_table(
      ["receipt", "match", "made at commit", "summary committed in", "last verified at", "code changed since"],
      [[f"{r['experiment']}/{r['variant']}", r["match"] or "seed",
        (r["commit"] or "none")[:12] + (" (dirty)" if r["dirty"] else ""), r["committed_in"] or "not committed",
        verified(r), changed(r)] for r in rows])
