"""Receipts and `jaxlab verify`: a run checked figure by figure against its committed receipt, and
the command's clean errors for a workdir that holds another run.

The experiments' own tests verify their smoke workdirs against their receipts through the same
`receipts.verify`; here only the hidden-gems smoke run (the cheapest) goes through the
`verify --all --quick` command path, and every other test works on copies of committed receipts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from jaxlab import experiments
from jaxlab.core import agreement, checkpoint, codegen, dependencies, provenance, receipts
from launch import main as launch

RECEIPT = receipts.folder("hidden_gems", "smoke")
FIGURE = "rho=0/precision/independent/g"


@pytest.fixture
def copy(tmp_path):
  """A workdir holding the receipt's own config.json and summary.json."""
  workdir = tmp_path / "run"
  workdir.mkdir()
  for name in ("config.json", "summary.json"):
    shutil.copyfile(RECEIPT / name, workdir / name)
  return workdir


def _edit(path, change):
  data = json.loads(path.read_text())
  change(data)
  path.write_text(json.dumps(data))


def test_every_experiment_with_a_receipt_has_smoke_and_its_files():
  found = receipts.find()
  assert ("hidden_gems", "smoke") in found and ("org_forms", "repro") in found
  for experiment, variant in found:
    where = receipts.folder(experiment, variant)
    for name in receipts.FILES + ("receipt.json",):
      assert (where / name).is_file(), where / name
    assert json.loads((where / "config.json").read_text())["variant"] == variant
    assert (experiment, "smoke") in found, f"{experiment} has a {variant} receipt but no smoke receipt"


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_the_receipt_itself_verifies(copy, match, capsys):
  assert launch.main(["verify", str(copy), "--match", match]) == 0
  assert "DISAGREES" not in capsys.readouterr().out


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_a_tampered_figure_fails_and_is_named(copy, match, capsys):
  # Ten seed sds off: far outside seed error as well as not bitwise equal.
  _edit(copy / "summary.json", lambda s: s["figures"][FIGURE].update(
      mean=s["figures"][FIGURE]["mean"] + 10 * s["figures"][FIGURE]["sd"]))
  assert launch.main(["verify", str(copy), "--match", match]) == 1
  out, err = capsys.readouterr()
  assert FIGURE in err and "disagrees" in err
  assert FIGURE in out and out.count("DISAGREES") == 1


def test_a_last_bit_change_fails_bitwise_but_not_within_seed_error(copy):
  _edit(copy / "summary.json", lambda s: s["figures"][FIGURE].update(
      mean=float(np.nextafter(s["figures"][FIGURE]["mean"], 2.0))))
  bitwise = receipts.verify(copy, match="bitwise")
  assert [c.name for c in bitwise.failures] == [FIGURE]
  assert receipts.verify(copy, match="seed").ok


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_an_entry_the_receipt_lacks_or_the_run_lacks_fails_and_says_which(copy, match):
  """A summary entry the code reports since the receipt was made is not vouched for by it: the
  receipt has to be made again, which a machine of another kind (within seed error) says too."""
  rest = next(k for k, v in json.loads((RECEIPT / "summary.json").read_text()).items()
              if k not in ("figures", "claims") and not isinstance(v, (dict, list)))
  _edit(copy / "summary.json", lambda s: (s.update(reported_since={"share": 1.0, "rows": [1, 2]}), s.pop(rest)))
  why = {c.name: c.why for c in receipts.verify(copy, match=match).failures}
  rows = ["reported_since.rows"] if match == "seed" else ["reported_since.rows.0", "reported_since.rows.1"]
  assert why == {**dict.fromkeys(["reported_since.share", *rows], "only in the run"), rest: "only in the receipt"}


def test_within_seed_error_a_list_of_another_length_is_the_same_entry():
  """A list's length may follow the results, which another machine kind moves."""
  a, b = {"chosen": [1, 2], "figures": {}}, {"chosen": [1], "figures": {}}
  assert [c.ok for c in agreement.compare_entries(a, b)] == [True]


def test_a_run_with_another_config_is_not_the_receipts_run(copy, capsys):
  _edit(copy / "config.json", lambda c: c.update(seeds=4))
  assert launch.main(["verify", str(copy)]) == 1
  assert "config seeds disagrees" in capsys.readouterr().err


