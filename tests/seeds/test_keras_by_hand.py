"""Keras layers under a GradientTape, against values worked out by hand.

The Keras cells of the seed documents (test_seed_00[023]_keras_cells.py) use
randomly initialized layers.  Here the weights are set with ``set_weights`` to
small hand-chosen arrays (dyadic numbers, exact in float32) and the outputs,
``tape.gradient`` with respect to kernel/bias/input and ``tape.jacobian`` with
respect to the kernel are compared with formulas written out in plain numpy --
and, for the first example, with numbers computed on paper.

Notation: x is (N, I), W is (I, U), b is (U,), z = x W + b, y = act(z), and the
loss is L = sum(c * y) for a fixed array c, so dL/dy = c.  Then

    dL/dz = c * act'(z)            (elementwise)
    dL/dW = x^T dL/dz              dL/db = sum over rows of dL/dz
    dL/dx = dL/dz W^T
    dy[n, k]/dW[i, l] = x[n, i] act'(z[n, k]) [k == l]     (the jacobian, (N, U, I, U))

with relu'(z) = [z > 0] (TensorFlow's ReluGrad: 0 at z == 0) and
elu'(z) = 1 if z > 0 else exp(z).
"""
import numpy as np
import pytest

import tapeflow as tf

X = np.array([[1., 2., -1.],
              [0.5, -1., 2.]], dtype=np.float32)
W = np.array([[0.5, -1.],
              [0.25, 0.5],
              [-1., 0.25]], dtype=np.float32)
B = np.array([0.5, 0.75], dtype=np.float32)
C = np.array([[1., 2.],
              [3., -1.]], dtype=np.float32)
# z = X W + B, by hand:
#   row 0: [0.5 + 0.5 + 1,     -1 + 1 - 0.25]    + [0.5, 0.75] = [2.5, 0.5]
#   row 1: [0.25 - 0.25 - 2,   -0.5 - 0.5 + 0.5] + [0.5, 0.75] = [-1.5, 0.25]
Z = np.array([[2.5, 0.5],
              [-1.5, 0.25]], dtype=np.float32)


def relu(z):
    return np.maximum(z, 0)


def relu_grad(z):
    return (z > 0).astype(np.float32)


def elu(z):
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))


def elu_grad(z):
    return np.where(z > 0, 1, np.exp(np.minimum(z, 0))).astype(np.float32)


ACTIVATIONS = {'relu': (relu, relu_grad), 'elu': (elu, elu_grad)}


def _dense(units, activation, kernel, bias):
    layer = tf.keras.layers.Dense(units, activation=activation)
    layer.build((None, kernel.shape[0]))
    layer.set_weights([kernel, bias])
    return layer


def _run_dense(layer, x, c):
    x = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer(x)
        loss = tf.reduce_sum(c * y)
    dw, db, dx = tape.gradient(loss, [layer.kernel, layer.bias, x])
    j = tape.jacobian(y, layer.kernel)
    return y, loss, dw, db, dx, j


def test_hand_values_of_z():
    np.testing.assert_array_equal(X @ W + B, Z)


def test_set_weights_and_get_weights():
    tf.random.set_seed(0)
    layer = _dense(2, 'relu', W, B)

    kernel, bias = layer.get_weights()
    np.testing.assert_array_equal(kernel, W)
    np.testing.assert_array_equal(bias, B)
    assert layer.trainable_variables == [layer.kernel, layer.bias]
    with pytest.raises(ValueError):
        layer.set_weights([W])
    with pytest.raises(ValueError):
        layer.set_weights([W.T, B])


