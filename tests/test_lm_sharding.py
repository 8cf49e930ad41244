"""The LM stack on a (data, fsdp, tensor) mesh of 8 forced CPU devices: sharded logits equal one
device's, parameters sit where the rules say, FSDP pretraining follows the one-device loss curve,
checkpoints restore onto other meshes and go on to the same loss, and two processes of 4 devices
train with fsdp across them."""

import json
import os
import shutil
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxlab.core import checkpoint, codegen, config as config_lib, mesh as mesh_lib, train as train_lib
from jaxlab.lm_pretrain import experiment, train as pretrain
from jaxlab.lm.generate import generate
from jaxlab.lm.qwen3 import Qwen3, Qwen3Config, forward

MESHES = [(8, 1, 1), (1, 8, 1), (2, 4, 1), (1, 4, 2), (2, 2, 2)]
CFG = Qwen3Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1e4, tie_word_embeddings=False)
# What the rules of jaxlab.core.mesh say, written out: FSDP shards the model dimension, tensor the
# heads, the MLP width and the vocabulary; the stacked layer axis and the norms are replicated.
EXPECTED = {
    "embed_tokens/embedding": ("tensor", "fsdp"), "lm_head/kernel": ("fsdp", "tensor"),
    "q_proj/kernel": (None, "fsdp", "tensor"), "k_proj/kernel": (None, "fsdp", "tensor"),
    "v_proj/kernel": (None, "fsdp", "tensor"), "o_proj/kernel": (None, "tensor", "fsdp"),
    "gate_proj/kernel": (None, "fsdp", "tensor"), "up_proj/kernel": (None, "fsdp", "tensor"),
    "down_proj/kernel": (None, "tensor", "fsdp"), "norm/weight": (None,), "layernorm/weight": (None, None),
    "q_norm/weight": (None, None), "k_norm/weight": (None, None),
}


def _mesh(shape):
  return mesh_lib.training_mesh(dict(zip(mesh_lib.TRAINING_AXES, shape)))


ONE = mesh_lib.training_mesh({"data": 1, "fsdp": 1, "tensor": 1}, devices=jax.devices()[:1])


def _model(mesh):
  return mesh_lib.create_sharded(lambda: Qwen3(CFG, rngs=nnx.Rngs(0)), mesh)


@pytest.fixture(scope="module")
def inputs():
  rng = np.random.default_rng(0)
  ids = rng.integers(0, CFG.vocab_size, (8, 12)).astype(np.int32)
  mask = np.ones_like(ids, bool)
  mask[[1, 5], :4] = False   # left padding in two rows
  return ids, mask


@pytest.fixture(scope="module")
def one_device(inputs):
  model = _model(ONE)
  return model, forward(model, *inputs, hidden_layers=(1,))


@pytest.mark.float_sensitive
@pytest.mark.parametrize("shape", MESHES, ids=lambda s: "x".join(map(str, s)))
def test_sharded_logits_equal_one_device_and_params_follow_the_rules(shape, inputs, one_device):
  mesh = _mesh(shape)
  model = _model(mesh)
  for path, var in nnx.to_flat_state(nnx.state(model)):
    name = "/".join(map(str, path))
    spec = next(v for k, v in EXPECTED.items() if name.endswith(k))
    assert var[...].sharding.is_equivalent_to(NamedSharding(mesh, P(*spec)), var.ndim), name
  if mesh.shape["fsdp"] > 1:   # the largest matrices are split, never whole on every device
    for var in (model.model.embed_tokens.embedding, model.model.layers.mlp.up_proj.kernel):
      assert not var[...].sharding.is_fully_replicated
      assert var[...].addressable_shards[0].data.size == var.size // (mesh.shape["fsdp"] * mesh.shape["tensor"])
  logits, states = forward(model, *inputs, hidden_layers=(1,))
  want_logits, want_states = one_device[1]
  real = inputs[1]
  np.testing.assert_allclose(np.asarray(logits)[real], np.asarray(want_logits)[real], atol=1e-5, rtol=0)
  np.testing.assert_allclose(np.asarray(states[0])[real], np.asarray(want_states[0])[real], atol=1e-5, rtol=0)


def test_sharded_generation_equals_one_device(inputs, one_device):
  ids, mask = inputs
  want = generate(one_device[0], ids, mask, max_new_tokens=6)
  np.testing.assert_array_equal(generate(_model(_mesh((2, 2, 2))), ids, mask, max_new_tokens=6), want)