def test_seed_error_judges_by_both_spreads():
  fig = lambda mean, sd=0.1, n=16: {"mean": mean, "sd": sd, "n": n}
  ok, _ = agreement.within_seed_error(fig(1.0), fig(1.0 + 3.9 * 0.1 * np.sqrt(2 / 16)))
  assert ok
  ok, why = agreement.within_seed_error(fig(1.0), fig(1.0 + 4.1 * 0.1 * np.sqrt(2 / 16)))
  assert not ok and "z = 4.1" in why
  assert not agreement.within_seed_error(fig(1.0), fig(1.0, n=15))[0]
  assert agreement.within_seed_error(fig(2.0, None, 1), fig(2.0, None, 1))[0]
  # No spread: a figure that differs is unchecked (None), neither passed nor failed.
  ok, why = agreement.within_seed_error(fig(2.0, None, 1), fig(2.0 + 1e-7, None, 1))
  assert ok is None and "no spread" in why


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_a_changed_claim_verdict_fails_in_every_mode(copy, match, capsys):
  claim = json.loads((RECEIPT / "summary.json").read_text())["claims"][0]["claim"]
  _edit(copy / "summary.json", lambda s: s["claims"][0].update(verdict="does not hold"))
  assert launch.main(["verify", str(copy), "--match", match]) == 1
  assert f"claim {claim} disagrees (the verdict changed)" in capsys.readouterr().err


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_a_changed_outcome_or_a_headline_outside_its_interval_fails_in_every_mode(copy, tmp_path, match):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  for where in (root / "hidden_gems" / "smoke", copy):
    _edit(where / "summary.json", lambda s: s.update(
        bar={"f1": True}, targets=[{"target": "probes", "met": True, "ours": "0.61 [0.58, 0.64]"}],
        headline={"f1": {"mean": 0.40, "ci": [0.35, 0.45], "n": 400}, "encoder": "pointer"}))
  assert receipts.verify(copy, root, match).ok
  outcomes = lambda: [c.name for c in receipts.verify(copy, root, match).failures if c.kind == "outcome"]
  _edit(copy / "summary.json", lambda s: s["targets"][0].update(met=False, ours="0.59 [0.56, 0.62]"))
  assert outcomes() == ["target: probes"]
  why = next(c.why for c in receipts.verify(copy, root, match).failures if c.kind == "outcome")
  assert why == "the outcome changed: the receipt's figure 0.61 [0.58, 0.64], the run's 0.59 [0.56, 0.62]"
  _edit(copy / "summary.json", lambda s: (s["targets"][0].update(met=True), s["bar"].update(f1=False)))
  assert outcomes() == ["bar.f1"]
  _edit(copy / "summary.json", lambda s: (s["bar"].update(f1=True), s["headline"]["f1"].update(mean=0.46)))
  failures = receipts.verify(copy, root, "bitwise").failures
  assert ("headline", "f1", "outside the receipt's interval") in [(c.kind, c.name, c.why) for c in failures]
  _edit(copy / "summary.json", lambda s: s["headline"]["f1"].update(mean=0.66, ci=[0.61, 0.71]))
  failures = receipts.verify(copy, root, "seed").failures
  assert [(c.kind, c.name) for c in failures] == [("headline", "f1")] and "> 4" in failures[0].why


