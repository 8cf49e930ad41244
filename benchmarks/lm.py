"""The Flax Qwen3 decoder: speed against transformers, sharded state per device, MFU on a GPU.

  python benchmarks/lm.py                 # CPU: a small random Qwen3, jaxlab vs transformers (PyTorch)
  python benchmarks/lm.py --sharding      # 8 forced CPU devices: parameter + optimizer bytes per device, per mesh
  python benchmarks/lm.py --size gpu      # the Qwen3-1.7B shape, random bf16 weights: forward and training MFU,
                                          # and which Qwen3 sizes fit 8 x 141 GB with FSDP
  python benchmarks/lm.py --size tiny     # the --size gpu code path on a tiny model, seconds on a CPU

CPU mode builds one random model with transformers, saves it, and loads the same weights into
jaxlab (`jaxlab.lm.checkpoint_io.load`, on one device, as torch runs in one process); both then
prefill the same batch and greedily generate the same number of tokens (no EOS), each timed after
a warm-up call, in one run.

`--sharding` creates the parameters and AdamW state of a small Qwen3 (4 layers, d=256, fp32)
directly in their shards on each (data, fsdp, tensor) mesh of 8 devices and sums the bytes that
device 0 holds; the last line compares fsdp=8 with the replicated layout (data=8).

GPU mode times jaxlab's jitted forward pass and one AdamW training step (loss, gradients, update;
layers rematerialized by `--remat`) at the Qwen3-1.7B shape, on every local device with FSDP, and
reports model FLOPs utilization: (2 x matmul parameters + 4 x layers x context x heads x head_dim)
FLOPs per token forward (the attention term for full, not causal, scores), three times that for a
training step, over the devices' peak bf16 rate. It then sizes the Qwen3 family for FSDP over 8
accelerators of 141 GB (`fit_table`): per-device state from each parameter's shard shape under
the rules (bf16 parameters and gradients, fp32 Adam moments: 12 bytes per parameter, split 8
ways), plus an activation estimate (one sequence of 4,096 tokens per device, layers
rematerialized: each layer's bf16 input kept, one layer's working set with fp32 attention scores,
fp32 logits and their gradient, two layers of gathered bf16 weights), against 90% of the memory.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SIZES = {
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256, batch=2, prompt=32,
                 tie=True),
    "cpu": dict(layers=4, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=768, vocab=4096,
                batch=4, prompt=256, gen_prompt=32, new_tokens=64, tie=True),
    "gpu": dict(layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128, ffn=6144, vocab=151936,
                batch=8, prompt=2048, tie=True),
}
# The Qwen3 dense family, from each checkpoint's config.json.
FAMILY = {
    "Qwen3-1.7B": dict(layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128, ffn=6144, vocab=151936, tie=True),
    "Qwen3-4B": dict(layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128, ffn=9728, vocab=151936, tie=True),
    "Qwen3-8B": dict(layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=12288, vocab=151936, tie=False),
    "Qwen3-14B": dict(layers=40, hidden=5120, heads=40, kv_heads=8, head_dim=128, ffn=17408, vocab=151936, tie=False),
    "Qwen3-32B": dict(layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128, ffn=25600, vocab=151936, tie=False),
}
MESHES = [(8, 1, 1), (1, 8, 1), (2, 4, 1), (1, 4, 2), (2, 2, 2)]


def _best(fn, repeats=3):
  fn()
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
  return min(times)


def qwen3_config(s):
  from jaxlab.lm.qwen3 import Qwen3Config
  return Qwen3Config(vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["ffn"],
                     num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                     num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"], rms_norm_eps=1e-6,
                     rope_theta=1e6, tie_word_embeddings=s["tie"])


def cpu(s):
  import jax
  import numpy as np
  import torch
  import transformers

  from jaxlab.core import mesh as mesh_lib
  from jaxlab.lm import checkpoint_io
  from jaxlab.lm.generate import generate
  from jaxlab.lm.qwen3 import forward

  torch.manual_seed(0)
  cfg = transformers.Qwen3Config(
      vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["ffn"],
      num_hidden_layers=s["layers"], num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
      head_dim=s["head_dim"], max_position_embeddings=1024, tie_word_embeddings=True,
      eos_token_id=None, bos_token_id=None, pad_token_id=0)
  hf = transformers.Qwen3ForCausalLM(cfg).eval()
  folder = tempfile.mkdtemp(prefix="jaxlab-lm-bench-")
  hf.save_pretrained(folder)
  one = mesh_lib.training_mesh({"data": 1, "fsdp": 1, "tensor": 1}, devices=jax.devices()[:1])
  ours = checkpoint_io.load(folder, mesh=one)
  rng = np.random.default_rng(0)
  b, t, g, n = s["batch"], s["prompt"], s["gen_prompt"], s["new_tokens"]
  ids = rng.integers(1, s["vocab"], (b, t))
  mask = np.ones((b, t), bool)
  print(f"model: {s['layers']} layers, d={s['hidden']}, vocab {s['vocab']}; torch threads "
        f"{torch.get_num_threads()}, jax on one CPU device")

  jax_prefill = _best(lambda: jax.block_until_ready(forward(ours, ids, mask)))
  with torch.no_grad():
    torch_ids = torch.tensor(ids)
    torch_prefill = _best(lambda: hf(torch_ids, attention_mask=torch.ones_like(torch_ids)))
  common.report("prefill tokens", b * t, jax_prefill, None, b * t, torch_prefill, "transformers")

  prompt, pmask = ids[:, :g], mask[:, :g]
  jax_gen = _best(lambda: jax.block_until_ready(generate(ours, prompt, pmask, max_new_tokens=n)), 2)
  with torch.no_grad():
    torch_prompt = torch.tensor(prompt)
    torch_gen = _best(lambda: hf.generate(torch_prompt, attention_mask=torch.ones_like(torch_prompt),
                                          max_new_tokens=n, min_new_tokens=n, do_sample=False), 2)
  common.report("generated tokens", b * n, jax_gen, None, b * n, torch_gen, "transformers")
  print("(best of repeated calls after a warm-up call, so compilation is excluded)")


# ----------------------------------------------------------------------------- sharded state
def device_bytes(tree, device) -> int:
  """Bytes of `tree`'s arrays that live on `device`."""
  import jax
  return sum(shard.data.nbytes for x in jax.tree.leaves(tree) for shard in x.addressable_shards
             if shard.device == device)


