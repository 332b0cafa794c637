"""jax.ad_checkpoint: checkpoint_name, the named checkpoint policies, print_saved_residuals."""
import numpy as np
import pytest

import tracejit
from tracejit import ad_checkpoint
from tracejit.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies as P, saved_residuals


def _f(x):
    h = checkpoint_name(np.sin(x) * 2.0, "h")
    g = checkpoint_name(np.cos(h), "g")
    return np.sum(np.sin(h) * g)


POLICIES = {
    "none": None,
    "only h": P.save_only_these_names("h"),
    "names but g": P.save_any_names_but_these("g"),
    "all but h": P.save_anything_except_these_names("h"),
    "both": P.save_from_both_policies(P.save_only_these_names("g"), P.save_only_these_names("h")),
    "offload": P.save_and_offload_only_these_names(names_which_can_be_saved=["h"], names_which_can_be_offloaded=[],
                                                   offload_src="device", offload_dst="pinned_host"),
    "dots no batch": P.checkpoint_dots_with_no_batch_dims,
    "offload dots": P.offload_dot_with_no_batch_dims("device", "pinned_host"),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_policies_keep_the_gradient(name):
    x = np.linspace(-1.0, 1.0, 5)
    want = tracejit.grad(_f)(x)
    f = checkpoint(_f, policy=POLICIES[name])
    np.testing.assert_allclose(tracejit.grad(f)(x), want, rtol=1e-14)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(f))(x), want, rtol=1e-14)


@pytest.mark.parametrize("name,saved", [
    ("none", []), ("only h", ["named 'h'"]), ("names but g", ["named 'h'"]),
    ("both", ["named 'h'", "named 'g'"]), ("offload", ["named 'h'"])])
def test_policies_decide_what_the_backward_pass_keeps(name, saved):
    # Besides the checkpoint's input, the backward pass keeps exactly the named values the
    # policy saves (the rest it recomputes).
    found = [what for _, what in saved_residuals(checkpoint(_f, policy=POLICIES[name]), np.ones(3))]
    assert found == ["from the argument x"] + saved


def test_save_anything_except_names_saves_unnamed_values():
    found = [what for _, what in saved_residuals(checkpoint(_f, policy=POLICIES["all but h"]), np.ones(3))]
    assert "named 'h'" not in found and "named 'g'" in found and any(w.startswith("output of") for w in found)


def test_checkpoint_name_is_the_identity_on_pytrees_eager_and_traced():
    tree = {"a": np.arange(3.0), "b": (np.ones(2), 4)}
    assert checkpoint_name(tree, "t") is not None
    out = tracejit.jit(lambda t: checkpoint_name(t, "t"))(tree)
    np.testing.assert_array_equal(out["a"], tree["a"])
    assert out["b"][1] == 4
    # derivatives and vmap pass through it
    np.testing.assert_allclose(tracejit.grad(lambda x: checkpoint_name(x * x, "sq"))(3.0), 6.0)
    np.testing.assert_allclose(tracejit.vmap(lambda x: checkpoint_name(x, "v") * 2)(np.arange(3.0)), [0, 2, 4])
    assert tracejit.jacfwd(lambda x: checkpoint_name(np.sin(x), "s"))(0.0) == 1.0


def test_print_saved_residuals(capsys):
    ad_checkpoint.print_saved_residuals(lambda x, y: np.sum(x * np.exp(y)), np.ones(2, np.float32),
                                        np.ones((2,), np.float32))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["f32[2] from the argument x", "f32[2] output of exp"]


def test_saveable_recompute_offloadable_answers():
    assert bool(ad_checkpoint.Saveable) and not bool(ad_checkpoint.Recompute)
    assert bool(ad_checkpoint.Offloadable("device", "pinned_host"))
    x = np.linspace(0.1, 1.0, 4)
    answer = lambda prim, *a, **p: ad_checkpoint.Recompute   # noqa: E731
    np.testing.assert_allclose(tracejit.grad(checkpoint(_f, policy=answer))(x), tracejit.grad(_f)(x), rtol=1e-14)


def test_matches_jax_policies_by_name():
    jax = pytest.importorskip("jax")
    ours = {n for n in dir(P) if not n.startswith("_")}
    theirs = {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
    assert theirs <= ours
    import jax.ad_checkpoint
    assert {n for n in dir(jax.ad_checkpoint) if not n.startswith("_")} <= set(dir(ad_checkpoint))