def test_seed_mode_judges_a_headline_by_both_intervals():
  """Another draw of the same spread: its point falls outside the receipt's 95% interval one time
  in six (the difference of two draws has sqrt(2) times one's error), so seed mode asks for the two
  points within SEED_Z standard errors of their difference, each read from its interval's facing side."""
  rng = np.random.default_rng(0)
  entry = lambda m, se: {"mean": m, "ci": [m - 1.96 * se, m + 1.96 * se], "n": 10}
  draws = rng.normal(0.5, 0.01, size=(4000, 2))
  outside = np.mean([not agreement.in_interval("headline", "f", entry(a, 0.01), entry(b, 0.01)).ok for a, b in draws])
  failing = np.mean([not agreement.in_interval("headline", "f", entry(a, 0.01), entry(b, 0.01), seed=True).ok
                     for a, b in draws])
  assert 0.14 < outside < 0.19 and failing < 0.002
  # A shift of 4.5 standard errors of the difference fails; the one-sided interval at 1.0 is read on its open side.
  assert not agreement.in_interval("headline", "f", entry(0.5, 0.01), entry(0.5 + 4.5 * 0.01 * np.sqrt(2), 0.01),
                                   seed=True).ok
  auc = lambda m, lo: {"mean": m, "ci": [lo, 1.0], "n": 10}
  check = agreement.in_interval("headline", "auc", auc(0.9976, 0.9929), auc(0.9914, 0.9676), seed=True)
  assert check.ok and check.why.startswith("z = 1.")
  assert agreement.in_interval("headline", "auc", auc(1.0, 1.0), auc(1.0, 1.0), seed=True).ok
  assert agreement.in_interval("headline", "auc", auc(1.0, 1.0), {"mean": 0.9, "ci": [0.9, 0.9]}, seed=True).ok is None


def test_an_unresolved_estimates_side_is_judged_by_its_margin_in_seed_mode(copy, tmp_path):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  claim = lambda diff, verdict: lambda s: s["claims"][0].update(
      verdict=verdict, interval={"ci": [diff - 0.02, diff + 0.02], "diff": diff, "n": 10, "p": 0.5})
  _edit(root / "hidden_gems" / "smoke" / "summary.json", claim(0.004, "same direction, not resolved at n=10"))
  _edit(copy / "summary.json", claim(-0.001, "opposite direction, not resolved at n=10"))
  result = receipts.verify(copy, root, "seed")
  assert result.ok and [c.why for c in result.checks if c.kind == "claim" and "side" in c.why]
  assert not receipts.verify(copy, root, "bitwise").ok
  _edit(copy / "summary.json", claim(-0.2, "opposite direction, not resolved at n=10"))   # 14 standard errors away
  assert [c.why for c in receipts.verify(copy, root, "seed").failures] == [
      "an unresolved estimate's side changed and its margin moved beyond seed error"]


def test_a_number_against_none_is_unchecked_and_a_missing_leaf_fails():
  censored = lambda steps, hi: {"budget": 16384, "ci": [15360.0, hi], "n": 10, "reached": 0.5, "steps": steps}
  assert agreement.leaf_by_leaf(censored(16384.0, None), censored(None, None))[0] is None
  assert agreement.leaf_by_leaf(censored(16384.0, None), censored(16384.0, 16384.0))[0] is None
  assert agreement.leaf_by_leaf(censored(16384.0, None), censored(16384.0, None))[0] is True
  assert agreement.leaf_by_leaf(censored(16384.0, None), {"budget": 16384, "n": 10})[0] is False
  assert agreement.leaf_by_leaf({"rule": "first"}, {"rule": None})[0] is False


def test_a_verdict_changed_at_its_boundary_still_fails_and_says_so(copy, tmp_path):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  claim = lambda ci, verdict: lambda s: s["claims"][0].update(
      verdict=verdict, interval={"ci": ci, "diff": ci[0] / 2, "n": 10, "p": 0.05})
  _edit(root / "hidden_gems" / "smoke" / "summary.json", claim([-0.0855, 0.0001], "opposite direction, not resolved"))
  _edit(copy / "summary.json", claim([-0.0884, -0.0014], "does not hold"))
  failures = receipts.verify(copy, root, "seed").failures
  assert [c.kind for c in failures] == ["claim"]
  assert failures[0].why.startswith("the verdict changed at its boundary") and "0.0001 from zero" in failures[0].why
  _edit(copy / "summary.json", claim([-0.9, -0.5], "does not hold"))
  assert [c.why for c in receipts.verify(copy, root, "seed").failures] == ["the verdict changed"]


def test_figures_without_a_spread_are_unchecked_not_passed(copy, tmp_path):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  for where, value in ((root / "hidden_gems" / "smoke", 0.9624), (copy, 0.9540)):
    _edit(where / "summary.json", lambda s: s["figures"].update(aurc={"mean": value, "sd": None, "n": 12}))
  result = receipts.verify(copy, root, "seed")
  assert result.ok and [c.name for c in result.unchecked] == ["aurc"]
  assert "unchecked" in result.table()


