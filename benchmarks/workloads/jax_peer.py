"""W1-W5 in plain jax: the forward written with ``jax.numpy``/``lax`` on Keras-layout weights
(NHWC convolutions with HWIO kernels, so no conversion), ``jax.value_and_grad``, and a minimal
Adam with Keras's formulas, the whole step under one ``jax.jit`` (parameters and Adam's state
donated, so XLA updates them in place)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .spec import BETA_1, BETA_2, EPSILON, LAYER_NORM_EPSILON, LEARNING_RATE, MHA_KEY_DIM


def _dense_chain(params, x):
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = jax.nn.relu(x)
    return x


def _max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _conv(x, kernel, bias):
    return lax.conv_general_dilated(x, kernel, (1, 1), "VALID",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC")) + bias


def _cnn(p, x):
    x = _max_pool(jax.nn.relu(_conv(x, p[0], p[1])))
    x = _max_pool(jax.nn.relu(_conv(x, p[2], p[3])))
    return _dense_chain(p[4:], x.reshape(x.shape[0], -1))


def _lstm_classifier(p, ids):
    embedding, kernel, recurrent, bias = p[:4]
    gates_in = jnp.swapaxes(embedding[ids] @ kernel + bias, 0, 1)  # (length, batch, 4 units)
    units = recurrent.shape[0]

    def cell(state, z_in):
        h, c = state
        i, f, g, o = jnp.split(z_in + h @ recurrent, 4, axis=-1)   # Keras's gate order
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), None

    zeros = jnp.zeros((ids.shape[0], units), gates_in.dtype)
    (h, _), _ = lax.scan(cell, (zeros, zeros), gates_in)
    return h @ p[4] + p[5]


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(variance + LAYER_NORM_EPSILON) * gamma + beta


def _transformer_block(p, x):
    q = (jnp.einsum("bld,dhk->blhk", x, p[0]) + p[1]) * (1.0 / np.sqrt(MHA_KEY_DIM))
    k = jnp.einsum("bld,dhk->blhk", x, p[2]) + p[3]
    v = jnp.einsum("bld,dhk->blhk", x, p[4]) + p[5]
    weights = jax.nn.softmax(jnp.einsum("bqhk,bshk->bhqs", q, k), axis=-1)
    attention = jnp.einsum("bhqs,bshk->bqhk", weights, v)
    attention = jnp.einsum("bqhk,hkd->bqd", attention, p[6]) + p[7]
    h = _layer_norm(x + attention, p[8], p[9])
    h = _layer_norm(h + (jax.nn.relu(h @ p[10] + p[11]) @ p[12] + p[13]), p[14], p[15])
    return h.mean(1) @ p[16] + p[17]


FORWARD = {"W1": _dense_chain, "W2": _cnn, "W3": _lstm_classifier, "W4": _transformer_block,
           "W5a": _dense_chain, "W5b": _dense_chain}


def _loss_fn(forward, kind):
    def loss(params, x, y):
        out = forward(params, x)
        if kind == "mse":
            return jnp.mean((out - y) ** 2)
        log_probs = jax.nn.log_softmax(out)
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=-1))
    return loss


def _adam_update(params, m, v, grads, t):
    """Keras's Adam at step ``t`` (from 1)."""
    alpha = LEARNING_RATE * jnp.sqrt(1.0 - BETA_2 ** t) / (1.0 - BETA_1 ** t)
    m = [mi + (g - mi) * (1.0 - BETA_1) for mi, g in zip(m, grads)]
    v = [vi + (g * g - vi) * (1.0 - BETA_2) for vi, g in zip(v, grads)]
    params = [w - mi * alpha / (jnp.sqrt(vi) + EPSILON) for w, mi, vi in zip(params, m, v)]
    return params, m, v


class JaxJit:
    label = "jax.jit"

    def __init__(self, workload, weights, batches):
        value_and_grad = jax.value_and_grad(_loss_fn(FORWARD[workload.name], workload.loss))

        def step(params, m, v, t, x, y):
            loss, grads = value_and_grad(params, x, y)
            params, m, v = _adam_update(params, m, v, grads, t + 1.0)
            return params, m, v, t + 1.0, loss

        self.step = jax.jit(step, donate_argnums=(0, 1, 2))
        self.params = [jnp.asarray(w) for w in weights]
        self.m = [jnp.zeros_like(w) for w in self.params]
        self.v = [jnp.zeros_like(w) for w in self.params]
        self.t = jnp.float32(0.0)
        self.batches = [(jnp.asarray(x), jnp.asarray(y)) for x, y in batches]

    def _step(self, x, y):
        self.params, self.m, self.v, self.t, loss = self.step(self.params, self.m, self.v,
                                                              self.t, x, y)
        return loss

    def first_step(self):
        loss = float(self._step(*self.batches[0]))
        return loss, [np.asarray(w) for w in self.params]

    def run_round(self):
        for x, y in self.batches:
            loss = self._step(x, y)
        loss.block_until_ready()  # steps chain through the parameters: the last waits for all


def runners(workload, weights, batches):
    return [JaxJit(workload, weights, batches)]
