"""Tests of jaxlab.physics (developmental-physics spec): materials, scenes, breaking, both backends."""

import numpy as np
import pytest

from jaxlab.core.config import ConfigError
from jaxlab.physics import MATERIALS, PhysicsConfig, api, make_sim, materials, probes


def drop_trajectory(sim, action):
  """Object trajectories of one drop: qpos [n, T+1, nq], qvel [n, T+1, nv]."""
  qpos, qvel, ctrl = api.start(0, sim.config, sim.qpos, sim.qvel, sim.scene.drop_quat, action, np)
  return sim.simulate(qpos, qvel, ctrl)


@pytest.fixture(scope="module")
def long_drop():
  """32 drop scenes of every material, 1.2 s per interaction, objects dropped from 1 m."""
  config = PhysicsConfig(steps_per_interaction=(1200, 50, 50, 50), drop_height=(0.1, 1.0))
  sim = make_sim(0, 32, backend="c", seed=1, config=config)
  qpos, qvel = drop_trajectory(sim, np.ones((32, 3), np.float32))
  return sim, qpos, qvel


def test_rubber_rebounds_higher_than_wood_than_glass(long_drop):
  sim, qpos, qvel = long_drop
  z, vz = qpos[:, :, 2], qvel[:, :, 2]       # the sphere, object 0
  first_up = np.argmax(vz > 0, axis=1)
  rebound = np.array([z[e, t:].max() - 0.05 for e, t in enumerate(first_up)])   # m above the floor
  by = {m: rebound[sim.scene.material[:, 0] == MATERIALS.index(m)] for m in ("rubber", "wood", "glass")}
  assert all(len(v) >= 3 for v in by.values())
  assert by["rubber"].min() > by["wood"].max() > 0.2 > by["glass"].max()
  assert by["rubber"].min() > 0.6 and by["glass"].max() < 0.15    # fractions of the 1 m drop


def test_masses_follow_density_and_free_fall_ignores_them(long_drop):
  sim, qpos, qvel = long_drop
  mass = sim.scene.fields["body_mass"][:, 1]
  density = np.array([materials.LIBRARY[m].density for m in MATERIALS])[sim.scene.material[:, 0]]
  ratio = mass / density
  assert np.all((ratio > ratio.min() * 0.99) & (ratio < ratio.min() * 1.25 / 0.8 * 1.01))
  gravity = -sim.scene.fields["opt.gravity"][:, 2]
  np.testing.assert_allclose(-qvel[:, 10, 2], gravity * 10 * sim.config.timestep, rtol=1e-5)


def test_glass_breaks_above_threshold_and_not_below():
  config = PhysicsConfig(materials=("glass",), break_scale=(1.0, 1.0))
  sim = make_sim(0, 8, backend="c", seed=2, config=config)
  low = sim.act(np.full((8, 3), -1.0, np.float32))     # 0.05 m: about 1.1 m/s of speed change
  assert low.valid.all() and low.contact.all() and not low.broken.any()
  high = sim.act(np.ones((8, 3), np.float32))          # 0.35 m: about 3 m/s
  assert high.valid.all() and high.broken.all()
  other = make_sim(0, 8, backend="c", seed=2, config=PhysicsConfig(materials=("rubber", "wood", "metal")))
  assert not other.act(np.ones((8, 3), np.float32)).broken.any()


