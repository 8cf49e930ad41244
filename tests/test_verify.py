"""Receipts and `jaxlab verify`: a run checked figure by figure against its committed receipt, and
the command's clean errors for a workdir that holds another run.

The experiments' own tests verify their smoke workdirs against their receipts through the same
`receipts.verify`; here only the hidden-gems smoke run (the cheapest) goes through the
`verify --all --quick` command path, and every other test works on copies of committed receipts.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from jaxlab.core import receipts, train
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


def test_a_run_with_another_config_is_not_the_receipts_run(copy, capsys):
  _edit(copy / "config.json", lambda c: c.update(seeds=4))
  assert launch.main(["verify", str(copy)]) == 1
  assert "config seeds disagrees" in capsys.readouterr().err


def test_seed_error_judges_by_both_spreads():
  fig = lambda mean, sd=0.1, n=16: {"mean": mean, "sd": sd, "n": n}
  ok, _ = receipts._within_seed_error(fig(1.0), fig(1.0 + 3.9 * 0.1 * np.sqrt(2 / 16)))
  assert ok
  ok, why = receipts._within_seed_error(fig(1.0), fig(1.0 + 4.1 * 0.1 * np.sqrt(2 / 16)))
  assert not ok and "z = 4.1" in why
  assert not receipts._within_seed_error(fig(1.0), fig(1.0, n=15))[0]
  assert receipts._within_seed_error(fig(2.0, None, 1), fig(2.0 + 1e-7, None, 1))[0]
  ok, why = receipts._within_seed_error(fig(2.0, None, 1), fig(2.1, None, 1))
  assert not ok and "no spread" in why


def test_receipt_command_writes_what_verify_reads(copy, tmp_path, capsys):
  shutil.copyfile(RECEIPT / "report.md", copy / "report.md")
  root = tmp_path / "results"
  assert launch.main(["receipt", str(copy), "--receipts", str(root)]) == 0
  meta = json.loads((root / "hidden_gems" / "smoke" / "receipt.json").read_text())
  assert meta["match"] == "bitwise" and meta["machine"] == receipts.machine()
  result = receipts.verify(copy, root)
  assert result.ok and result.match == "bitwise" and result.note == "the receipt's machine kind"
  _edit(root / "hidden_gems" / "smoke" / "receipt.json", lambda m: m["machine"].update(backend="tpu"))
  assert receipts.verify(copy, root).match == "seed"            # another machine kind: within seed error


def test_missing_receipt_is_a_clean_error(copy, tmp_path, capsys):
  assert launch.main(["verify", str(copy), "--receipts", str(tmp_path / "none")]) == 2
  assert "no receipt for hidden_gems:smoke" in capsys.readouterr().err


def test_verify_all_quick_runs_the_smoke_variant_and_passes(tmp_path, capsys):
  assert launch.main(["verify", "--all", "--quick", "--experiment", "hidden_gems", "--workroot", str(tmp_path)]) == 0
  out = capsys.readouterr().out
  assert "hidden_gems/smoke" in out and "DISAGREES" not in out
  assert (tmp_path / "hidden_gems" / "smoke" / "summary.json").is_file()


# --- clean errors for a workdir that holds another run ---------------------------------------

def test_a_workdir_with_another_experiments_run_is_refused_in_one_line(copy, capsys):
  before = (copy / "config.json").read_text()
  assert launch.main(["run", "configs/org_forms.py:smoke", "--workdir", str(copy)]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and str(copy) in err and "holds another run (hidden_gems:smoke" in err
  assert (copy / "config.json").read_text() == before       # not overwritten


def test_checkpoints_of_another_sweep_are_refused_in_one_line(tmp_path, capsys):
  with train.Checkpoints(tmp_path / "checkpoints", "another-sweep") as other:
    other.save(0, {"x": np.zeros(3)}, chunk=1)
  assert launch.main(["run", "configs/hidden_gems.py:smoke", "--workdir", str(tmp_path)]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and f"{tmp_path} holds checkpoints of another run" in err


def test_a_changed_config_on_a_workdirs_checkpoints_is_refused_and_config_json_kept(copy, capsys):
  with train.Checkpoints(copy / "checkpoints", "the-first-run") as first:
    first.save(0, {"x": np.zeros(3)}, chunk=1)
  before = (copy / "config.json").read_text()
  assert launch.main(["run", "configs/hidden_gems.py:smoke", "--workdir", str(copy), "--config.seeds=4"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0 and "differing in seeds (3 there, 4 now)" in err
  assert (copy / "config.json").read_text() == before
