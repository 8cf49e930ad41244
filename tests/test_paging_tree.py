"""Pages of pages: the tree's shape and masks, what a node depends on (so pages cache per chunk and
per node), a node at the start as a blend of its children, and the `tree` reader of the
`references` mode end to end at the smoke size (level 0 from a frozen exported encoder)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxlab.paging import data, experiment, hybrid, pager as pager_lib, pipeline, pretrain, tree
from jaxlab.paging import train as train_lib
from jaxlab.paging.spec import PagerSpec
from tests.test_latent_pager import _load, tiny_lm_folder

D, M = 16, 2


def _tree(fanout=2, depth=2):
  return tree.PageTree(fanout, depth, M, D, encoder_depth=1, heads=2, ffn=32, rate=0.0, embed_rms=1.0,
                       rngs=nnx.Rngs(0))


@nnx.jit
def _read(t, pages, mask):
  """The tree over `pages` as the pager reads it: one compiled program, not an eager op at a time."""
  return t(pages, mask)


def _pages(real, p=7, seed=0):
  pages = jax.random.normal(jax.random.key(seed), (len(real), p, M, D))
  mask = np.arange(p)[None] < np.array(real)[:, None]
  return pages, jnp.asarray(mask)


def test_the_top_level_has_a_node_per_fanout_to_the_depth_chunks():
  assert tree.capacity(3, 2, 12) == 108 and tree.top_nodes(100, 3, 2) == 12 and tree.top_nodes(26, 3, 2) == 3
  assert tree.top_nodes(1, 2, 2) == 1 and tree.top_nodes(9, 3, 2) == 1 and tree.top_nodes(10, 3, 2) == 2
  pages, mask = _pages([7, 5, 1])
  out, out_mask = _read(_tree(), pages, mask)
  assert out.shape == (3, 2, M, D)                  # 7 chunks -> 4 nodes -> 2 nodes
  assert out_mask.tolist() == [[tree.top_nodes(n, 2, 2) > i for i in range(2)] for n in (7, 5, 1)]
  assert np.isfinite(np.asarray(out)).all()


def test_a_node_depends_on_the_chunks_under_it_alone():
  t = _tree()
  pages, mask = _pages([7])
  base, _ = _read(t, pages, mask)
  moved, _ = _read(t, pages.at[0, 5].add(1.0), mask)     # chunk 5 sits under top node 1 (chunks 4-7)
  assert np.array_equal(np.asarray(base[0, 0]), np.asarray(moved[0, 0]))
  assert not np.allclose(np.asarray(base[0, 1]), np.asarray(moved[0, 1]))
  padded, _ = _read(t, pages.at[0, 6].add(0.0), mask.at[0, 6].set(False))
  junk, _ = _read(t, pages.at[0, 6].add(5.0), mask.at[0, 6].set(False))   # a padded chunk changes nothing
  assert np.array_equal(np.asarray(padded), np.asarray(junk))


def test_at_the_start_a_node_page_is_a_blend_of_its_childrens_pages():
  t = _tree(fanout=3, depth=1)
  v = jax.random.normal(jax.random.key(1), (D,))
  pages = jnp.broadcast_to(v, (1, 6, M, D))
  out, _ = _read(t, pages, jnp.ones((1, 6), bool))
  assert np.allclose(np.asarray(out), np.broadcast_to(np.asarray(v), out.shape), atol=1e-5)


def test_a_document_beyond_the_trees_capacity_is_a_clear_error():
  with pytest.raises(ValueError, match=r"9 chunks exceeds the page tree's capacity of 8 chunks: raise expansion"):
    tree.Documents([[[1]] * 9], pages=None, capacity=8, field="expansion.tree_nodes")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """A finished `references` run at the smoke size reading BM25's chunks and the tree, level 0
  from an exported (untrained) pointer encoder."""
  root = tmp_path_factory.mktemp("tree")
  lm_folder = tiny_lm_folder(root / "lm")
  workdir = root / "run"
  base = _load("long_smoke", lm_folder, root / "export")
  setup = pipeline.Setup(base, root / "export")
  encoder = pretrain.export(pager_lib.build(PagerSpec.of(base), setup.lm), base, root / "encoder", [])
  config = _load("long_smoke", lm_folder, workdir, "--config.references.readers=('retrieval','tree')",
                 "--config.references.keep=('bm25',)", f"--config.pager.init={encoder}")
  experiment.run(config, workdir)
  return config, workdir, encoder


def test_the_tree_reader_answers_reads_every_chunk_and_is_timed(finished):
  config, workdir, _ = finished
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  assert rows and all(list(r["answers"]) == ["text_buffer_bm25", "retrieval", "tree"] for r in rows)
  summary = json.loads((workdir / "summary.json").read_text())
  assert {"f1_raw/tree", "hallucination/tree"} <= set(summary["figures"])
  assert {"f1_raw/tree-text_buffer", "hallucination/tree-text_buffer"} <= set(summary["intervals"])
  assert "the tree reader reads the pages of every chunk through 2 levels of fan-out 2" in \
      (workdir / "report.md").read_text()
  timed = json.loads((workdir / "timing.json").read_text())
  assert set(timed["systems"]) == {"text_buffer_bm25", "retrieval", "tree"} and "ratio_tree" in timed["ratio"]
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  test = [r for r in splits["test"] if not r.get("probe")]
  docs, prompts = hybrid.inputs(setup, config, "tree", test, None, level0=None)
  assert docs.items == [setup.store.chunks(r["document"]) for r in test]
  assert prompts == [config.prompts.pager.format(question=r["question"]) for r in test]


def test_the_restored_tree_answers_as_the_run_did_over_the_frozen_encoders_pages(finished):
  config, workdir, encoder = finished
  setup = pipeline.Setup(config, workdir)
  splits = data.load(data.DataSpec.of(config), workdir)
  trained = hybrid.fit(setup, config, workdir, "tree", splits, {}, restore_only=True)
  assert trained["history"][-1]["step"] > 0
  assert "tree" in trained["params"] and "encoder" not in trained["params"]
  # Level 0 is the exported encoder's pages, as the pager of that folder makes them.
  model = pager_lib.build(PagerSpec.of(config), setup.lm)
  graphdef, params = nnx.split(model)
  model = nnx.merge(graphdef, train_lib.load_into(params, pretrain.load(encoder, config)))
  r = [r for r in splits["test"] if not r.get("probe")][0]
  chunks = setup.store.chunks(r["document"])
  inputs = pager_lib.chunk_inputs([chunks], len(chunks), config.pages.chunk_tokens, setup.pad)
  want, _ = model.pages(setup.lm, {k: jnp.asarray(v) for k, v in inputs.items()})
  assert np.allclose(trained["level0"](chunks), np.asarray(want[0]), atol=1e-5)
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  test = [r for r in splits["test"] if not r.get("probe")]
  got = hybrid.answer(setup, config, "tree", trained, test, None)
  assert got["answers"] == [r["answers"]["tree"] for r in rows]
  assert np.allclose(got["confidence"], [r["confidence"]["tree"] for r in rows], rtol=0, atol=1e-5)