def test_stage_shapes_and_determinism():
  for stage, k in enumerate((3, 3, 3, 2)):
    a = make_sim(stage, 4, backend="c", seed=3)
    b = make_sim(stage, 4, backend="c", seed=3)
    assert a.spec.num_objects == k and a.spec.context_dim == 10 * k + 3
    actions = np.random.default_rng(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    for act in actions:
      ta, tb = a.act(act), b.act(act)
      assert ta.next.objects.shape == (4, k, 13) and ta.next.context.shape == (4, 10 * k + 3)
      assert ta.next.hand.shape == (4, 6) and ta.valid.all()
      for x, y in zip(ta.next, tb.next):
        np.testing.assert_array_equal(x, y)


def test_bad_input_names_the_field():
  with pytest.raises(ValueError, match="unknown material 'jelly'"):
    materials.material_index("jelly")
  with pytest.raises(ValueError, match="density"):
    materials.Material(-1.0, (0.5, 0.0, 0.0), 1e4, 10.0)
  with pytest.raises(ConfigError, match="physics.materials"):
    PhysicsConfig(materials=("wood", "jelly"))
  with pytest.raises(ConfigError, match="physics.mass_scale"):
    PhysicsConfig.from_section({"mass_scale": [-1.0, 1.0]})
  with pytest.raises(ConfigError, match="physics.iterations"):
    PhysicsConfig(iterations=2)
  with pytest.raises(ValueError, match="stage"):
    make_sim(7, 2, backend="c")
  with pytest.raises(ValueError, match="backend"):
    make_sim(0, 2, backend="bullet")
  with pytest.raises(ValueError, match="actions"):
    make_sim(0, 2, backend="c").act(np.zeros((3, 3)))


def test_every_bad_input_is_an_error_naming_the_field_and_value():
  import math
  from jaxlab.physics import scenes
  with pytest.raises(ConfigError, match=r"physics.mass_scale.*inf"):
    PhysicsConfig(mass_scale=(1.0, math.inf))
  with pytest.raises(ValueError, match=r"Material.stiffness.*inf"):
    materials.Material(600.0, (0.5, 0.0, 0.0), math.inf, 10.0)
  with pytest.raises(ValueError, match=r"Material.friction.*nan"):
    materials.Material(600.0, (math.nan, 0.0, 0.0), 1e4, 10.0)
  with pytest.raises(ValueError, match=r"Slot.size.*-0.05"):
    scenes.Slot("box", (-0.05, 0.05, 0.05))
  sim = make_sim(1, 2, backend="c", seed=0)
  mass = sim.scene.fields["body_mass"].copy()
  mass[:, 1] = -2.0
  with pytest.raises(ValueError, match=r"body_mass.*-2.0"):
    sim.set_field("body_mass", mass)
  with pytest.raises(ValueError, match=r"geom_friction.*-1.0"):
    sim.set_field("geom_friction", -1.0)
  with pytest.raises(ValueError, match=r"actions.*7.0"):
    sim.act(np.array([[7.0, 0, 0], [0, 0, 0]], np.float32))
  with pytest.raises(ValueError, match=r"seed.*'abc'"):
    make_sim(0, 2, backend="c", seed="abc")
  with pytest.raises(ValueError, match=r"seed.*'abc'"):
    sim.reset("abc")
  assert (sim.scene.fields["body_mass"][:, 1:] > 0).all()     # nothing was half-applied (body 0: the world)


def test_transition_records_the_applied_action_and_subsets_match_the_whole_batch():
  sim = make_sim(1, 6, backend="c", seed=3)
  a = np.random.default_rng(1).uniform(-1, 1, (6, 3)).astype(np.float32)
  t = sim.act(a)
  np.testing.assert_array_equal(t.action, a)
  # the envs of several learners reset from their own keys and stepped in one call equal each
  # learner's own simulator
  import jax
  keys = jax.random.split(jax.random.key(4), 2)
  both = make_sim(1, 6, backend="c", seed=0)
  both.reset_keys(jax.numpy.repeat(keys, 3, axis=0), np.tile(np.arange(3), 2), np.arange(6))
  moved = both.act(a[3:], envs=np.arange(3, 6))
  alone = make_sim(1, 3, backend="c", seed=keys[1])
  np.testing.assert_array_equal(moved.next.objects, alone.act(a[3:]).next.objects)
  np.testing.assert_array_equal(both.observe(np.arange(3)).objects,
                                make_sim(1, 3, backend="c", seed=keys[0]).obs.objects)


def test_scenes_are_the_same_with_and_without_x64():
  import jax
  from jaxlab.physics import randomize
  for stage in (0, 2):
    plain = randomize.draw(jax.random.key(7), stage, PhysicsConfig(), 5)
    with jax.enable_x64(True):
      wide = randomize.draw(jax.random.key(7), stage, PhysicsConfig(), 5)
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(wide)):
      assert a.dtype == b.dtype
      np.testing.assert_array_equal(a, b)


