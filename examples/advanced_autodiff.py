"""The seeds' advanced autodiff, run on tapeflow: persistent tapes, stop_gradient, custom
gradients, higher derivatives, jacobians, batch jacobians, a Hessian and a Newton step.

    python examples/advanced_autodiff.py

Each section is a cell of the seed notebooks (TensorFlow's "advanced autodiff" guide and a
course notebook); the comments give the numbers the seeds print, and the program prints ours.
"""
import numpy as np

import tapeflow as tf

np.set_printoptions(precision=4, suppress=True)


def section(title):
    print(f"\n--- {title}")


def values(gradients):
    """Gradients as plain floats (None stays None), to print them as the seeds' comments do."""
    return [None if g is None else float(g) for g in gradients]


def f(w1, w2):
    return 3 * w1 ** 2 + 2 * w1 * w2


# --- Gradients, and tapes that are used once or kept ---------------------------------------------
section("gradients of f(w1, w2) = 3 w1^2 + 2 w1 w2 at (5, 3)")
w1, w2 = tf.Variable(5.), tf.Variable(3.)
with tf.GradientTape() as tape:
    z = f(w1, w2)
print("dz/dw1, dz/dw2:", values(tape.gradient(z, [w1, w2])))   # seed: 36.0, 10.0
try:
    tape.gradient(z, w1)                       # a tape is used once, unless persistent=True
except RuntimeError as error:
    print("second gradient call:", error)

with tf.GradientTape(persistent=True) as tape:
    z1, z2, z3 = f(w1, w2 + 2.), f(w1, w2 + 5.), f(w1, w2 + 7.)
print("gradient of [z1, z2, z3] (of their sum):",
      values(tape.gradient([z1, z2, z3], [w1, w2])))                      # seed: 136.0, 30.0
print("one by one, then summed:", tf.reduce_sum(tf.stack(
    [tape.gradient(z, [w1, w2]) for z in (z1, z2, z3)]), axis=0).numpy())
del tape                                       # a persistent tape holds its records until then

c1, c2 = tf.constant(5.), tf.constant(3.)
with tf.GradientTape() as tape:
    z = f(c1, c2)                              # constants are recorded only when watched
print("constants, not watched:", values(tape.gradient(z, [c1, c2])))          # None, None
with tf.GradientTape() as tape:
    tape.watch(c1)
    tape.watch(c2)
    z = f(c1, c2)
print("constants, watched:", values(tape.gradient(z, [c1, c2])))              # 36.0, 10.0

# --- Controlling what is recorded ----------------------------------------------------------------
section("stop_recording, reset, stop_gradient")
x, y = tf.Variable(2.0), tf.Variable(3.0)
with tf.GradientTape() as t:
    x_sq = x * x
    with t.stop_recording():
        y_sq = y * y
    z = x_sq + y_sq
grad = t.gradient(z, {"x": x, "y": y})
print("stop_recording: dz/dx", grad["x"].numpy(), "dz/dy", grad["y"])         # 4.0 None

with tf.GradientTape() as t:
    y_sq = y * y
    t.reset()                                  # throw out everything recorded so far
    z = x * x + y_sq
grad = t.gradient(z, {"x": x, "y": y})
print("reset:          dz/dx", grad["x"].numpy(), "dz/dy", grad["y"])         # 4.0 None

with tf.GradientTape() as t:
    z = 3 * w1 ** 2 + tf.stop_gradient(2 * w1 * w2)
print("stop_gradient:", values(t.gradient(z, [w1, w2], unconnected_gradients="zero")))
#                                                                              30.0, 0.0


# --- Custom gradients ----------------------------------------------------------------------------
@tf.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)
    return y, backward


section("custom_gradient: the identity, with its gradient clipped to norm 0.5")
v = tf.Variable(2.0)
with tf.GradientTape() as t:
    output = clip_gradients(v * v)
print("d clip_gradients(v * v) / dv at 2:", t.gradient(output, v).numpy())   # 4 clipped to 2.0

# --- Several tapes, higher derivatives -----------------------------------------------------------
section("two tapes watching different tensors; second derivatives")
x0, x1 = tf.constant(0.0), tf.constant(0.0)
with tf.GradientTape() as tape0, tf.GradientTape() as tape1:
    tape0.watch(x0)
    tape1.watch(x1)
    ys = tf.reduce_sum(tf.math.sin(x0) + tf.nn.sigmoid(x1))
print("cos(0):", tape0.gradient(ys, x0).numpy(), " sigmoid'(0):", tape1.gradient(ys, x1).numpy())

x = tf.Variable(1.0)
with tf.GradientTape() as t2:
    with tf.GradientTape() as t1:
        y = x * x * x
    dy_dx = t1.gradient(y, x)                  # computed inside t2, so itself recorded
d2y_dx2 = t2.gradient(dy_dx, x)
print("x^3 at 1: dy_dx", dy_dx.numpy(), "d2y_dx2", d2y_dx2.numpy())           # 3.0 6.0

with tf.GradientTape(persistent=True) as hessian_tape:
    with tf.GradientTape() as jacobian_tape:
        z = f(w1, w2)
    jacobians = jacobian_tape.gradient(z, [w1, w2])