@pytest.mark.parametrize("match", ["bitwise", "seed"])
def test_a_programs_peak_memory_agrees_within_its_tolerance_in_every_mode(copy, tmp_path, match):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  name = "all/system/peak_memory_gb"
  _edit(root / "hidden_gems" / "smoke" / "summary.json",
        lambda s: s["figures"].update({name: {"mean": 0.006739712, "sd": None, "n": 1}}))
  for value, ok in ((0.00673968, True), (0.006739712 * (1 + 0.9 * agreement.MEMORY_TOLERANCE), True),
                    (0.006739712 * (1 + 1.1 * agreement.MEMORY_TOLERANCE), False)):
    _edit(copy / "summary.json", lambda s: s["figures"].update({name: {"mean": value, "sd": None, "n": 1}}))
    result = receipts.verify(copy, root, match)
    assert result.ok is ok and [c.kind for c in result.checks if c.name == name] == ["memory"]
    assert [c.name for c in result.failures] == ([] if ok else [name])


def test_timing_is_checked_within_its_own_interval(copy, tmp_path):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  meta = root / "hidden_gems" / "smoke" / "receipt.json"   # a receipt of this machine kind
  meta.write_text(json.dumps({**json.loads(meta.read_text()), "machine": provenance.machine()}))
  timing = lambda mean: {"latency_ratio": {"mean": mean, "ci": [mean - 0.1, mean + 0.1], "n": 16},
                         "latency_s": [0.1, 0.2]}
  (root / "hidden_gems" / "smoke" / "timing.json").write_text(json.dumps(timing(2.8)))
  assert not receipts.verify(copy, root, "seed").ok            # the run wrote none
  (copy / "timing.json").write_text(json.dumps(timing(2.85)))
  assert receipts.verify(copy, root, "seed").ok
  (copy / "timing.json").write_text(json.dumps(timing(2.2)))       # 21% slower: beyond run-to-run drift
  assert [c.name for c in receipts.verify(copy, root, "seed").failures] == ["latency_ratio"]
  # A run's own interval that meets the receipt's agrees, though its point lies outside.
  (copy / "timing.json").write_text(json.dumps({"latency_ratio": {"mean": 2.65, "ci": [2.55, 2.75], "n": 16}}))
  assert receipts.verify(copy, root, "seed").ok
  # An interval that misses the receipt's by a move within the drift of wall-clock ratios: shown, unchecked.
  (copy / "timing.json").write_text(json.dumps({"latency_ratio": {"mean": 3.2, "ci": [3.1, 3.3], "n": 16}}))
  result = receipts.verify(copy, root, "seed")
  assert result.ok and [(c.ok, c.why) for c in result.checks if c.name == "latency_ratio"] == [
      (None, "moved +14%, within the 20% a wall-clock ratio drifts between runs on one machine")]
  (copy / "timing.json").write_text(json.dumps({"latency_ratio": {"mean": 3.4, "ci": [3.3, 3.5], "n": 16}}))
  assert not receipts.verify(copy, root, "seed").ok
  # Absolute seconds move with the machine's state (both systems alike): shown, unchecked; ratios judged.
  seconds = lambda s, ratio: {"pager": {"question": {"mean": s, "ci": [0.98 * s, 1.02 * s], "n": 16}},
                              "cpu_ratio": {"mean": ratio, "ci": [ratio - 0.1, ratio + 0.1], "n": 16}}
  (root / "hidden_gems" / "smoke" / "timing.json").write_text(json.dumps(seconds(0.0060, 2.9)))
  (copy / "timing.json").write_text(json.dumps(seconds(0.0055, 2.95)))
  result = receipts.verify(copy, root, "seed")
  assert result.ok and [c.ok for c in result.checks if c.name == "pager.question"] == [None]
  (copy / "timing.json").write_text(json.dumps(seconds(0.0055, 2.2)))
  assert [c.name for c in receipts.verify(copy, root, "seed").failures] == ["cpu_ratio"]
  # A receipt made on other hardware: its ratios are shown, not judged.
  other = {**provenance.machine(), "cpu_features": ["avx", "avx2", "fma", "avx512f"]}
  meta.write_text(json.dumps({**json.loads(meta.read_text()), "machine": other}))
  result = receipts.verify(copy, root, "seed")
  assert result.ok and [(c.ok, c.why) for c in result.checks if c.name == "cpu_ratio"] == [
      (None, "a ratio measured on other hardware (verdicts that cite timing.json are judged)")]
  meta.write_text(json.dumps({**json.loads(meta.read_text()), "machine": {**provenance.machine(), "jax": "0.0"}}))
  assert [c.name for c in receipts.verify(copy, root, "seed").failures] == ["cpu_ratio"]   # software alone: judged