def sharding(s):
  import jax
  import optax
  from flax import nnx

  from jaxlab.core import mesh as mesh_lib
  from jaxlab.lm.qwen3 import Qwen3

  cfg = qwen3_config(s)
  tx = optax.adamw(1e-3)
  print(f"model: {s['layers']} layers, d={s['hidden']}, FFN {s['ffn']}, vocab {s['vocab']}, fp32; AdamW; "
        f"{jax.device_count()} devices; bytes held by device 0")
  print(f"{'mesh (data, fsdp, tensor)':28s} {'params':>10s} {'optimizer':>10s} {'total':>10s} {'of replicated':>14s}")
  totals = {}
  for shape in MESHES:
    mesh = mesh_lib.training_mesh(dict(zip(mesh_lib.TRAINING_AXES, shape)))
    params = nnx.state(mesh_lib.create_sharded(lambda: Qwen3(cfg, rngs=nnx.Rngs(0)), mesh), nnx.Param)
    opt_sharding = mesh_lib.logical_sharding(jax.eval_shape(tx.init, params), mesh)
    opt_state = jax.jit(tx.init, out_shardings=opt_sharding)(params)
    device = jax.devices()[0]
    p, o = device_bytes(params, device), device_bytes(opt_state, device)
    totals[shape] = p + o
    share = 100 * totals[shape] / totals[MESHES[0]]
    print(f"{str(shape):28s} {p / 2**20:8.2f} MB {o / 2**20:8.2f} MB {(p + o) / 2**20:8.2f} MB {share:13.1f}%")
  print(f"fsdp=8 per-device state: {100 * totals[(1, 8, 1)] / totals[(8, 1, 1)]:.1f}% of replicated")