def test_dense_relu_on_paper():
    tf.random.set_seed(0)
    layer = _dense(2, 'relu', W, B)

    y, loss, dw, db, dx, j = _run_dense(layer, X, C)

    # y = relu(Z); mask relu'(Z) = [[1, 1], [0, 1]]
    np.testing.assert_array_equal(y.numpy(), [[2.5, 0.5], [0., 0.25]])
    # L = 1*2.5 + 2*0.5 + 3*0 - 1*0.25
    assert loss.numpy() == 3.25
    # dL/dz = C * mask = [[1, 2], [0, -1]]
    # dL/dW = X^T dL/dz = [[1*1 + 0.5*0,  1*2 + 0.5*(-1)],
    #                      [2*1 - 1*0,    2*2 + (-1)*(-1)],
    #                      [-1*1 + 2*0,   -1*2 + 2*(-1)]]
    np.testing.assert_array_equal(dw.numpy(), [[1., 1.5], [2., 5.], [-1., -4.]])
    # dL/db = column sums of dL/dz
    np.testing.assert_array_equal(db.numpy(), [1., 1.])
    # dL/dx = dL/dz W^T: row 0 = 1*[0.5, 0.25, -1] + 2*[-1, 0.5, 0.25]; row 1 = -1*[-1, 0.5, 0.25]
    np.testing.assert_array_equal(dx.numpy(), [[-1.5, 1.25, -0.5], [1., -0.5, -0.25]])
    # jacobian: j[n, k, i, l] = X[n, i] mask[n, k] [k == l]
    assert j.shape == (2, 2, 3, 2)
    np.testing.assert_array_equal(j.numpy()[0, 0], [[1., 0.], [2., 0.], [-1., 0.]])
    np.testing.assert_array_equal(j.numpy()[0, 1], [[0., 1.], [0., 2.], [0., -1.]])
    np.testing.assert_array_equal(j.numpy()[1, 0], np.zeros((3, 2)))
    np.testing.assert_array_equal(j.numpy()[1, 1], [[0., 0.5], [0., -1.], [0., 2.]])