def _behind(sim, obj: int, gap: float):
  """qpos with the hand on the floor `gap` m behind object `obj` (in -y)."""
  qpos = sim.qpos.copy()
  pose = qpos[:, 7 * obj:7 * obj + 3]
  qpos[:, -3:] = np.stack([pose[:, 0], pose[:, 1] - gap, np.full(len(qpos), 0.04)], -1)
  return qpos


def test_heavier_block_moves_less_under_the_same_push():
  moved = []
  for scale in (1.0, 4.0):
    config = PhysicsConfig(materials=("wood",), mass_scale=(scale, scale), friction_scale=(1.0, 1.0))
    sim = make_sim(1, 4, backend="c", seed=7, config=config)
    start = sim.set_qpos(_behind(sim, 0, 0.15)).objects[:, 0, :3]
    for _ in range(10):
      t = sim.act(np.tile([0.0, 1.0, 0.0], (4, 1)).astype(np.float32))
      assert t.valid.all()
    moved.append(sim.obs.objects[:, 0, 1] - start[:, 1])
  assert np.all(moved[0] > 0.05) and np.all(moved[1] < 0.7 * moved[0])


def _stack(sim, shift):
  """qpos with the three blocks stacked, the top one shifted by `shift` [n, 2] off the middle one."""
  qpos = sim.qpos.copy()
  blocks = qpos[:, :21].reshape(-1, 3, 7)
  blocks[:, 1, :2] = blocks[:, 0, :2]
  blocks[:, 2, :2] = blocks[:, 1, :2] + shift
  qpos[:, :21] = blocks.reshape(-1, 21)
  return qpos


def test_offcentre_stack_tips_and_centred_one_stands():
  sim = make_sim(2, 8, backend="c", seed=4)
  half = 0.06                                     # the middle block's half width
  shift = np.zeros((8, 2))
  shift[4:, 0] = np.array([1.15, 1.3, -1.15, -1.3]) * half   # envs 4..7: centre of mass past the edge
  start = sim.set_qpos(_stack(sim, shift)).objects
  for _ in range(20):                             # 1 s
    t = sim.act(np.zeros((8, 3), np.float32))
    assert t.valid.all()
  drop = start[:, 2, 2] - sim.obs.objects[:, 2, 2]
  assert np.all(drop[:4] < 1e-3) and np.all(np.abs(sim.obs.objects[:4] - start[:4])[..., :3] < 2e-3)
  assert np.all(drop[4:] > 0.03)


def test_tool_moves_target_the_hand_cannot_reach():
  sim = make_sim(3, 16, backend="c", seed=7)
  start, goal = sim.obs.objects[:, 1, :2], sim.obs.context[:, -3:-1]
  for _ in range(40):
    t = sim.act(np.tile([1.0, 0.0, 0.0], (16, 1)).astype(np.float32))
  hand_x, target = sim.obs.hand[:, 0], sim.obs.objects[:, 1, :2]
  assert t.valid.all() and np.all(hand_x <= 0.155)           # the hand's reach ends at x = 0.15 (soft limit)
  assert np.all(target[:, 0] - 0.05 > hand_x + 0.04)         # it never touched the target
  closer = np.linalg.norm(target - goal, axis=1) < np.linalg.norm(start - goal, axis=1) - 0.02
  assert closer.mean() >= 0.5                                # the stick pushed it (heavy sticks stall)