hessians = [values(hessian_tape.gradient(j, [w1, w2], unconnected_gradients="zero"))
            for j in jacobians]
del hessian_tape
print("Hessian of f by nested tapes:", hessians)                   # [[6.0, 2.0], [2.0, 0.0]]

# --- Python control flow is differentiable as it ran ---------------------------------------------
section("control flow: while and if on tensor values")


def g(a):
    b = a * 2
    while tf.norm(b) < 1000:
        b = b * 2
    return b if tf.reduce_sum(b) > 0 else 100 * b


a = tf.constant([[0.37]])
with tf.GradientTape() as t:
    t.watch(a)
    c = g(a)
print("gradient == c / a:", bool(t.gradient(c, a).numpy() == (c / a).numpy()))   # True

# --- Jacobians -----------------------------------------------------------------------------------
section("jacobians")
x = tf.constant([[4, 2], [1, 3]], dtype=tf.float32)
with tf.GradientTape() as tape:
    tape.watch(x)
    y = x * x * x
j = tape.jacobian(y, x)                        # (2, 2, 2, 2): d y[i, j] / d x[k, l]
print("jacobian of x^3 on [[4, 2], [1, 3]]: shape", j.shape,
      "nonzeros", j.numpy()[j.numpy() != 0])                            # 48 12 3 27 = 3 x^2

tf.random.set_seed(0)
x = tf.linspace(-10.0, 10.0, 200 + 1)
delta = tf.Variable(0.0)
with tf.GradientTape() as tape:
    y = tf.nn.sigmoid(x + delta)
print("scalar source: y", y.shape, "dy/d delta", tape.jacobian(y, delta).shape)   # (201,) (201,)

x = tf.random.normal([7, 5])
layer = tf.keras.layers.Dense(10, activation=tf.nn.relu)
with tf.GradientTape(persistent=True) as tape:
    y = layer(x)
j = tape.jacobian(y, layer.kernel)
g_kernel = tape.gradient(y, layer.kernel)
delta = tf.reduce_max(abs(g_kernel - tf.reduce_sum(j, axis=[0, 1]))).numpy()
del tape
print("tensor source: jacobian", j.shape, "| summed over the target = gradient:", delta < 1e-3)
#                                                                       (7, 10, 5, 10) True

section("batch_jacobian: one (outs, ins) jacobian per row, without the (batch, batch) zeros")
x = tf.random.normal([7, 5])
layer1 = tf.keras.layers.Dense(8, activation=tf.nn.elu)
layer2 = tf.keras.layers.Dense(6, activation=tf.nn.elu)
with tf.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer2(layer1(x))
j = tape.jacobian(y, x)                        # (7, 6, 7, 5), its (batch, batch) slices diagonal
jb = tape.batch_jacobian(y, x)                 # (7, 6, 5)
j_select = tf.einsum("bxby->bxy", j)
print("jacobian", j.shape, "batch_jacobian", jb.shape, "einsum diagonal", j_select.shape,
      "| max difference:", tf.reduce_max(abs(jb - j_select)).numpy())    # seed: 0.0
del tape

# --- A Hessian and Newton's method ---------------------------------------------------------------
section("a Hessian from a jacobian of a gradient, and one Newton step")
x = tf.random.normal([7, 5])
layer1 = tf.keras.layers.Dense(8, activation=tf.nn.relu)
layer2 = tf.keras.layers.Dense(6, activation=tf.nn.relu)


def loss_fn():
    return tf.reduce_mean(layer2(layer1(x)) ** 2)


with tf.GradientTape() as t2:
    with tf.GradientTape() as t1:
        loss = loss_fn()
    g = t1.gradient(loss, layer1.kernel)
h = t2.jacobian(g, layer1.kernel)
print("layer1.kernel", layer1.kernel.shape, "h", h.shape)          # (5, 8) (5, 8, 5, 8)
n_params = int(tf.reduce_prod(layer1.kernel.shape))
g_vec = tf.reshape(g, [n_params, 1])
h_mat = tf.reshape(h, [n_params, n_params])
print("symmetric:", np.allclose(h_mat.numpy(), h_mat.numpy().T, atol=1e-6))
# x(k+1) = x(k) - (H + eps I)^-1 g: the quadratic model's minimum (eps keeps H invertible).
update = tf.linalg.solve(h_mat + tf.eye(n_params) * 1e-3, g_vec)
before = float(loss)
layer1.kernel.assign_sub(tf.reshape(update, layer1.kernel.shape))
print(f"Newton step on layer1.kernel: loss {before:.4f} -> {float(loss_fn()):.4f}")

# Beyond the seeds: tf.hessian assembles the Hessian over several variables as one matrix,
# and tf.optimizers.Newton takes that step over all of them.
variables = layer1.trainable_variables + layer2.trainable_variables
H = tf.hessian(loss_fn, variables)
print("tf.hessian over all", len(variables), "variables:", H.shape)              # (102, 102)
before = float(loss_fn())
tf.optimizers.Newton().minimize(loss_fn, variables)
print(f"tf.optimizers.Newton, one step: loss {before:.4f} -> {float(loss_fn()):.4f}")