def test_report_verdicts_are_read_from_its_tables():
  text = ("# r\n\n| claim | ours | verdict |\n|---|---|---|\n| a beats b | 1 vs 0 | holds |\n"
          "| c | 2 | does not hold |\n\nprose | not a table\n\n| target | met |\n|---|---|\n| probes | no |\n")
  assert agreement.report_verdicts(text) == {"claim | a beats b": "holds", "claim | c": "does not hold",
                                            "target | probes": "no"}
  timed = text + "| latency, 2.4x (timing.json) | no |\n"
  assert agreement.report_verdicts(timed)["target | latency, 2.4x (timing.json)"] == "no"
  assert "target | latency, 2.4x (timing.json)" not in agreement.report_verdicts(timed, timed=False)


def test_a_receipt_folder_is_refused(capsys):
  assert launch.main(["verify", str(RECEIPT)]) == 2
  assert "is a receipt, not a run" in capsys.readouterr().err


def test_run_writes_provenance_and_verify_prints_both(copy, tmp_path, capsys):
  provenance.write(copy, ["run", "configs/hidden_gems.py:smoke", "--workdir", "X"])
  made = json.loads((copy / "provenance.json").read_text())
  assert made["command"] == "jaxlab run configs/hidden_gems.py:smoke --workdir X"
  assert set(provenance.VERSIONS) <= set(made["versions"]) and made["versions"]["jax"]
  assert made["cpu_isa"] == provenance.cpu_isa() and "dirty" in made and "commit" in made
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  root = tmp_path / "results"
  assert launch.main(["receipt", str(copy), "--receipts", str(root)]) == 0
  assert launch.main(["verify", str(copy), "--receipts", str(root)]) == 0
  out = capsys.readouterr().out
  assert "| provenance | receipt | run |" in out and "mode: bitwise" in out and made["command"] in out


def test_the_isa_cap_is_part_of_the_machine_kind(monkeypatch):
  monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX2")
  assert provenance.max_isa() == "AVX2"
  assert not any(f.startswith(("avx512", "amx")) for f in provenance.cpu_isa())
  assert provenance.machine()["xla_cpu_max_isa"] == "AVX2"


def test_every_receipt_names_its_commit_and_provenance():
  assert len(receipts.find()) >= 17
  for experiment, variant in sorted(receipts.find()):
    made = json.loads((receipts.folder(experiment, variant) / "receipt.json").read_text()).get("provenance", {})
    assert isinstance(made.get("commit"), str) and len(made["commit"]) == 40, (experiment, variant)
    assert made.get("versions", {}).get("jax"), (experiment, variant)


def test_receipts_lists_each_with_its_commit(capsys):
  assert launch.main(["receipts"]) == 0
  out = capsys.readouterr().out
  for experiment, variant in receipts.find():
    assert f"| {experiment}/{variant} |" in out
  assert "| last verified at | code changed since |" in out


def test_code_paths_are_the_modules_an_experiment_imports_its_config_and_weights():
  pager = set(dependencies.code_paths("latent_pager"))
  assert {"jaxlab/paging/pipeline.py", "jaxlab/lm/qwen3.py", "jaxlab/core/config.py", "jaxlab/__init__.py",
          "configs/latent_pager.py", "models/lm_base", "models/latent_pager_pointer",
          "jaxlab/core/cpu_threads.py"} <= pager
  org = dependencies.code_paths("org_forms")
  assert "jaxlab/swarm/org_forms/model.py" in org and "configs/org_forms.py" in org
  assert not any(p.startswith("jaxlab/swarm/hidden_gems") for p in org)
  for experiment in experiments.EXPERIMENTS:   # tools that only read runs leave receipts current
    assert not {"jaxlab/core/receipts.py", "jaxlab/core/agreement.py", "jaxlab/core/dependencies.py",
                "jaxlab/core/export.py"} & set(dependencies.code_paths(experiment))