@pytest.mark.parametrize('name', ['relu', 'elu'])
@pytest.mark.parametrize('spelling', ['string', 'tf.nn'])
def test_dense_by_formula(name, spelling):
    tf.random.set_seed(0)
    act, act_grad = ACTIVATIONS[name]
    activation = name if spelling == 'string' else getattr(tf.nn, name)
    layer = _dense(2, activation, W, B)

    y, loss, dw, db, dx, j = _run_dense(layer, X, C)

    z = X @ W + B
    dz = C * act_grad(z)
    np.testing.assert_allclose(y.numpy(), act(z), rtol=1e-6)
    np.testing.assert_allclose(loss.numpy(), np.sum(C * act(z)), rtol=1e-6)
    np.testing.assert_allclose(dw.numpy(), X.T @ dz, rtol=1e-6)
    np.testing.assert_allclose(db.numpy(), dz.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(dx.numpy(), dz @ W.T, rtol=1e-6)
    want_j = np.einsum('ni,nk,kl->nkil', X, act_grad(z), np.eye(2, dtype=np.float32))
    np.testing.assert_allclose(j.numpy(), want_j, rtol=1e-6)
    # the gradient of sum(y) is the jacobian summed over the target (the seed's delta check)
    np.testing.assert_allclose(j.numpy().sum(axis=(0, 1)), X.T @ act_grad(z), rtol=1e-6)


def test_dense_elu_on_paper():
    tf.random.set_seed(0)
    layer = _dense(2, 'elu', W, B)

    y, loss, dw, db, dx, j = _run_dense(layer, X, C)

    # Only Z[1, 0] = -1.5 is negative: y there is exp(-1.5) - 1 and elu' is exp(-1.5).
    e = np.float32(np.exp(-1.5))
    np.testing.assert_allclose(y.numpy(), [[2.5, 0.5], [e - 1, 0.25]], rtol=1e-6)
    # dL/dz = C * elu'(Z) = [[1, 2], [3 e, -1]]
    np.testing.assert_allclose(db.numpy(), [1 + 3 * e, 1.], rtol=1e-6)
    np.testing.assert_allclose(j.numpy()[1, 0, :, 0], e * X[1], rtol=1e-6)


def test_relu_gradient_at_zero_is_zero():
    # z = 1*1 + 1*(-1) + 0 = 0 exactly: TensorFlow's relu gradient there is 0.
    tf.random.set_seed(0)
    layer = _dense(1, 'relu', np.array([[1.], [-1.]], np.float32), np.zeros(1, np.float32))
    x = tf.constant([[1., 1.]])
    with tf.GradientTape() as tape:
        y = layer(x)
    dw, db = tape.gradient(y, [layer.kernel, layer.bias])

    assert y.numpy()[0, 0] == 0
    np.testing.assert_array_equal(dw.numpy(), [[0.], [0.]])
    np.testing.assert_array_equal(db.numpy(), [0.])


# --- a two-layer stack: y = elu(relu(x W1 + b1) W2 + b2) -------------------------------------

W2 = np.array([[1., -0.5],
               [-2., 0.5]], dtype=np.float32)
B2 = np.array([0.25, -1.], dtype=np.float32)
# h = relu(Z) = [[2.5, 0.5], [0, 0.25]]; z2 = h W2 + B2, by hand:
#   row 0: [2.5 - 1,  -1.25 + 0.25] + [0.25, -1] = [1.75, -2]
#   row 1: [0 - 0.5,  0 + 0.125]    + [0.25, -1] = [-0.25, -0.875]
Z2 = np.array([[1.75, -2.],
               [-0.25, -0.875]], dtype=np.float32)


def test_two_layer_stack():
    tf.random.set_seed(0)
    layer1 = _dense(2, 'relu', W, B)
    layer2 = _dense(2, 'elu', W2, B2)
    x = tf.constant(X)

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer2(layer1(x))
        loss = tf.reduce_sum(C * y)
    grads = tape.gradient(loss, [layer1.kernel, layer1.bias, layer2.kernel, layer2.bias, x])
    j1 = tape.jacobian(y, layer1.kernel)
    j2 = tape.jacobian(y, layer2.kernel)

    h = relu(X @ W + B)
    z2 = h @ W2 + B2
    np.testing.assert_array_equal(z2, Z2)
    np.testing.assert_allclose(y.numpy(), elu(Z2), rtol=1e-6)

    # backward by hand: dz2 = C * elu'(z2); dW2 = h^T dz2; db2 = sum dz2;
    # dh = dz2 W2^T; dz1 = dh * relu'(z1); dW1 = x^T dz1; db1 = sum dz1; dx = dz1 W^T
    m1, d2 = relu_grad(X @ W + B), elu_grad(Z2)
    dz2 = C * d2
    dz1 = (dz2 @ W2.T) * m1
    want = [X.T @ dz1, dz1.sum(axis=0), h.T @ dz2, dz2.sum(axis=0), dz1 @ W.T]
    for got, exp in zip(grads, want):
        np.testing.assert_allclose(got.numpy(), exp, rtol=1e-5, atol=1e-7)

    # jacobians: dy[n, k]/dW2[j, l] = h[n, j] elu'(z2[n, k]) [k == l]
    #            dy[n, k]/dW1[i, l] = elu'(z2[n, k]) W2[l, k] relu'(z1[n, l]) x[n, i]
    assert j1.shape == (2, 2, 3, 2) and j2.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(j2.numpy(), np.einsum('nj,nk,kl->nkjl', h, d2, np.eye(2)),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(j1.numpy(), np.einsum('nk,lk,nl,ni->nkil', d2, W2, m1, X),
                               rtol=1e-6, atol=1e-7)


# --- BatchNormalization in training mode ------------------------------------------------------

XB = np.array([[1., 2., 0.],
               [3., -2., 1.],
               [5., 0., -1.],
               [-1., 4., 2.]], dtype=np.float32)
GAMMA = np.array([1., 2., 0.5], dtype=np.float32)
BETA = np.array([0., -1., 0.5], dtype=np.float32)
MOVING_MEAN = np.array([1., -1., 0.5], dtype=np.float32)
MOVING_VAR = np.array([2., 0.5, 1.], dtype=np.float32)
CB = np.array([[1., -1., 2.],
               [0.5, 2., -1.],
               [-2., 1., 1.],
               [1., 0., 0.5]], dtype=np.float32)
EPS = 1e-3


def _batch_norm_by_hand(x, gamma, beta, c):
    """Training-mode batch norm over axis 0 and the input gradient of L = sum(c * y).

    mean = sum_n x[n] / N, var = sum_n (x[n] - mean)^2 / N (biased), s = sqrt(var + eps),
    xhat = (x - mean) / s, y = gamma xhat + beta.  With g = dL/dxhat = c gamma:
        dL/dx = (N g - sum_n g - xhat sum_n (g xhat)) / (N s)
        dL/dgamma = sum_n c xhat,  dL/dbeta = sum_n c
    """
    x = x.astype(np.float64)
    n = x.shape[0]
    mean = x.sum(axis=0) / n
    var = ((x - mean) ** 2).sum(axis=0) / n
    s = np.sqrt(var + EPS)
    xhat = (x - mean) / s
    y = gamma * xhat + beta
    g = c * gamma
    dx = (n * g - g.sum(axis=0) - xhat * (g * xhat).sum(axis=0)) / (n * s)
    # the jacobian: dy[n, k]/dx[m, k'] = [k == k'] gamma[k] / s[k] ([n == m] - 1/N - xhat[n, k] xhat[m, k] / N)
    jac = np.einsum('kq,k,nmk->nkmq', np.eye(x.shape[1]), gamma / s,
                    np.eye(n)[:, :, None] - 1 / n - np.einsum('nk,mk->nmk', xhat, xhat) / n)
    return mean, var, y, dx, (c * xhat).sum(axis=0), c.sum(axis=0), jac


def _bn(weights=None):
    bn = tf.keras.layers.BatchNormalization()
    bn.build((None, 3))
    if weights is not None:
        bn.set_weights(weights)
    return bn


def test_batch_norm_variables():
    tf.random.set_seed(0)
    bn = _bn()

    assert bn.momentum == 0.99 and bn.epsilon == 1e-3
    # Keras 3's names (Keras 2 printed 'gamma:0' ...): the path holds the layer
    assert [v.name for v in bn.trainable_variables] == ['gamma', 'beta']
    assert [v.name for v in bn.non_trainable_variables] == ['moving_mean', 'moving_variance']
    np.testing.assert_array_equal(bn.get_weights()[0], np.ones(3))
    np.testing.assert_array_equal(bn.get_weights()[1], np.zeros(3))
    np.testing.assert_array_equal(bn.get_weights()[2], np.zeros(3))
    np.testing.assert_array_equal(bn.get_weights()[3], np.ones(3))


def test_batch_norm_training_on_paper():
    tf.random.set_seed(0)
    bn = _bn()  # gamma 1, beta 0, moving mean 0, moving variance 1
    x = tf.constant([[1.], [3.]]) * tf.ones([1, 3])

    y = bn(x, training=True)

    # mean 2, biased variance ((1-2)^2 + (3-2)^2) / 2 = 1, so y = -+1 / sqrt(1 + 1e-3)
    r = 1 / np.sqrt(1.001)
    np.testing.assert_allclose(y.numpy(), [[-r] * 3, [r] * 3], rtol=1e-6)
    # moving = 0.99 moving + 0.01 batch: mean 0.99*0 + 0.01*2, variance 0.99*1 + 0.01*1
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.02] * 3, rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [1.0] * 3, rtol=1e-6)


