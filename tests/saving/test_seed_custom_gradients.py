"""Seed 003, "Gradientes personalizados en modelo guardado": saved in one process, loaded in a
fresh one, as the seed says (the reloaded gradient is the custom one only if it was saved)."""
import pytest

from .helpers import run_fresh

SAVE = """
import tapeflow as tf

@tf.custom_gradient
def clip_gradients(y):
  def backward(dy):
    return tf.clip_by_norm(dy, 0.5)
  return y, backward

class MyModule(tf.Module):

  @tf.function(input_signature=[tf.TensorSpec(None)])
  def call_custom_grad(self, x):
    return clip_gradients(x)

model = MyModule()
tf.saved_model.save(
    model,
    'saved_model',
    options=tf.saved_model.SaveOptions(experimental_custom_gradients={custom}))
"""

LOAD = """
import tapeflow as tf
v = tf.Variable(2.0)
loaded = tf.saved_model.load('saved_model')
with tf.GradientTape() as t:
  output = loaded.call_custom_grad(v * v)
print(output.numpy())
print(t.gradient(output, v))
"""


@pytest.mark.child_process
def test_custom_gradient_saved_is_the_gradient_after_a_restart(tmp_path):
    run_fresh(SAVE.format(custom=True), tmp_path)
    done = run_fresh(LOAD, tmp_path)
    assert done.stdout.splitlines() == ["4.0", "tf.Tensor(2.0, shape=(), dtype=float32)"]


@pytest.mark.child_process
def test_without_custom_gradients_a_restart_has_no_gradient_for_identity_n(tmp_path):
    run_fresh(SAVE.format(custom=False), tmp_path)
    done = run_fresh(LOAD, tmp_path, check=False)
    assert done.returncode != 0
    assert ("LookupError: No gradient defined for operation 'IdentityN' (op type: IdentityN)"
            in done.stderr), done.stderr
    assert "4.0" in done.stdout  # the forward pass still runs


@pytest.mark.child_process
@pytest.mark.parametrize("custom", [True, False])
def test_the_forward_pass_is_the_same_either_way(tmp_path, custom):
    run_fresh(SAVE.format(custom=custom), tmp_path)
    done = run_fresh("""
        import tapeflow as tf
        loaded = tf.saved_model.load('saved_model')
        print(loaded.call_custom_grad(tf.constant([1.0, -2.5])).numpy().tolist())
    """, tmp_path)
    assert done.stdout.strip() == "[1.0, -2.5]"


@pytest.mark.child_process  # saves and loads in one child process
def test_in_the_saving_process_the_gradient_is_still_known_without_custom_gradients(tmp_path):
    """The seed's note: saved with experimental_custom_gradients=False, the gradient is the
    same when loaded in the same process (the registry still knows it)."""
    done = run_fresh(SAVE.format(custom=False) + LOAD, tmp_path)
    assert done.stdout.splitlines() == ["4.0", "tf.Tensor(2.0, shape=(), dtype=float32)"]