def test_a_receipts_config_file_counts_only_where_its_variant_reads_differently():
  ran = json.loads((receipts.RESULTS / "latent_pager" / "cpu" / "config.json").read_text())
  paths = dependencies.code_paths("latent_pager", ran)
  # The variant as it reads today is the one the receipt ran: other variants of the file may change.
  assert "configs/latent_pager.py" not in paths and "jaxlab/paging/pipeline.py" in paths
  # Only the weights it reads: not the other shipped models the file names.
  assert {p for p in paths if p.startswith("models/")} == {"models/lm_base", "models/latent_pager_pointer"}
  assert "configs/latent_pager.py" in dependencies.code_paths("latent_pager", dict(ran, seed=ran["seed"] + 1))
  assert "configs/latent_pager.py" in dependencies.code_paths("latent_pager", dict(ran, variant="no_such_variant"))


def test_imports_are_found_inside_functions_relative_and_over_lines(tmp_path):
  file = tmp_path / "m.py"
  file.write_text("import os\nfrom . import sibling\n\ndef f():\n  from ..core import (config,\n    mesh)\n"
                  "  import jaxlab.lm.qwen3\n")
  assert dependencies.imported(file, "jaxlab.paging.m") == {
      "jaxlab.paging", "jaxlab.paging.sibling", "jaxlab.core", "jaxlab.core.config", "jaxlab.core.mesh",
      "jaxlab.lm.qwen3"}


def test_a_clean_runs_agreement_is_recorded_and_makes_the_receipt_current(copy, tmp_path, capsys):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  head = provenance.git("rev-parse", "HEAD")
  made = json.loads((RECEIPT / "receipt.json").read_text())["provenance"]
  verified = root / "hidden_gems" / "smoke" / receipts.VERIFIED

  (copy / "provenance.json").write_text(json.dumps(dict(made, commit=head, dirty=True)))
  assert launch.main(["verify", str(copy), "--receipts", str(root), "--record"]) == 0
  assert "not recorded: the run's code was not a clean commit" in capsys.readouterr().err
  assert not verified.exists()
  row, = receipts.listing(root)
  assert row["verified"] is None and row["commit"] == made["commit"]

  (copy / "provenance.json").write_text(json.dumps(dict(made, commit=head, dirty=False)))
  assert launch.main(["verify", str(copy), "--receipts", str(root), "--record"]) == 0
  assert f"recorded in {verified}" in capsys.readouterr().out
  record = json.loads(verified.read_text())
  assert record["commit"] == head and record["match"] in receipts.MATCHES and record["unchecked"] == 0
  assert record["agree"] > 100 and record["machine"] == provenance.machine()
  row, = receipts.listing(root)
  assert row["verified"]["commit"] == head and row["code_changed_since"] == []   # counted from the later commit
  assert f"| {head[:12]} ({record['match']}, {record['date']}) | no |" in receipts.listing_table([row])
  receipts.save(copy, root)                      # a remade receipt: the old check says nothing about it
  assert not verified.exists() and receipts.listing(root)[0]["verified"] is None

  _edit(copy / "summary.json", lambda s: s["figures"][FIGURE].update(
      mean=s["figures"][FIGURE]["mean"] + 10 * s["figures"][FIGURE]["sd"]))
  assert launch.main(["verify", str(copy), "--receipts", str(root), "--record"]) == 1
  assert re.search(r"not recorded: \d+ disagree", capsys.readouterr().err) and not verified.exists()