def test_batch_norm_training_by_formula():
    tf.random.set_seed(0)
    bn = _bn([GAMMA, BETA, MOVING_MEAN, MOVING_VAR])
    x = tf.constant(XB)

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = bn(x, training=True)
        loss = tf.reduce_sum(CB * y)
    dx, dgamma, dbeta = tape.gradient(loss, [x, bn.gamma, bn.beta])
    j = tape.jacobian(y, x)

    mean, var, want_y, want_dx, want_dgamma, want_dbeta, want_j = \
        _batch_norm_by_hand(XB, GAMMA, BETA, CB)
    np.testing.assert_allclose(mean, [2., 1., 0.5])
    np.testing.assert_allclose(var, [5., 5., 1.25])
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx.numpy(), want_dx, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(dgamma.numpy(), want_dgamma, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dbeta.numpy(), want_dbeta, rtol=1e-6)
    assert j.shape == (4, 3, 4, 3)
    np.testing.assert_allclose(j.numpy(), want_j, rtol=1e-4, atol=1e-6)
    # the moving statistics moved once: moving = 0.99 moving + 0.01 batch (biased variance)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.99 * MOVING_MEAN + 0.01 * mean, rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.99 * MOVING_VAR + 0.01 * var,
                               rtol=1e-6)


def test_batch_norm_inference_uses_moving_statistics():
    tf.random.set_seed(0)
    bn = _bn([GAMMA, BETA, MOVING_MEAN, MOVING_VAR])
    x = tf.constant(XB)

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = bn(x, training=False)
    dx = tape.gradient(y, x)

    # y = gamma (x - moving_mean) / sqrt(moving_var + eps) + beta; dy/dx = gamma / sqrt(moving_var + eps)
    scale = GAMMA / np.sqrt(MOVING_VAR.astype(np.float64) + EPS)
    np.testing.assert_allclose(y.numpy(), (XB - MOVING_MEAN) * scale + BETA, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx.numpy(), np.broadcast_to(scale, XB.shape), rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), MOVING_MEAN)
    np.testing.assert_array_equal(bn.moving_variance.numpy(), MOVING_VAR)
