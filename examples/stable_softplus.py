"""A numerically stable softplus, as a ``@tf.custom_gradient`` activation (seed 001's
``my_better_softplus``), and a layer builder for the YAML trainer.

    python examples/stable_softplus.py

softplus(z) = log(exp(z) + 1) and its derivative sigmoid(z) = 1 / (1 + 1/exp(z)), written so
that neither overflows: exp(100) is inf in float32, so the naive formula's gradient at z = 100
is inf / inf = nan, while this one gives 1.0.

The trainer loads ``examples/stable_softplus.py:build_layers`` by file path, so this module
imports nothing but tapeflow and numpy.
"""
import numpy as np

import tapeflow as tf


@tf.custom_gradient
def stable_softplus(z):
    """softplus(z) = max(z, 0) + log(1 + exp(-|z|)): exp never sees a positive argument."""
    e = tf.exp(-tf.abs(z))                      # in (0, 1], never overflows
    y = tf.nn.relu(z) + tf.math.log1p(e)

    def stable_softplus_grad(dy):
        # dy / (1 + 1/exp(z)) = dy * sigmoid(z), with exp(-|z|) in place of exp(z) or 1/exp(z):
        # 1 / (1 + e) for z >= 0, e / (1 + e) for z < 0.  Written in tapeflow ops, so it can be
        # differentiated again (a Hessian through this activation works).
        return dy * tf.where(z >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))

    return y, stable_softplus_grad


def naive_softplus(z):
    """The seed's ``my_softplus``: right values for small z, a nan gradient at z = 100."""
    return tf.math.log(tf.exp(z) + 1.0)


def build_layers(units=(64, 64)) -> list:
    """The trainer's builder: hidden Dense layers with this activation, then Dense(1).

    The trainer puts an Input and an adapted Normalization in front and builds the
    Sequential itself.
    """
    return [tf.keras.layers.Dense(int(u), activation=stable_softplus) for u in units] \
        + [tf.keras.layers.Dense(1)]


def _short(value):
    """A float to 4 significant digits, printed as Python prints floats (1.0, nan, 3.784e-44)."""
    return repr(float(f"{value:.4g}"))


def main():
    np.set_printoptions(precision=4)
    z = tf.Variable([0.0, 100.0, -100.0])
    results = {}
    for name, fn in [("naive", naive_softplus), ("stable", stable_softplus)]:
        with tf.GradientTape() as tape:
            y = fn(z)
        results[name] = y.numpy(), tape.gradient(y, z).numpy()
    print(f"{'z':>6}  {'naive softplus':>14} {'gradient':>10}  "
          f"{'stable softplus':>15} {'gradient':>10}")
    for i, zi in enumerate(z.numpy()):
        (ny, ng), (sy, sg) = (tuple(_short(a[i]) for a in results[k]) for k in ("naive", "stable"))
        print(f"{zi:6.1f}  {ny:>14} {ng:>10}  {sy:>15} {sg:>10}")

    # At z = 1000 the naive forward pass is inf too; the stable one returns z itself.
    print("stable softplus(1000.) =", float(stable_softplus(tf.constant(1000.0))))

    # The second derivative, sigmoid'(z), through the custom gradient's own ops.
    x = tf.Variable([-2.0, 2.0])
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = stable_softplus(x)
        dy = inner.gradient(y, x)
    s = 1.0 / (1.0 + np.exp(-x.numpy()))
    print(f"second derivative at {x.numpy()}: {outer.gradient(dy, x).numpy()} "
          f"(sigmoid(z) * (1 - sigmoid(z)) = {s * (1 - s)})")

    # The builder, as the trainer uses it (here without the Normalization in front).
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,))] + build_layers(units=(8, 8)))
    print("build_layers(units=(8, 8)) ->", [type(layer).__name__ for layer in model.layers],
          "output", model(np.ones((2, 3), np.float32)).shape)


if __name__ == "__main__":
    main()