def test_receipt_command_writes_what_verify_reads(copy, tmp_path, capsys):
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  root = tmp_path / "results"
  assert launch.main(["receipt", str(copy), "--receipts", str(root)]) == 0
  meta = json.loads((root / "hidden_gems" / "smoke" / "receipt.json").read_text())
  assert meta["match"] == "bitwise" and meta["machine"] == provenance.machine()
  assert meta["provenance"]["versions"]["jax"]
  result = receipts.verify(copy, root)
  assert result.ok and result.match == "bitwise" and "this is that kind" in result.note
  _edit(root / "hidden_gems" / "smoke" / "receipt.json", lambda m: m["machine"].update(backend="tpu"))
  assert receipts.verify(copy, root).match == "seed"            # another machine kind: within seed error


def test_a_cpu_of_another_model_with_the_same_extensions_is_another_machine_kind(copy, tmp_path):
  """Two CPUs with the same vector extensions can round differently (the smoke receipts of an AMD
  EPYC with AVX-512 disagree in their last bits on an Intel Xeon with its AMX capped off), so the
  CPU's model is part of the kind; a kind recorded before it was is read from the provenance's CPU."""
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  root = tmp_path / "results"
  assert launch.main(["receipt", str(copy), "--receipts", str(root)]) == 0
  meta = root / "hidden_gems" / "smoke" / "receipt.json"
  here = provenance.machine()
  assert here["cpu_kind"] == provenance.cpu_kind() and receipts.verify(copy, root).match == "bitwise"
  kinds = ("AuthenticAMD family 25 model 17", "GenuineIntel family 6 model 167")
  other = next(k for k in kinds if k != here["cpu_kind"])
  _edit(meta, lambda m: m["machine"].update(cpu_kind=other))
  result = receipts.verify(copy, root)
  assert result.match == "seed" and "differs in cpu_kind" in result.note and result.ok
  # Recorded without the model: this machine's kind when its provenance names this CPU, else another.
  _edit(meta, lambda m: m["machine"].pop("cpu_kind"))
  _edit(meta, lambda m: m["provenance"].update(cpu=provenance.cpu_model()))
  assert receipts.verify(copy, root).match == "bitwise"
  _edit(meta, lambda m: m["provenance"].update(cpu="AMD EPYC" if "AMD" not in provenance.cpu_model() else "Intel Xeon"))
  assert receipts.verify(copy, root).match == "seed"
  assert provenance.kind_differences({**here, "cpu_kind": None}, here) == ["cpu_kind"]
  assert provenance.kind_differences({k: v for k, v in here.items() if k != "cpu_kind"}, here, None) == ["cpu_kind"]


def test_flags_that_change_xla_code_are_part_of_the_machine_kind(copy, tmp_path, monkeypatch):
  """An optimisation level or other emitters change a result's last bits (the suite's own flags do:
  tests/conftest.py), so a run under them meets a bitwise receipt within seed error; flags that
  leave the code as it is (forced devices, how long a collective waits) keep the kind."""
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  root = tmp_path / "results"
  inert = "--xla_force_host_platform_device_count=8 --xla_cpu_collective_call_terminate_timeout_seconds=600"
  faster = list(codegen.FAST)
  monkeypatch.setenv("XLA_FLAGS", inert)
  assert codegen.flags() == [] and "xla_codegen" not in provenance.machine()
  assert launch.main(["receipt", str(copy), "--receipts", str(root)]) == 0
  assert receipts.verify(copy, root).match == "bitwise"
  monkeypatch.setenv("XLA_FLAGS", " ".join([inert, *faster, "--xla_cpu_max_isa=AVX2"]))
  assert codegen.flags() == [*faster, "--xla_cpu_max_isa=AVX2"]
  assert provenance.machine()["xla_codegen"] == sorted(faster)   # the cap is a field of its own
  result = receipts.verify(copy, root)
  assert result.match == "seed" and "xla_codegen" in result.note and result.ok
  # A run that recorded its flags is judged by them, not by the flags of the process checking it.
  monkeypatch.setenv("XLA_FLAGS", " ".join([inert, *faster]))
  (copy / "provenance.json").write_text(json.dumps({**provenance.provenance(), "xla_codegen": []}))
  assert receipts.verify(copy, root).match == "bitwise"


def test_missing_receipt_is_a_clean_error(copy, tmp_path, capsys):
  assert launch.main(["verify", str(copy), "--receipts", str(tmp_path / "none")]) == 2
  assert "no receipt for hidden_gems:smoke" in capsys.readouterr().err