def test_probe_pairs_match_and_differ():
  for kind in probes.KINDS:
    possible, impossible = probes.probe_pairs(kind, 6, seed=0)
    for a, b in zip(possible.obs, impossible.obs):
      np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(possible.action, impossible.action)
    assert possible.valid.all() and impossible.valid.all()
    gap = np.abs(possible.next.objects - impossible.next.objects)
    if kind == "rubber_shatters":       # the same motion; only the break events differ
      assert gap.max() == 0 and not possible.broken.any() and impossible.broken.all(), kind
      continue
    assert np.all(gap[..., :3].max(axis=(1, 2)) > 0.005) and np.all(gap[..., 7:10].max(axis=(1, 2)) > 0.1), kind
  possible, impossible = probes.probe_pairs("glass_bounces_like_rubber", 6, seed=0)
  assert possible.broken.any() and not impossible.broken.any()
  with pytest.raises(ValueError, match="kind"):
    probes.probe_pairs("teleport", 2, seed=0)


def test_scenes_use_only_geom_pairs_mjx_collides():
  from mujoco.mjx._src import collision_driver
  from mujoco.mjx._src.types import GeomType
  from jaxlab.physics import scenes
  allowed = {GeomType.PLANE, GeomType.SPHERE, GeomType.CAPSULE, GeomType.BOX}
  for stage in range(4):
    model = scenes.base_model(stage, PhysicsConfig())
    assert {GeomType(t) for t in model.geom_type} <= allowed
    pairs = list(collision_driver.geom_pairs(model))
    assert pairs, stage
    for g1, g2, _ in pairs:
      assert collision_driver.has_collision_fn(GeomType(model.geom_type[g1]), GeomType(model.geom_type[g2]))


def test_randomized_fields_differ_across_envs_and_nothing_else_is_batched():
  import jax
  from mujoco import mjx
  from jaxlab.physics import randomize, scenes
  scene = randomize.draw(jax.random.key(0), 1, PhysicsConfig(), 8)
  geoms = scenes.indices(1, PhysicsConfig()).geoms
  for name in randomize.FIELDS:
    value = scene.fields[name]
    assert value.shape[0] == 8 and np.ptp(value, axis=0).max() > 0, name
  assert np.ptp(scene.fields["geom_friction"][:, geoms, 0], axis=0).min() > 0
  base = mjx.put_model(scenes.base_model(1, PhysicsConfig()))
  model, axes = randomize.batched_model(base, scene.fields)
  batched = {jax.tree_util.keystr(p) for p, a in jax.tree_util.tree_leaves_with_path(axes) if a == 0}
  assert batched == {"." + n for n in randomize.FIELDS}
  for path, leaf in jax.tree_util.tree_leaves_with_path(model):
    if jax.tree_util.keystr(path) not in batched:
      ref = base
      for key in path:
        ref = getattr(ref, key.name)
      assert np.shape(leaf) == np.shape(ref), jax.tree_util.keystr(path)


def test_gymnasium_env_passes_the_checker():
  from gymnasium.utils.env_checker import check_env
  from jaxlab.physics.gym_env import DevelopmentalEnv
  env = DevelopmentalEnv(stage=3, max_steps=3)
  check_env(env, skip_render_check=True)
  obs, _ = env.reset(seed=0)
  obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
  assert env.observation_space.contains(obs) and reward < 0 and not terminated
  env.close()


def test_render_frames_to_png_and_gif(tmp_path):
  from jaxlab.physics import render
  sim = make_sim(1, 1, backend="c", seed=0)
  try:
    frames = render.episode(sim, 0, np.ones((1, 1, 3), np.float32), every=25, height=60, width=80)
  except render.RenderUnavailable as e:
    pytest.skip(str(e))
  assert len(frames) == 4 and frames[0].shape == (60, 80, 3) and frames[0].std() > 0
  assert not np.array_equal(frames[0], frames[-1])            # the hand moved
  paths = render.save(frames, tmp_path, "push")
  assert all(p.stat().st_size > 0 for p in paths) and paths[-1].suffix == ".gif"


