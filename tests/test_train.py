"""The one training loop (`train.fit`): resume mid-run equals an uninterrupted run, the best
checkpoint follows the rule, SIGTERM and the per-call limit save and stop on the one stop path,
a diverged step saves nothing; and its pieces: JSONL + TensorBoard metrics, the NaN stop, the
preemption flag."""

import json
import os
import signal
import struct
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxlab.core import checkpoint, train

TX = optax.adam(0.05)
TRUE_W = np.array([1.0, -2.0, 0.5], np.float32)


@jax.jit
def _update(state, x, y):
  loss, grads = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(state["w"])
  updates, opt = TX.update(grads, state["opt"], state["w"])
  return {"w": optax.apply_updates(state["w"], updates), "opt": opt}, loss, optax.tree.norm(grads)


def _batch(s):
  """Step s's batch: a function of s alone, so a resumed run repeats it."""
  x = np.random.default_rng([0, s]).normal(size=(8, 3)).astype(np.float32)
  return x, x @ TRUE_W


def _loop(total=12, eval_every=4, on_step=None, score=None, **kw):
  seen = {}

  def step(state, s):
    if on_step:
      on_step(s)
    state, loss, gnorm = _update(state, *_batch(s))
    return state, {"loss": loss, "grad_norm": gnorm}

  def evaluate(state, done, window):
    seen[done] = np.asarray(state["w"])
    return {"step": done, "train_loss": float(np.mean([w["loss"] for w in window])) if window else None,
            "error": float(np.sum((np.asarray(state["w"]) - TRUE_W) ** 2))}

  loop = train.Loop(step, total, evaluate, eval_every=eval_every,
                    best=score or (lambda record: -record["error"]), **kw)
  return loop, seen


def _fresh():
  w = jnp.zeros(3)
  return {"w": w, "opt": TX.init(w)}


