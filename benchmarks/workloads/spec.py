"""W1-W5: shapes, initial weights and batches, in numpy, the same for every framework.

Weights are in Keras's layout and ``get_weights()`` order (Dense kernels (in, out), Conv2D
kernels HWIO, LSTM kernels (in, 4*units) with gates i, f, c, o, MultiHeadAttention kernels
(d, heads, key_dim) and (heads, key_dim, d)); the peers convert from it.  Biases and
LayerNorm's gamma/beta are drawn too (not zeros or ones), so a layout mistake in a peer's bias
shows in the first-step guard.
"""
from dataclasses import dataclass, field

import numpy as np

LEARNING_RATE = 1e-3
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-7   # Keras's Adam defaults, in every framework
LAYER_NORM_EPSILON = 1e-6
MHA_HEADS, MHA_KEY_DIM, MODEL_DIM, FFN_DIM = 4, 32, 128, 256
VOCAB, EMBED, LSTM_UNITS = 2000, 64, 128


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    batch: int
    input_shape: tuple          # one example's shape
    loss: str                   # "sparse_ce" (from logits) or "mse"
    weight_shapes: tuple        # Keras get_weights() order
    steps_per_round: int        # distinct batches; one timed round runs them all once
    classes: int = 0            # sparse_ce: labels in [0, classes)
    gemms: tuple = field(default=())  # the BLAS floor: (count, a_shape, b_shape) per product


def dense_gemms(rows, widths, first_dx=False):
    """Forward, kernel-gradient and input-gradient products of a Dense chain on ``rows`` rows;
    the first layer's input gradient only with ``first_dx`` (its input is data otherwise)."""
    out = []
    for i, (k, n) in enumerate(zip(widths[:-1], widths[1:])):
        out += [(1, (rows, k), (k, n)), (1, (k, rows), (rows, n))]
        if i > 0 or first_dx:
            out.append((1, (rows, n), (n, k)))
    return tuple(out)


def conv_gemms(batch, out_hw, kernel, cin, cout, dx):
    """A 'valid' Conv2D as im2col GEMMs: forward, kernel gradient, and (with ``dx``) the input
    gradient as one forward-sized product before col2im."""
    rows, depth = batch * out_hw * out_hw, kernel * kernel * cin
    out = [(1, (rows, depth), (depth, cout)), (1, (depth, rows), (rows, cout))]
    if dx:
        out.append((1, (rows, cout), (cout, depth)))
    return tuple(out)


def _w3_gemms(batch=64, length=64):
    rows, gates = batch * length, 4 * LSTM_UNITS
    return ((1, (rows, EMBED), (EMBED, gates)),            # inputs' gate projections, all steps
            (1, (EMBED, rows), (rows, gates)),              # its kernel gradient
            (1, (rows, gates), (gates, EMBED)),             # the embeddings' gradient
            (length, (batch, LSTM_UNITS), (LSTM_UNITS, gates)),   # h @ recurrent, a step each
            (length, (batch, gates), (gates, LSTM_UNITS)),        # dh, a step each
            (1, (LSTM_UNITS, rows), (rows, gates)),         # recurrent kernel gradient
            ) + dense_gemms(batch, (LSTM_UNITS, 2), first_dx=True)


def _w4_gemms(batch=32, length=64):
    rows, d, heads = batch * length, MODEL_DIM, batch * MHA_HEADS
    qk = (heads, length, MHA_KEY_DIM)
    return ((3, (rows, d), (d, d)), (3, (d, rows), (rows, d)),      # q, k, v (input is data)
            (1, qk, (heads, MHA_KEY_DIM, length)),                  # scores
            (2, (heads, length, length), qk),                       # dq, dk
            (1, (heads, length, length), qk),                       # probabilities @ v
            (1, qk, (heads, MHA_KEY_DIM, length)),                  # d probabilities
            (1, (heads, length, length), qk),                       # dv
            ) + dense_gemms(rows, (d, d), first_dx=True) \
        + dense_gemms(rows, (d, FFN_DIM, d), first_dx=True) + dense_gemms(batch, (d, 2), True)


def _mha_shapes():
    d, h, k = MODEL_DIM, MHA_HEADS, MHA_KEY_DIM
    return ((d, h, k), (h, k)) * 3 + ((h, k, d), (d,))


