"""The recurrent steps compiled with numba (``ops/rnn_jit.py``: LSTM, GRU, SimpleRNN) against
the numpy steps, and their ``exp``/``sigmoid``/``tanh`` against float64 numpy.  Skipped without numba (the ``jit``
extra); the numpy path is what the op battery and the strict device run."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

from tapeflow.ops import _rnn_numba, jit, rnn, rnn_jit  # noqa: E402 - after the skip

GATES, N_STATES = {"lstm": 4, "gru": 3, "simple_rnn": 1}, {"lstm": 2, "gru": 1, "simple_rnn": 1}


@numba.njit(cache=True, error_model="numpy")
def _apply(fn_id, x, out):
    for k in range(x.size):
        v = x[k]
        out[k] = _rnn_numba._exp(v) if fn_id == 0 else (
            _rnn_numba._sigmoid(v) if fn_id == 1 else _rnn_numba._tanh(v))


def _compiled(fn_id, x):
    x = np.asarray(x, np.float32)
    out = np.empty_like(x)
    _apply(fn_id, x, out)
    return out


def test_exp_is_as_accurate_as_numpys():
    x = np.linspace(-86.5, 88.72, 200_001, dtype=np.float32)
    exact = np.exp(x.astype(np.float64))
    assert np.max(np.abs(_compiled(0, x) - exact) / exact) < 1.5e-7
    np.testing.assert_array_equal(_compiled(0, [88.73, 1e4, -86.6, -1e4]), [np.inf, np.inf, 0, 0])


def test_sigmoid_and_tanh_against_float64():
    x = np.concatenate([np.linspace(-40, 40, 100_001, dtype=np.float32),
                        np.float32([1e-30, -1e-30, 1e-6, -3e-4, 0.62, 0.63, -0.63])])
    x64 = x.astype(np.float64)
    sigmoid = 1 / (1 + np.exp(-x64))
    assert np.max(np.abs(_compiled(1, x) - sigmoid) / sigmoid) < 3e-7
    tanh = np.tanh(x64)
    nonzero = tanh != 0
    # relative accuracy near 0 too (no cancellation in 1 - 2 / (exp(2x) + 1) there)
    assert np.max(np.abs(_compiled(2, x) - tanh)[nonzero] / np.abs(tanh[nonzero])) < 3e-7


def test_limits_and_nan():
    x = np.float32([np.inf, -np.inf, 100.0, -100.0, np.nan, 0.0])
    np.testing.assert_array_equal(_compiled(1, x)[:4], [1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(_compiled(2, x)[:4], [1.0, -1.0, 1.0, -1.0])
    for fn_id in (0, 1, 2):
        assert np.isnan(_compiled(fn_id, x)[4])  # NaN is not clamped away
    assert _compiled(2, x)[5] == 0.0 and _compiled(1, x)[5] == 0.5


def _sequence(kind, batch, steps, units, seed, with_init, compiled, monkeypatch, mask=None,
              zero_output=False):
    """The forward's outputs and the backward's gradients, through the compiled steps (at
    any size here) or numpy's (the kernels switched off for this call)."""
    monkeypatch.setattr(rnn_jit, "JIT_FROM", 0)
    if not compiled:
        monkeypatch.setattr(jit, "_LOADED", {"tapeflow.ops._rnn_numba": None})
    rng = np.random.default_rng(seed)
    f32 = np.float32
    gates, n_states = GATES[kind], N_STATES[kind]
    projected = rng.normal(scale=2.0, size=(batch, steps, gates * units)).astype(f32)
    U = rng.normal(scale=0.5, size=(units, gates * units)).astype(f32)
    rb = [rng.normal(size=gates * units).astype(f32)] if kind == "gru" else []
    init = [rng.normal(size=(batch, units)).astype(f32) for _ in range(n_states)] \
        if with_init else []
    masks = [] if mask is None else [mask]
    attrs = dict(kind=kind, has_bias=bool(rb), has_init=with_init, has_mask=mask is not None,
                 zero_output=zero_output)
    outs = rnn._sequence_forward(projected, U, *rb, *init, *masks, **attrs)
    d_seq = rng.normal(size=(batch, steps, units)).astype(f32)
    d_last = [rng.normal(size=(batch, units)).astype(f32) for _ in range(n_states)]
    grads = rnn._sequence_backward(projected, U, *rb, *init, *masks, outs[-1], d_seq, *d_last,
                                   **attrs)
    monkeypatch.undo()
    return outs, grads


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
@pytest.mark.parametrize("batch, steps, units, with_init",
                         [(3, 5, 4, False), (2, 7, 13, True), (5, 3, 19, True)])
