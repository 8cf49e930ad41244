"""The Flax Qwen3 decoder: prefill and generation speed against transformers, and MFU on a GPU.

  python benchmarks/lm.py                 # CPU: a small random Qwen3, jaxlab vs transformers (PyTorch)
  python benchmarks/lm.py --size gpu      # the Qwen3-1.7B shape, random bf16 weights: forward-pass MFU

CPU mode builds one random model with transformers, saves it, and loads the same weights into
jaxlab (`jaxlab.lm.checkpoint_io.load`); both then prefill the same batch and greedily generate
the same number of tokens (no EOS), each timed after a warm-up call, in one run. GPU mode times
jaxlab's jitted forward pass at the Qwen3-1.7B shape and reports model FLOPs utilization:
(2 x non-embedding parameters + 4 x layers x context x heads x head_dim) FLOPs per token (the
attention term for full, not causal, attention scores), over the device's peak bf16 rate.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

SIZES = {
    "cpu": dict(layers=4, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=768, vocab=4096,
                batch=4, prompt=256, gen_prompt=32, new_tokens=64),
    "gpu": dict(layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128, ffn=6144, vocab=151936,
                batch=8, prompt=2048),
}


def _best(fn, repeats=3):
  fn()
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
  return min(times)


def cpu(s):
  import jax
  import numpy as np
  import torch
  import transformers

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
  ours = checkpoint_io.load(folder)
  rng = np.random.default_rng(0)
  b, t, g, n = s["batch"], s["prompt"], s["gen_prompt"], s["new_tokens"]
  ids = rng.integers(1, s["vocab"], (b, t))
  mask = np.ones((b, t), bool)
  print(f"model: {s['layers']} layers, d={s['hidden']}, vocab {s['vocab']}; torch threads "
        f"{torch.get_num_threads()}, jax devices {jax.device_count()}")

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


def gpu(s, peak_tflops: float):
  import jax
  import jax.numpy as jnp
  import numpy as np
  from flax import nnx

  from jaxlab.lm.qwen3 import Qwen3, Qwen3Config, forward

  cfg = Qwen3Config(vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["ffn"],
                    num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                    num_key_value_heads=s["kv_heads"], head_dim=s["head_dim"], rms_norm_eps=1e-6,
                    rope_theta=1e6, tie_word_embeddings=True)
  model = Qwen3(cfg, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
  b, t = s["batch"], s["prompt"]
  ids = np.random.default_rng(0).integers(0, s["vocab"], (b, t))
  mask = np.ones((b, t), bool)
  seconds = _best(lambda: jax.block_until_ready(forward(model, ids, mask)), 5)
  state = nnx.state(model, nnx.Param)
  params = sum(x.size for x in jax.tree.leaves(state))
  non_embedding = params - s["vocab"] * s["hidden"]
  per_token = 2 * non_embedding + 2 * s["vocab"] * s["hidden"] + 4 * s["layers"] * t * s["heads"] * s["head_dim"]
  tflops = per_token * b * t / seconds / 1e12
  print(f"device: {jax.devices()[0].device_kind}; {params / 1e9:.2f}B parameters, batch {b} x {t} tokens")
  print(f"forward: {seconds * 1e3:.1f} ms = {b * t / seconds:,.0f} tokens/s = {tflops:.0f} TFLOP/s")
  print(f"MFU   : {100 * tflops / peak_tflops:.1f}% of {peak_tflops:.0f} TFLOP/s bf16 peak")


def main():
  args = common.start(__doc__, SIZES, lambda p: p.add_argument(
      "--peak-tflops", type=float, default=989.0, help="the device's dense bf16 peak (H100/H200 SXM: 989)"))
  if args.size == "gpu":
    gpu(SIZES["gpu"], args.peak_tflops)
  else:
    cpu(SIZES["cpu"])


if __name__ == "__main__":
  main()