WORKLOADS = {w.name: w for w in (
    Workload("W1", "MLP 784-512-512-10, softmax CE, batch 128", 128, (784,), "sparse_ce",
             ((784, 512), (512,), (512, 512), (512,), (512, 10), (10,)), 8, classes=10,
             gemms=dense_gemms(128, (784, 512, 512, 10))),
    Workload("W2", "CNN 28x28x1 conv32-pool-conv64-pool-128-10, batch 64", 64, (28, 28, 1),
             "sparse_ce", ((3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (1600, 128), (128,),
                           (128, 10), (10,)), 4, classes=10,
             gemms=conv_gemms(64, 26, 3, 1, 32, False) + conv_gemms(64, 11, 3, 32, 64, True)
             + dense_gemms(64, (1600, 128, 10), first_dx=True)),
    Workload("W3", "Embedding(2000, 64) + LSTM(128) + Dense(2), length 64, batch 64", 64, (64,),
             "sparse_ce", ((VOCAB, EMBED), (EMBED, 4 * LSTM_UNITS),
                           (LSTM_UNITS, 4 * LSTM_UNITS), (4 * LSTM_UNITS,),
                           (LSTM_UNITS, 2), (2,)), 2, classes=2, gemms=_w3_gemms()),
    Workload("W4", "transformer block (MHA 4x32, d 128, FFN 256, LayerNorm), length 64, batch 32",
             32, (64, MODEL_DIM), "sparse_ce",
             _mha_shapes() + ((MODEL_DIM,), (MODEL_DIM,), (MODEL_DIM, FFN_DIM), (FFN_DIM,),
                              (FFN_DIM, MODEL_DIM), (MODEL_DIM,), (MODEL_DIM,), (MODEL_DIM,),
                              (MODEL_DIM, 2), (2,)), 4, classes=2, gemms=_w4_gemms()),
    Workload("W5a", "housing MLP 8-64-64-1, MSE, batch 1,024", 1024, (8,), "mse",
             ((8, 64), (64,), (64, 64), (64,), (64, 1), (1,)), 32,
             gemms=dense_gemms(1024, (8, 64, 64, 1))),
    Workload("W5b", "housing MLP 8-64-64-1, MSE, batch 8,192", 8192, (8,), "mse",
             ((8, 64), (64,), (64, 64), (64,), (64, 1), (1,)), 4,
             gemms=dense_gemms(8192, (8, 64, 64, 1))),
)}


def initial_weights(workload, seed=0):
    """Glorot-uniform kernels (fan-in: all axes but the last; fan-out: the last, or for the
    attention output kernel (heads, key_dim, d) the last), small random biases, gamma near 1."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in workload.weight_shapes:
        if len(shape) == 1:
            w = rng.uniform(-0.05, 0.05, shape)
        elif shape == (VOCAB, EMBED):
            w = rng.uniform(-0.05, 0.05, shape)
        else:
            fan_in, fan_out = int(np.prod(shape[:-1])), shape[-1]
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            w = rng.uniform(-limit, limit, shape)
        out.append(w.astype(np.float32))
    if workload.name == "W4":  # the two LayerNorms' gammas: near 1
        for i in (8, 14):
            out[i] += 1.0
    return out


def batches(workload, seed=1):
    """``steps_per_round`` batches (x, y) as numpy arrays: ids for W3, features otherwise."""
    rng = np.random.default_rng(seed)
    n = workload.batch * workload.steps_per_round
    if workload.name == "W3":
        x = rng.integers(0, VOCAB, (n,) + workload.input_shape).astype(np.int32)
    elif workload.name == "W2":
        x = rng.uniform(0.0, 1.0, (n,) + workload.input_shape).astype(np.float32)
    else:
        x = rng.standard_normal((n,) + workload.input_shape).astype(np.float32)
    if workload.loss == "sparse_ce":
        y = rng.integers(0, workload.classes, (n,)).astype(np.int64)
    else:
        y = rng.standard_normal((n, 1)).astype(np.float32)
    b = workload.batch
    return [(x[i:i + b], y[i:i + b]) for i in range(0, n, b)]