# MJX. Compiling MJX costs a minute or more on 2 cores, so two programs serve every MJX test:
#  - MjxSim on the drop stage (short, low drops keep the C-vs-MJX comparison tight), made twice in
#    one process: the second must not meet tracers the first one's trace cached (sim_mjx._base);
#  - the pure interaction of the push stage, jitted on one device with a batch of 64, the size at
#    which vmapped dense MJX hung in the batched LAPACK Cholesky on this CPU; it also gives every
#    physics step, for the resting-object bound.
MJX_CONFIG = PhysicsConfig(steps_per_interaction=(150, 50, 50, 50), drop_height=(0.02, 0.1))
MJX_TIMEOUT_S = 900     # generous: a compile on a loaded 2-core machine takes minutes; the hang is forever


@pytest.fixture(scope="module")
def drops():
  """(MJX transitions, C transitions) of two drops in 64 scenes from one key, and the next drop of
  a second MjxSim of the same stage and config."""
  actions = np.random.default_rng(0).uniform(-1, 1, (2, 64, 3)).astype(np.float32)
  sim = make_sim(0, 64, backend="mjx", seed=5, config=MJX_CONFIG)
  mjx_out = [sim.act(a) for a in actions]
  twin = make_sim(0, 64, backend="mjx", seed=5, config=MJX_CONFIG)
  c = make_sim(0, 64, backend="c", seed=5, config=MJX_CONFIG)
  return mjx_out, [c.act(a) for a in actions], twin.act(actions[0])


def test_mjx_matches_c(drops):
  """Same scenes (one key) and actions, two drops: the sphere and the capsule within 1 mm and
  0.05 m/s, the box (random orientations, edge impacts amplify float32 rounding) within 1 cm and
  0.25 m/s; the same contact and break events. MJX runs in float32, C in float64."""
  mjx_out, c_out, _ = drops
  for m, c in zip(mjx_out, c_out):
    gap = np.abs(m.next.objects - c.next.objects)
    pos, vel = gap[..., :3].max(axis=(0, 2)), gap[..., 7:10].max(axis=(0, 2))   # per object
    assert pos[[0, 2]].max() < 1e-3 and vel[[0, 2]].max() < 0.05 and pos[1] < 1e-2 and vel[1] < 0.25
    np.testing.assert_array_equal(m.contact, c.contact)
    np.testing.assert_array_equal(m.broken, c.broken)
    np.testing.assert_array_equal(m.action, c.action)
    assert m.contact.any() and c.valid.all()


def test_two_mjx_sims_in_one_process(drops):
  mjx_out, _, twin = drops
  np.testing.assert_array_equal(twin.next.objects, mjx_out[0].next.objects)


# Resting objects that nothing touches must stay at rest while the hand pushes another object in
# the same scene, on both backends (MJX at MuJoCo C's 4 Newton iterations kicked them: see
# PhysicsConfig.mjx_iterations).
PUSH_ENVS, PUSH_ROUNDS = 64, 6


def _untouched(qpos, k: int, radius, hand_radius: float):
  """bool [n, k]: no hand and no other object came within 3 cm of the object's bounding sphere."""
  pos = qpos[..., :7 * k].reshape(qpos.shape[0], qpos.shape[1], k, 7)[..., :3]
  hand = qpos[..., -3:]
  near_hand = (np.linalg.norm(pos - hand[:, :, None], axis=-1) - radius - hand_radius < 0.03).any(1)
  gap = np.linalg.norm(pos[:, :, :, None] - pos[:, :, None], axis=-1) - radius[:, None] - radius[None]
  near_object = ((gap < 0.03) & ~np.eye(k, dtype=bool)).any((1, 3))
  return ~near_hand & ~near_object