def test_compiled_steps_equal_numpys(kind, batch, steps, units, with_init, monkeypatch):
    """Units that are not a multiple of the vector width exercise the loops' remainders."""
    assert rnn_jit.kernels(np.zeros(rnn_jit.JIT_FROM, np.float32)) is not None
    jit_outs, jit_grads = _sequence(kind, batch, steps, units, 1, with_init, True, monkeypatch)
    np_outs, np_grads = _sequence(kind, batch, steps, units, 1, with_init, False, monkeypatch)
    assert len(jit_grads) == len(np_grads)
    for got, want in zip(jit_outs[:-1] + tuple(jit_grads), np_outs[:-1] + tuple(np_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    # the workspace's saved planes too: either path's backward reads them
    np.testing.assert_allclose(jit_outs[-1], np_outs[-1], rtol=2e-5, atol=2e-6)


# rows: unmasked; leading, trailing and interleaved masked steps; every step masked
MASK = np.array([[1, 1, 1, 1, 1, 1, 1],
                 [0, 0, 1, 1, 1, 1, 1],
                 [1, 1, 1, 1, 0, 0, 0],
                 [1, 0, 1, 0, 0, 1, 0],
                 [0, 0, 0, 0, 0, 0, 0]], bool)


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
@pytest.mark.parametrize("zero_output", [False, True])
@pytest.mark.parametrize("units, with_init", [(4, False), (13, True)])
def test_masked_compiled_steps_equal_numpys(kind, zero_output, units, with_init, monkeypatch):
    """Keras's masks (``_numpy_steps``, ``_sequence_backward``'s numpy loop) on the compiled
    steps: outputs, last states, workspace and every gradient, float32, rtol 2e-5 and atol 2e-6
    as the unmasked test.  The fully masked row outputs zeros; masked steps' projected inputs
    get zero gradients."""
    batch, steps = MASK.shape
    jit_outs, jit_grads = _sequence(kind, batch, steps, units, 2, with_init, True, monkeypatch,
                                    MASK, zero_output)
    np_outs, np_grads = _sequence(kind, batch, steps, units, 2, with_init, False, monkeypatch,
                                  MASK, zero_output)
    assert len(jit_grads) == len(np_grads) == 2 + (kind == "gru") + with_init * N_STATES[kind]
    for got, want in zip(jit_outs + tuple(jit_grads), np_outs + tuple(np_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    seq, d_projected = jit_outs[0], jit_grads[0]
    np.testing.assert_array_equal(seq[4], 0.0)
    np.testing.assert_array_equal(d_projected[~MASK], 0.0)
    if zero_output:
        np.testing.assert_array_equal(seq[~MASK], 0.0)
    else:  # a masked step repeats the last output: zeros before the first unmasked one
        np.testing.assert_array_equal(seq[1, :2], 0.0)
        np.testing.assert_array_equal(seq[2, 4:], np.broadcast_to(seq[2, 3], (3, units)))
        np.testing.assert_array_equal(seq[3, 3:5], np.broadcast_to(seq[3, 2], (2, units)))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("zero_output", [False, True])
def test_masked_compiled_steps_of_one_row(kind, zero_output, monkeypatch):
    """A batch of one: the outputs are a copy of the states, not a view of the workspace
    that hiding the masked steps' outputs would write zeros into."""
    mask = MASK[3:4]
    jit_outs, jit_grads = _sequence(kind, 1, mask.shape[1], 5, 3, True, True, monkeypatch, mask,
                                    zero_output)
    np_outs, np_grads = _sequence(kind, 1, mask.shape[1], 5, 3, True, False, monkeypatch, mask,
                                  zero_output)
    for got, want in zip(jit_outs + tuple(jit_grads), np_outs + tuple(np_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_other_dtypes_and_arrays_take_numpys_steps():
    big = np.zeros(rnn_jit.JIT_FROM, np.float32)
    assert rnn_jit.kernels(big.astype(np.float64)) is None
    assert rnn_jit.kernels(big, np.zeros(2, np.float16)) is None
    assert rnn_jit.kernels(big.view(np.recarray)) is None
    assert rnn_jit.kernels(big[:100]) is None  # small: numba's start would not pay


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("TAPEFLOW_JIT", "0")
    monkeypatch.setattr(jit, "_LOADED", {})
    assert rnn_jit.kernels(np.zeros(rnn_jit.JIT_FROM, np.float32)) is None