# ----------------------------------------------------------------------------- pretraining
SMOKE = "configs/lm_pretrain.py:smoke"


# 20 steps in one curriculum stage (one row length: one compiled step per mesh).
SHORT = ["--config.steps=20", "--config.checkpoint_every=100", "--config.data.stages=((1.0, 64, 16, 24),)"]


def smoke(*overrides):
  return config_lib.load(SMOKE, [*SHORT, *overrides], validate=experiment.validate)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  """20 steps on one device."""
  return pretrain.train(smoke(), tmp_path_factory.mktemp("one"), mesh=ONE)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
  """The first 13 steps with FSDP over all 8 devices, saved."""
  workdir = tmp_path_factory.mktemp("fsdp8")
  with pytest.raises(train_lib.Stopped) as stop:
    pretrain.train(smoke("--config.stop_after=13"), workdir, mesh=_mesh((1, 8, 1)))
  return workdir, stop.value.result


def test_fsdp_pretraining_follows_the_one_device_loss_curve(uninterrupted, tmp_path):
  mesh = _mesh((2, 4, 1))
  run = pretrain.train(smoke(), tmp_path, mesh=mesh)
  np.testing.assert_allclose(run.losses, uninterrupted.losses, rtol=1e-5)
  assert np.mean(run.losses[-3:]) < np.mean(run.losses[:3])
  # Parameters keep their layout through the steps: sharded over fsdp, not gathered.
  kernel = run.model.model.layers.mlp.up_proj.kernel[...]
  assert kernel.sharding.is_equivalent_to(NamedSharding(mesh, P(None, "fsdp", "tensor")), 3)
  assert not kernel.sharding.is_fully_replicated