@pytest.fixture(scope="module")
def pushes():
  """Per backend, per interaction: (qpos, qvel trajectories, broken) of 64 push-stage scenes where
  the hand starts 12 cm behind one object and pushes it (+y); glass-like break speeds (0.25 m/s)
  for every object, so pushes break things and the backends' break counts can be compared. MJX
  steps in a thread with a timeout: a hang fails the tests instead of stalling the suite."""
  import threading

  import jax
  from jaxlab.physics import scenes, sim_mjx
  config = PhysicsConfig()
  k, n = 3, PUSH_ENVS
  rng = np.random.default_rng(0)
  actions = rng.uniform(-1, 1, (PUSH_ROUNDS, n, 3)).astype(np.float32)
  actions[..., 1], actions[..., 2] = 1.0, 0.2 * actions[..., 2]
  c = make_sim(1, n, backend="c", seed=9, config=config)
  qpos = c.qpos.copy()
  which = rng.integers(0, k, n)
  target = np.stack([qpos[e, 7 * w:7 * w + 3] for e, w in enumerate(which)])
  qpos[:, -3:] = np.stack([target[:, 0], target[:, 1] - 0.12, np.full(n, scenes.HAND_RADIUS)], -1)
  c.set_qpos(qpos)
  c.scene.break_speed[...] = 0.25
  out = {"c": [], "mjx": None}
  for a in actions:
    start = api.start(1, config, c.qpos, c.qvel, c.scene.drop_quat, a, np)
    out["c"].append((*c.simulate(*start), c.act(a).broken))

  def run():
    state = sim_mjx.reset(jax.random.key(9), 1, config, n)
    state = state._replace(qpos=np.asarray(qpos, np.float32), scene=state.scene._replace(
        break_speed=np.full((n, k), 0.25, np.float32)))
    interact = jax.jit(lambda s, a: sim_mjx.interact(s, a, 1, config))
    steps = []
    for a in actions:
      state, o, (qs, vs) = interact(state, a)
      steps.append((np.asarray(qs), np.asarray(vs), np.asarray(o.broken)))
    out["mjx"] = steps

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  thread.join(MJX_TIMEOUT_S)
  return out, k, np.array([s.radius for s in scenes.layout(1).slots])


def test_mjx_batch_of_64_steps_without_hanging(pushes):
  out, _, _ = pushes
  assert out["mjx"] is not None, f"a vmapped MJX batch of {PUSH_ENVS} did not step within {MJX_TIMEOUT_S} s"
  assert all(np.isfinite(qs).all() for qs, _, _ in out["mjx"])


@pytest.mark.parametrize("backend", ["c", "mjx"])
def test_untouched_resting_objects_stay_at_rest(pushes, backend):
  """No object that neither the hand nor another object came near changes speed by more than
  0.05 m/s within an interaction (at MuJoCo C's 4 Newton iterations MJX kicked them up to 0.3 m/s)."""
  from jaxlab.physics import scenes
  out, k, radius = pushes
  assert out[backend] is not None
  worst, untouched_total = 0.0, 0
  for qpos, qvel, _ in out[backend]:
    vel = qvel[..., :6 * k].reshape(qvel.shape[0], qvel.shape[1], k, 6)[..., :3]
    change = np.linalg.norm(vel - vel[:, :1], axis=-1).max(1)      # [n, k] over the interaction's steps
    untouched = _untouched(qpos, k, radius, scenes.HAND_RADIUS)
    untouched_total += untouched.sum()
    worst = max(worst, change[untouched].max())
  assert untouched_total > PUSH_ENVS * PUSH_ROUNDS, untouched_total   # most objects are left alone
  assert worst <= 0.05, f"{backend}: an untouched object's speed changed by {worst:.3f} m/s"


def test_c_and_mjx_agree_on_pushes(pushes):
  """With glass-like break speeds for every object the pushes break things; the backends agree on
  how many breaks within max(2, 20%) (float32 MJX vs float64 C near the threshold), and on where
  the objects end up within 1 cm."""
  out, k, _ = pushes
  assert out["mjx"] is not None
  counts = {b: int(sum(broken.sum() for _, _, broken in out[b])) for b in ("c", "mjx")}
  assert counts["c"] >= 5, counts
  assert abs(counts["c"] - counts["mjx"]) <= max(2, 0.2 * counts["c"]), counts
  end = {b: out[b][-1][0][:, -1, :7 * k].reshape(-1, k, 7)[..., :3] for b in ("c", "mjx")}
  assert np.abs(end["c"] - end["mjx"]).max() < 0.01