# ----------------------------------------------------------------------------- accelerator
def per_token_flops(s, params: int, context: int) -> int:
  """Forward FLOPs per token: 2 per matmul weight (the tied embedding counted again as the output
  head, the lookup costs none) and the attention scores and mix over the full context."""
  matmul = params - s["vocab"] * s["hidden"] * (0 if s["tie"] else 1)
  return 2 * matmul + 4 * s["layers"] * context * s["heads"] * s["head_dim"]


def state_bytes(s, devices: int = 8) -> tuple[int, int, int]:
  """(parameters, largest layer's parameters, per-device bytes of bf16 params + bf16 grads + fp32
  Adam moments with FSDP over `devices`), from each parameter's shard shape under the rules."""
  import math

  from flax import nnx

  from jaxlab.core import mesh as mesh_lib
  from jaxlab.lm.qwen3 import Qwen3

  model = nnx.eval_shape(lambda: Qwen3(qwen3_config(s), rngs=nnx.Rngs(0)))
  mesh_shape = {"data": 1, "fsdp": devices, "tensor": 1}
  total = per_device = layer = 0
  for _, var in nnx.to_flat_state(nnx.state(model, nnx.Param)):
    spec = mesh_lib.fitted_spec(mesh_lib.logical_names(var), var.shape, mesh_shape)
    split = math.prod(math.prod(mesh_shape[a] for a in ((x,) if isinstance(x, str) else x)) for x in spec if x)
    total += var.size
    per_device += var.size // split * (2 + 2 + 4 + 4)
    layer += var.size // s["layers"] if mesh_lib.logical_names(var)[:1] == ("layers",) else 0
  return total, layer, per_device


def activation_bytes(s, layer_params: int, seq: int = 4096) -> int:
  """Estimated activations of one sequence per device with every layer rematerialized."""
  d, f, h, v, layers = s["hidden"], s["ffn"], s["heads"], s["vocab"], s["layers"]
  kept = layers * seq * d * 2                               # each layer's bf16 input
  working = seq * (6 * d + 3 * f) * 2 + h * seq * seq * (4 + 2)   # one layer: projections, fp32 scores
  logits = seq * v * (2 + 4 + 4)                            # bf16 logits, fp32 log-softmax and its gradient
  gathered = 2 * layer_params * 2                           # FSDP: two layers' bf16 weights gathered
  return kept + working + logits + gathered


def fit_table(memory: float = 141e9, devices: int = 8, headroom: float = 0.9) -> None:
  print(f"\nFSDP over {devices} accelerators of {memory / 1e9:.0f} GB (computed, not measured): bf16 params + "
        "bf16 grads + fp32 Adam moments = 12 bytes/param, sharded by the rules; activations estimated for "
        "1 x 4,096 tokens per device, layers rematerialized")
  print(f"{'model':12s} {'params':>8s} {'state/dev':>10s} {'activ/dev':>10s} {'total/dev':>10s}  fits in "
        f"{headroom:.0%}")
  largest = None
  for name, s in FAMILY.items():
    params, layer, state = state_bytes(s, devices)
    act = activation_bytes(s, layer)
    fits = state + act <= headroom * memory
    largest = name if fits else largest
    print(f"{name:12s} {params / 1e9:7.2f}B {state / 1e9:8.1f} GB {act / 1e9:8.1f} GB {(state + act) / 1e9:8.1f} GB  "
          f"{'yes' if fits else 'no'}")
  bound = (headroom * memory - activation_bytes(FAMILY["Qwen3-32B"], state_bytes(FAMILY["Qwen3-32B"])[1]))
  print(f"largest Qwen3 that fits: {largest}; at 12/{devices} bytes per parameter per device the state alone "
        f"leaves room for about {bound / (12 / devices) / 1e9:.0f}B parameters (Qwen3-32B-shaped activations)")