@pytest.mark.float_sensitive
def test_verify_all_quick_runs_the_smoke_variant_and_passes_from_any_directory(tmp_path, monkeypatch, capsys):
  monkeypatch.chdir(tmp_path)
  assert launch.main(["verify", "--all", "--quick", "--experiment", "hidden_gems", "--workroot", "runs"]) == 0
  out = capsys.readouterr().out
  assert "hidden_gems/smoke" in out and "DISAGREES" not in out
  assert (tmp_path / "runs" / "hidden_gems" / "smoke" / "summary.json").is_file()
  assert (tmp_path / "runs" / "hidden_gems" / "smoke" / "provenance.json").is_file()


@pytest.mark.float_sensitive
def test_trained_smoke_runs_match_their_receipts_from_any_directory(tmp_path):
  """`jaxlab verify --all --quick` for the two experiments that train (the latent pager, the
  developmental learner) as a user runs it: a fresh process on one device, outside the repository
  (a config's relative paths, the shipped base model and encoder, name places in it). Their
  training is not bitwise across device counts, so not in this process of 8 forced devices; the
  other experiments' smoke runs are checked against their receipts in their own tests."""
  # Compiled as this process compiles (so as the product does in CI's float-sensitive pass, where a
  # receipt of this machine kind is checked bitwise), its CPU thread pool sized by the cores as a
  # user's is (this process sizes it for 8 forced devices, NPROC; a trained model's last bits depend
  # on the pool's size).
  env = {k: v for k, v in os.environ.items() if k != "NPROC"}
  env.update(XLA_FLAGS=codegen.for_process(), PYTHONPATH=str(receipts.REPO))
  out = subprocess.run([sys.executable, "-m", "launch.main", "verify", "--all", "--quick",
                        "--experiment", "latent_pager", "--experiment", "developmental", "--workroot", "runs"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
  assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
  assert "| latent_pager/smoke | agrees" in out.stdout and "| developmental/smoke | agrees" in out.stdout
  assert "DISAGREES" not in out.stdout


def test_one_failing_experiment_is_reported_and_the_rest_still_checked(tmp_path, capsys):
  root = tmp_path / "results"
  shutil.copytree(RECEIPT, root / "hidden_gems" / "smoke", ignore=shutil.ignore_patterns(receipts.VERIFIED))
  shutil.copytree(RECEIPT, root / "hidden_gems" / "no_such_variant")
  code = launch.main(["verify", "--all", "--receipts", str(root), "--workroot", str(tmp_path / "runs")])
  out, err = capsys.readouterr()
  assert code == 1
  assert "unknown variant 'no_such_variant'" in err and "Traceback" not in err
  assert "| hidden_gems/smoke | agrees" in out and "| hidden_gems/no_such_variant | the run failed |" in out


# --- clean errors for a workdir that holds another run ---------------------------------------

def test_a_workdir_with_another_experiments_run_is_refused_in_one_line(copy, capsys):
  before = (copy / "config.json").read_text()
  assert launch.main(["run", "configs/org_forms.py:smoke", "--workdir", str(copy)]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and str(copy) in err and "holds another run (hidden_gems:smoke" in err
  assert (copy / "config.json").read_text() == before       # not overwritten


def test_checkpoints_of_another_sweep_are_refused_in_one_line(tmp_path, capsys):
  with checkpoint.Checkpoints(tmp_path / "checkpoints", "another-sweep") as other:
    other.save(0, {"x": np.zeros(3)}, chunk=1)
  assert launch.main(["run", "configs/hidden_gems.py:smoke", "--workdir", str(tmp_path)]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and f"{tmp_path} holds checkpoints of another run" in err


def test_a_changed_config_on_a_workdirs_checkpoints_is_refused_and_config_json_kept(copy, capsys):
  with checkpoint.Checkpoints(copy / "checkpoints", "the-first-run") as first:
    first.save(0, {"x": np.zeros(3)}, chunk=1)
  before = (copy / "config.json").read_text()
  assert launch.main(["run", "configs/hidden_gems.py:smoke", "--workdir", str(copy), "--config.seeds=4"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and "differing in seeds (3 there, 4 now)" in err
  assert (copy / "config.json").read_text() == before