@pytest.mark.parametrize("shape", [(2, 4, 1), (1, 1, 1)], ids=["2x4x1", "one_device"])
def test_fsdp_checkpoint_restores_onto_another_mesh_and_continues(shape, interrupted, uninterrupted, tmp_path):
  saved_dir, first = interrupted
  assert first.step == 13
  mesh = ONE if shape == (1, 1, 1) else _mesh(shape)
  config = smoke()
  vocab = first.tokenizer.get_vocab_size()
  _, abstract, shardings = pretrain.abstract_state(config, vocab, mesh)
  with checkpoint.Checkpoints(saved_dir / "checkpoints", pretrain.fingerprint(config)) as ckpt:
    state, meta = ckpt.restore(checkpoint.abstract_like(abstract, shardings))
  assert meta["step"] == 13
  for path, var in nnx.to_flat_state(state["params"]):
    assert var[...].sharding == dict(nnx.to_flat_state(shardings["params"]))[path]
  for a, b in zip(jax.tree.leaves(state["params"]), jax.tree.leaves(nnx.state(first.model, nnx.Param)), strict=True):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # The same command on a copy of the workdir goes on from step 13 on this mesh.
  workdir = tmp_path / "resumed"
  shutil.copytree(saved_dir, workdir)
  rest = pretrain.train(config, workdir, mesh=mesh)
  assert rest.start_step == 13 and rest.step == 20
  np.testing.assert_allclose(first.losses + rest.losses, uninterrupted.losses, rtol=1e-5)


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_fsdp_across_two_processes_equals_one_process(uninterrupted, tmp_path):
  """`jaxlab run configs/lm_pretrain.py:smoke` as two processes of 4 CPU devices (gloo), with
  every parameter sharded over all 8 devices, so each process holds half of each matrix."""
  workdir, port = tmp_path / "two", _free_port()
  env = dict(os.environ, XLA_FLAGS=codegen.for_process(4), PYTHONUNBUFFERED="1")  # compiled as this process compiles
  args = ["run", SMOKE, "--workdir", str(workdir), *SHORT, "--config.mesh.data=1", "--config.mesh.fsdp=8",
          "--config.eval.num_questions=4",
          "--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
  procs = [subprocess.Popen([sys.executable, "-m", "launch.main", *args, "--process-id", str(i)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
  outs = [p.communicate(timeout=600)[0] for p in procs]
  assert all(p.returncode == 0 for p in procs), outs
  log = [json.loads(line) for line in (workdir / "train_log.jsonl").read_text().splitlines()]
  losses = {row["step"]: row["loss"] for row in log if "loss" in row}
  np.testing.assert_allclose(losses[20], uninterrupted.losses[-1], rtol=1e-5)
  assert (workdir / "hf" / "model.safetensors").is_file() and (workdir / "summary.json").is_file()
  assert (workdir / "tb").is_dir()


def _pager_loss(params, graphdef, lm_graphdef, lm_state, batch, key, suff_weight):
  """A loss through the pointer encoder and the soft tokens (the LM frozen, as in training)."""
  pager, lm = nnx.merge(graphdef, params), nnx.merge(lm_graphdef, jax.lax.stop_gradient(lm_state))
  soft = pager.soft_tokens(lm, batch, key)
  return jnp.mean((soft - 1.0) ** 2)


@pytest.mark.float_sensitive
def test_pager_params_follow_the_rules_and_a_step_keeps_them_where_they_were():
  """The pager's parameters shard under the LM's rules on a (2, 2, 2) mesh (the encoder's
  projections by their names, scalars replicated), a training step returns them where they were,
  and its loss and new parameters equal one device's."""
  from jaxlab.paging import pager as pager_lib, train as paging_train
  from jaxlab.paging.spec import PagerSpec, TrainSpec

  spec = PagerSpec(encoder="pointer", hidden_layers=(1,), chunk_tokens=8, slots_per_chunk=2, encoder_depth=1,
                   lora_rank=0, decoder_lora_rank=0, compressor_hidden=32, d_page=16, num_soft_tokens=2, depth=0,
                   heads=4, ffn=64, dropout=0.0, sufficiency=True, sufficiency_hidden=16, seed=0)
  rng = np.random.default_rng(0)
  batch = {"chunk_ids": rng.integers(0, CFG.vocab_size, (4, 3, 8)).astype(np.int32),
           "chunk_mask": np.ones((4, 3, 8), bool)}
  batch["chunk_mask"][1, 2] = False          # a padded page
  results = {}
  for name, mesh in (("one", ONE), ("sharded", _mesh((2, 2, 2)))):
    lm = _model(mesh)
    graphdef, params = nnx.split(pager_lib.build(spec, lm))
    lm_graphdef, lm_state = nnx.split(lm)
    tx, _ = paging_train.optimizer(TrainSpec(epochs=1, steps=10, batch_size=4, questions_per_row=1, eval_every=0,
                                             learning_rate=1e-2, warmup_steps=1, weight_decay=0.01, clip_norm=1.0,
                                             seed=0), 10)
    placement = paging_train.Placement.of(params, mesh)
    params, opt_state = placement.put(params, tx.init(params))
    before = {"/".join(map(str, p)): v[...].sharding for p, v in nnx.to_flat_state(params)}
    compiled = paging_train.train_step._cache_size()
    step = lambda params, opt_state: paging_train.train_step(
        params, opt_state, lm_state, mesh_lib.shard_batch(batch, mesh), jax.random.key(0), graphdef=graphdef,
        lm_graphdef=lm_graphdef, tx=tx, suff_weight=0.0, placement=placement, loss_fn=_pager_loss)
    new, opt_state, loss, _ = step(params, opt_state)
    flat = dict(nnx.to_flat_state(new))
    assert {"/".join(map(str, p)): v[...].sharding for p, v in flat.items()} == before
    results[name] = (float(loss), {p: np.asarray(v[...]) for p, v in flat.items()}, before)
    step(new, opt_state)                                            # a second step, on the first's outputs,
    assert paging_train.train_step._cache_size() == compiled + 1    # reuses its program
  specs = {p: P(*s.spec) for p, s in results["sharded"][2].items()}
  assert specs["encoder/proj/kernel"] == P("tensor", "fsdp")
  assert specs["encoder/queries"] == P(None, "fsdp")
  assert specs["encoder/point_q/kernel"] == P("fsdp", "tensor")
  assert specs["encoder/scale"] == P()
  assert specs["sufficiency/fc1/kernel"] == P("fsdp", "tensor")
  np.testing.assert_allclose(results["sharded"][0], results["one"][0], rtol=1e-5)
  for p, v in results["one"][1].items():
    np.testing.assert_allclose(results["sharded"][1][p], v, rtol=1e-4, atol=1e-6, err_msg="/".join(map(str, p)))