def _same(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  loop, _ = _loop()
  return train.fit(loop, _fresh(), tmp_path_factory.mktemp("whole"), "fp")


def test_the_loop_learns_and_evaluates_on_its_cadence(uninterrupted):
  assert [r["step"] for r in uninterrupted.history] == [4, 8, 12]
  assert uninterrupted.history[-1]["error"] < uninterrupted.history[0]["error"]
  assert uninterrupted.start == 0 and uninterrupted.step == 12 and len(uninterrupted.scalars) == 12


@pytest.mark.float_sensitive
@pytest.mark.parametrize("stop_after", [6, 8])   # between evaluations, and at one
def test_resume_mid_run_equals_an_uninterrupted_run(uninterrupted, tmp_path, stop_after):
  loop, _ = _loop(stop_after=stop_after)
  with pytest.raises(train.Stopped, match=f"stopped at step {stop_after} of 12 .its per-call step limit") as stop:
    train.fit(loop, _fresh(), tmp_path, "fp")
  assert stop.value.result.step == stop_after
  loop, _ = _loop()
  rest = train.fit(loop, _fresh(), tmp_path, "fp")
  assert rest.start == stop_after
  _same(rest.state, uninterrupted.state)
  _same(rest.best, uninterrupted.best)
  # The steps' scalars since the last evaluation were saved with the stop: the train loss of the
  # next evaluation averages the same steps as without the stop.
  assert rest.history == uninterrupted.history


def test_the_best_checkpoint_follows_the_rule(tmp_path):
  loop, seen = _loop(score=lambda record: -abs(record["step"] - 8))
  result = train.fit(loop, _fresh(), tmp_path, "fp")
  np.testing.assert_array_equal(np.asarray(result.best["w"]), seen[8])
  assert not np.array_equal(np.asarray(result.state["w"]), seen[8])
  with checkpoint.Checkpoints(tmp_path / "checkpoints", "fp", best=train.BEST) as ckpt:
    assert ckpt.best_step() == 8 and ckpt.latest_step() == 12


def test_sigterm_saves_and_the_same_call_resumes(uninterrupted, tmp_path):
  kill = lambda s: os.kill(os.getpid(), signal.SIGTERM) if s == 5 else None
  loop, _ = _loop(on_step=kill, eval_every=0)
  with pytest.raises(train.Stopped, match=r"stopped at step 6 of 12 \(SIGTERM\)"):
    train.fit(loop, _fresh(), tmp_path, "fp")
  with checkpoint.Checkpoints(tmp_path / "checkpoints", "fp", best=train.BEST) as ckpt:
    assert ckpt.latest_step() == 6
  loop, _ = _loop(eval_every=0)
  _same(train.fit(loop, _fresh(), tmp_path, "fp").state, uninterrupted.state)


def test_another_runs_checkpoints_are_refused_and_a_diverged_step_saves_nothing(tmp_path):
  loop, _ = _loop(stop_after=6)
  with pytest.raises(train.Stopped):
    train.fit(loop, _fresh(), tmp_path / "a", "fp")
  with pytest.raises(checkpoint.CheckpointMismatch, match="another run"):
    train.fit(_loop()[0], _fresh(), tmp_path / "a", "other")
  nan = {"w": jnp.full(3, jnp.nan), "opt": TX.init(jnp.zeros(3))}
  with pytest.raises(FloatingPointError, match="training diverged at step 1: loss=nan"):
    train.fit(_loop()[0], nan, tmp_path / "b", "fp")
  assert not any((tmp_path / "b" / "checkpoints").iterdir())


def test_a_fresh_state_is_built_only_when_there_is_nothing_to_resume(uninterrupted, tmp_path):
  built = []

  def fresh():
    built.append(1)
    return _fresh()
  target = checkpoint.abstract_like(_fresh())
  with pytest.raises(train.Stopped):
    train.fit(_loop(stop_after=6)[0], fresh, tmp_path, "fp", target=target)
  _same(train.fit(_loop()[0], fresh, tmp_path, "fp", target=target).state, uninterrupted.state)
  assert built == [1]


def _events(folder):
  """Scalar (tag, step, value) records from TensorBoard event files (TFRecord framing)."""
  from tensorboardX.proto import event_pb2

  out = []
  for path in sorted(folder.iterdir()):
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
      (length,) = struct.unpack("<Q", data[pos:pos + 8])
      event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
      pos += 12 + length + 4
      out += [(v.tag, event.step, v.simple_value) for v in event.summary.value]
  return out


def test_metrics_go_to_json_lines_and_tensorboard(tmp_path):
  with train.Metrics(tmp_path, "log") as m:
    m.write(1, loss=2.5, lr=np.float32(0.01), eval={"f1": 0.25}, note="text")
    m.write(2, loss=1.5)
  lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
  assert lines[0] == {"step": 1, "loss": 2.5, "lr": pytest.approx(0.01), "eval": {"f1": 0.25}, "note": "text"}
  events = _events(tmp_path / "tb")
  assert ("loss", 2, 1.5) in events and ("eval/f1", 1, 0.25) in events


def test_metrics_do_not_import_torch_and_leave_it_importable(tmp_path):
  """tensorboardX imports torch where it is installed (the test extra installs it) only to accept torch
  tensors: 2 s of every training process. Metrics import it without torch, in a fresh process."""
  code = ("import sys; from jaxlab.core import train\n"
          f"with train.Metrics({str(tmp_path)!r}, 'log') as m: m.write(1, loss=0.5)\n"
          "assert 'torch' not in sys.modules, 'torch was imported'\n"
          "import torch; print(torch.ones(2).sum().item())\n")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                        env={**os.environ, "JAX_PLATFORMS": "cpu"})
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split()[-1] == "2.0"
  assert ("loss", 1, 0.5) in _events(tmp_path / "tb")


def test_non_finite_values_stop_with_the_step_named():
  train.check_finite(3, loss=1.0, grad_norm=2.0)
  with pytest.raises(FloatingPointError, match="step 7: loss=nan, grad_norm=1.0; nothing"):
    train.check_finite(7, loss=float("nan"), grad_norm=1.0)


def test_sigterm_becomes_a_flag():
  with train.Preemption() as pre:
    assert not pre.should_stop()
    os.kill(os.getpid(), signal.SIGTERM)
    assert pre.requested and pre.should_stop()
  assert signal.getsignal(signal.SIGTERM) is not pre._handle