def accelerator(s, peak_tflops: float, remat: str):
  import jax
  import jax.numpy as jnp
  import numpy as np
  import optax
  from flax import nnx

  from jaxlab.core import mesh as mesh_lib
  from jaxlab.lm.qwen3 import Qwen3, forward

  mesh = mesh_lib.training_mesh()   # FSDP over every local device
  cfg = qwen3_config(s)
  model = mesh_lib.create_sharded(lambda: Qwen3(cfg, dtype=jnp.bfloat16, remat=remat, rngs=nnx.Rngs(0)), mesh)
  b, t = s["batch"], s["prompt"]
  ids = np.random.default_rng(0).integers(0, s["vocab"], (b, t)).astype(np.int32)
  mask = np.ones((b, t), bool)
  seconds = _best(lambda: jax.block_until_ready(forward(model, ids, mask)), 5)
  graphdef, params = nnx.split(model, nnx.Param)
  count = sum(x.size for x in jax.tree.leaves(params))
  per_token = per_token_flops(s, count, t)
  on_cpu = jax.devices()[0].platform == "cpu"

  def mfu(tflops):
    return "MFU n/a on a CPU" if on_cpu else f"MFU {100 * tflops / (peak_tflops * mesh.size):.1f}% of " \
                                            f"{mesh.size} x {peak_tflops:.0f} TFLOP/s bf16 peak"

  tflops = per_token * b * t / seconds / 1e12
  print(f"device: {mesh.size} x {jax.devices()[0].device_kind}; {count / 1e9:.2f}B parameters, batch {b} x {t} "
        f"tokens, FSDP over {mesh.size}, remat={remat}")
  print(f"forward      : {seconds * 1e3:8.1f} ms = {b * t / seconds:12,.0f} tokens/s = {tflops:8.1f} TFLOP/s; "
        f"{mfu(tflops)}")

  # One AdamW step: bf16 parameters updated from fp32 gradients and fp32 moments.
  tx = optax.adamw(1e-5)
  moments = jax.tree.map(lambda p: p.astype(jnp.float32), params)
  opt_state = jax.jit(tx.init, out_shardings=mesh_lib.logical_sharding(jax.eval_shape(tx.init, moments), mesh))(
      moments)
  ids_d, mask_d = mesh_lib.shard_batch((ids, mask), mesh)

  @jax.jit
  def step(params, opt_state, ids, mask):
    def loss(params):
      logits, _ = nnx.merge(graphdef, params)(ids, mask)
      return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), ids[:, 1:]).mean()
    value, grads = jax.value_and_grad(loss)(params)
    grads = mesh_lib.constrain_state(jax.tree.map(lambda g: g.astype(jnp.float32), grads))
    updates, opt_state = tx.update(grads, opt_state, jax.tree.map(lambda p: p.astype(jnp.float32), params))
    return mesh_lib.constrain_state(optax.apply_updates(params, updates)), mesh_lib.constrain_state(opt_state), value

  state = {"params": params, "opt": opt_state}

  def run():
    state["params"], state["opt"], value = step(state["params"], state["opt"], ids_d, mask_d)
    jax.block_until_ready(value)

  with jax.set_mesh(mesh):
    seconds = _best(run, 3)
  tflops = 3 * per_token * b * t / seconds / 1e12
  print(f"training step: {seconds * 1e3:8.1f} ms = {b * t / seconds:12,.0f} tokens/s = {tflops:8.1f} TFLOP/s; "
        f"{mfu(tflops)}")
  fit_table()


def main():
  def add(p):
    p.add_argument("--peak-tflops", type=float, default=989.0, help="one device's dense bf16 peak (H100/H200 SXM: 989)")
    p.add_argument("--remat", choices=["none", "full", "dots"], default="dots", help="layer remat of the training step")
    p.add_argument("--sharding", action="store_true", help="per-device state bytes per mesh, 8 forced CPU devices")

  args = common.start(__doc__, SIZES, add)
  if args.sharding:
    # Eight devices whatever --cpu-devices says (the last copy of an XLA flag wins).
    os.environ["XLA_FLAGS"] += " --xla_force_host_platform_device_count=8"
    sharding(SIZES["cpu"])
  elif args.size in ("gpu", "tiny"):
    accelerator(SIZES[args.size], args.peak_tflops, args.remat)
  else:
    cpu(SIZES["cpu"])


if __name__ == "__main__":
  main()
