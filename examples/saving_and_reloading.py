"""Saving and reloading: whole models, weights alone, traced functions, and a model whose
activation is a custom gradient that the loading process cannot import.

    python examples/saving_and_reloading.py

Everything is written to a temporary directory and compared bitwise after the reload.
"""
import importlib.util
import inspect
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
from sklearn.datasets import load_diabetes

import tapeflow as tf

HERE = pathlib.Path(__file__).resolve().parent


def load_by_path(path):
    """Import a Python file as a module, as the YAML trainer loads ``file.py:builder``."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def diabetes_model(x_train, hidden):
    """Raw features in (Normalization adapted to the training set), disease progression out."""
    normalize = tf.keras.layers.Normalization()
    normalize.adapt(x_train)
    return tf.keras.Sequential([tf.keras.Input(shape=x_train.shape[1:]), normalize, *hidden])


def same(a, b):
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def measure(model, inputs):
    """Predictions and gradients of their sum with respect to the inputs and the weights."""
    inputs = tf.constant(inputs)
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        total = tf.reduce_sum(model(inputs))
    dx, *dw = tape.gradient(total, [inputs] + list(model.trainable_variables))
    return {"y": model(inputs).numpy(), "dx": dx.numpy(),
            **{f"dw{i}": g.numpy() for i, g in enumerate(dw)}}


# The fresh process: another working directory, examples/ not on its path; ``measure`` above is
# pasted in where the script says MEASURE.
RELOAD = """
import numpy as np
import tapeflow as tf
try:
    import stable_softplus
    raise SystemExit("stable_softplus must not be importable here")
except ImportError:
    print("stable_softplus is not importable here")
model = tf.keras.models.load_model("softplus_model")
print("load_model:", type(model).__name__, "(the saved call graph and weights)")
MEASURE
expected = np.load("expected.npz")
got = measure(model, expected["x"])
print("predictions identical:", np.array_equal(got["y"], expected["y"]))
print("gradients (inputs and all", len(got) - 2, "weights) identical:",
      all(np.array_equal(got[k], expected[k]) for k in got),
      "| finite:", all(np.isfinite(v).all() for v in got.values()))
"""



def main(directory):
    data = load_diabetes()                      # 442 patients, 10 features; bundled, no download
    x = data.data.astype(np.float32)
    y = (data.target.reshape(-1, 1) / 100.0).astype(np.float32)

    # --- 1. model.save / load_model: architecture, weights, optimizer state ----------------------
    tf.random.set_seed(0)
    model = diabetes_model(x, [tf.keras.layers.Dense(16, activation="relu"),
                               tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, epochs=5, batch_size=32, verbose=0)
    expected = model.predict(x, verbose=0)

    model.save(directory / "model.keras")       # one HDF5 file (a directory without the suffix)
    reloaded = tf.keras.models.load_model(directory / "model.keras")
    print(f"load_model: {type(reloaded).__name__} '{reloaded.name}', "
          f"predictions identical: {same(reloaded.predict(x, verbose=0), expected)}")
    # The optimizer came back with its state: training goes on where it stopped.
    print("  reloaded optimizer:", type(reloaded.optimizer).__name__,
          "at step", int(reloaded.optimizer.iterations.numpy()),
          "| same step count:", int(reloaded.optimizer.iterations.numpy())
          == int(model.optimizer.iterations.numpy()))

    # --- 2. save_weights / load_weights: into a model built again from code ----------------------
    model.save_weights(directory / "diabetes.weights.h5")
    tf.random.set_seed(1)                       # other initial weights...
    twin = diabetes_model(x, [tf.keras.layers.Dense(16, activation="relu"),
                              tf.keras.layers.Dense(1)])
    print("save_weights/load_weights: before loading, same predictions:",
          same(twin.predict(x, verbose=0), expected), end="; ")
    twin.load_weights(directory / "diabetes.weights.h5")   # ...replaced by the saved ones
    print("after:", same(twin.predict(x, verbose=0), expected))

    # --- 3. tf.saved_model.save / load: a Module's tf.functions and Variables --------------------
    @tf.custom_gradient
    def clip_gradients(v):                      # seed 003: identity, gradient clipped to norm 0.5
        def backward(dy):
            return tf.clip_by_norm(dy, 0.5)
        return v, backward

    class Affine(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[1.0], [-2.0], [0.5]])
            self.b = tf.Variable([0.25])

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, inputs):
            return inputs @ self.w + self.b

        @tf.function(input_signature=[tf.TensorSpec(None)])
        def call_custom_grad(self, v):
            return clip_gradients(v)

    module = Affine()
    tf.saved_model.save(module, str(directory / "affine"))
    loaded = tf.saved_model.load(str(directory / "affine"))   # no class Affine needed to run it
    inputs = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        out = loaded.call_custom_grad(v * v)
    print("tf.saved_model.load: outputs identical:", same(loaded(inputs), module(inputs)),
          "| d clip_gradients(v * v) / dv at 2:", float(tape.gradient(out, v)))
    #   the saved custom gradient: dy = 1 clipped to 0.5, times d(v * v)/dv = 4, gives 2.0

    # --- 4. a stable_softplus model, reloaded where stable_softplus cannot be imported -----------
    softplus = load_by_path(HERE / "stable_softplus.py")
    tf.random.set_seed(0)
    model = diabetes_model(x, softplus.build_layers(units=(16, 16)))
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=5, batch_size=32, verbose=0)
    model.save(directory / "softplus_model")

    # Inputs 1000 times too large drive the hidden units to pre-activations in the thousands,
    # where the naive log(exp(z) + 1) has a nan gradient.  The saved graph carries
    # stable_softplus's own gradient graph, so a process without its code gets the same numbers.
    big = x[:8] * 1000.0
    np.savez(directory / "expected.npz", **measure(model, big), x=big)
    normalization, hidden = model.layers[:2]
    z = normalization(big) @ hidden.kernel + hidden.bias
    print(f"in this process: pre-activations up to {float(tf.reduce_max(z)):.0f}, gradients "
          f"finite: {bool(np.isfinite(measure(model, big)['dx']).all())}")
    script = RELOAD.replace("MEASURE", inspect.getsource(measure))
    done = subprocess.run([sys.executable, "-c", script], cwd=directory,
                          capture_output=True, text=True, timeout=120)
    print(textwrap.indent(done.stdout + done.stderr, "  fresh process | "), end="")
    if done.returncode != 0:
        raise SystemExit("the fresh process failed")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(pathlib.Path(tmp))
