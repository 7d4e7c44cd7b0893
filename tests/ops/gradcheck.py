"""Numerical gradient checks for tapeflow, in the manner of ``jax.test_util.check_grads``.

``check_grads(fn, args, order=2)`` checks a function built from tapeflow ops:

* order 1: the vector-Jacobian product ``tape.gradient(reduce_sum(out * w), args)``
  for a fixed random cotangent ``w`` against central finite differences of the
  scalar ``sum(fn(args) * w)``, one input element at a time;
* order 2: the Hessian-vector product ``d/dx (gradient . v)`` taken with nested
  tapes against central finite differences of the first-order (tape) gradient
  along ``v``.

``fn`` takes tensors and returns a tensor (or a list/tuple of tensors, whose
weighted sums are added); ``args`` are arrays, checked in float64.
``check_jacobian`` and ``check_batch_jacobian`` compare the vectorized
jacobians with one ``tape.gradient`` per output element.

Forward mode (``tf.autodiff.ForwardAccumulator``), over the same cases:

* ``check_jvp``: the JVP ``J v`` for a random direction ``v`` against central finite
  differences (one input element at a time, weighted by ``v``), and against reverse mode
  by the dot-product identity ``<w, J v> = <J^T w, v>``;
* ``check_forward_over_reverse``: the accumulator's JVP of the tape gradient (a
  Hessian-vector product, forward over reverse) against central differences of the gradient.

Every check raises ``AssertionError`` with the arrays involved on a mismatch.
"""
import warnings

import numpy as np

import tapeflow as tf
from tapeflow import backend

__all__ = [
    "check_grads", "check_vjp", "check_hvp", "check_jacobian", "check_batch_jacobian",
    "numerical_vjp", "tape_vjp", "EPS", "RTOL", "ATOL",
    "forward_jvp", "numerical_jvp", "check_jvp", "forward_over_reverse_hvp",
    "check_forward_over_reverse",
]

EPS = 1e-6    # central-difference step
RTOL = 1e-6   # relative tolerance against the finite difference
ATOL = 1e-8   # absolute tolerance


# --- plumbing ---------------------------------------------------------------------------------
def _as_arrays(args):
    return [np.array(a, dtype=np.float64) for a in args]


def _tensors(arrays):
    return [tf.constant(a) for a in arrays]


def _flat_outputs(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _host(t):
    """A tensor's value on the host (it may live on a device: ``pytest --device strict``)."""
    return np.asarray(backend.to_host(t._value))


def _values(outs):
    return [_host(o) for o in outs]


def _evaluate(fn, arrays):
    """fn on fresh constants (no tape), as arrays."""
    return _values(_flat_outputs(fn(*_tensors(arrays))))


def _cotangents(fn, arrays, rng):
    outs = _evaluate(fn, arrays)
    for o in outs:
        if o.dtype != np.float64:
            raise TypeError(f"check_grads needs float64 outputs, got {o.dtype}")
    return [rng.standard_normal(o.shape) for o in outs]


def _weighted_sum(outs, ws):
    terms = [tf.reduce_sum(o * tf.constant(w)) for o, w in zip(outs, ws)]
    return tf.add_n(terms)


def _describe(arrays):
    return "\n".join(f"  arg {i}: shape {a.shape}\n{np.array2string(a, precision=17, threshold=64)}"
                     for i, a in enumerate(arrays))


def _compare(what, analytic, numeric, rtol, atol, arrays, extra=""):
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        a = np.asarray(a)
        if a.shape != n.shape:
            raise AssertionError(f"{what}: gradient of arg {i} has shape {a.shape}, "
                                 f"expected {n.shape}")
        if a.dtype != np.float64:
            raise AssertionError(f"{what}: gradient of arg {i} has dtype {a.dtype}, expected float64")
        np.testing.assert_allclose(
            a, n, rtol=rtol, atol=atol,
            err_msg=f"{what}: arg {i} (analytic = tapeflow, desired = finite differences)\n"
                    f"inputs:\n{_describe(arrays)}{extra}")


# --- first order -------------------------------------------------------------------------------
def tape_vjp(fn, arrays, ws):
    """tape.gradient(sum(fn(x) * w), x) with unconnected gradients as zeros, as arrays."""
    xs = _tensors(arrays)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        loss = _weighted_sum(_flat_outputs(fn(*xs)), ws)
    grads = tape.gradient(loss, xs, unconnected_gradients="zero")
    return [_host(g) for g in grads]


def _element_steps(fn, arrays, eps):
    """(arg i, index, fn's outputs at x + eps e, at x - eps e) for every input element e."""
    for i, a in enumerate(arrays):
        for idx in np.ndindex(a.shape):
            plus, minus = list(arrays), list(arrays)
            p, m = a.copy(), a.copy()
            p[idx] += eps
            m[idx] -= eps
            plus[i], minus[i] = p, m
            yield i, idx, _evaluate(fn, plus), _evaluate(fn, minus)


def numerical_vjp(fn, arrays, ws, eps=EPS):
    """Central differences of sum(fn(x) * w), one input element at a time."""
    grads = [np.zeros_like(a) for a in arrays]
    for i, idx, op, om in _element_steps(fn, arrays, eps):
        # difference elementwise first: outputs that do not move cancel exactly
        grads[i][idx] = sum(np.sum(w * (u - v)) for w, u, v in zip(ws, op, om)) / (2 * eps)
    return grads


def check_vjp(fn, args, ws=None, *, eps=EPS, rtol=RTOL, atol=ATOL, seed=0):
    arrays = _as_arrays(args)
    rng = np.random.default_rng(seed)
    if ws is None:
        ws = _cotangents(fn, arrays, rng)
    analytic = tape_vjp(fn, arrays, ws)
    numeric = numerical_vjp(fn, arrays, ws, eps)
    cot = "\n".join(f"  cotangent {k}:\n{np.array2string(w, precision=17, threshold=64)}" for k, w in enumerate(ws))
    _compare("first-order gradient (VJP)", analytic, numeric, rtol, atol, arrays,
             f"\ncotangents:\n{cot}")
    return analytic


# --- second order ------------------------------------------------------------------------------
def tape_hvp(fn, arrays, ws, vs):
    """d/dx [gradient(sum(fn(x) * w), x) . v] with nested tapes: a Hessian-vector product."""
    xs = _tensors(arrays)
    with tf.GradientTape() as outer:
        outer.watch(xs)
        with tf.GradientTape() as inner:
            inner.watch(xs)
            loss = _weighted_sum(_flat_outputs(fn(*xs)), ws)
        grads = inner.gradient(loss, xs, unconnected_gradients="zero")
        dot = tf.add_n([tf.reduce_sum(g * tf.constant(v)) for g, v in zip(grads, vs)])
    hv = outer.gradient(dot, xs, unconnected_gradients="zero")
    return [_host(h) for h in hv]


def check_hvp(fn, args, ws=None, vs=None, *, eps=EPS, rtol=RTOL, atol=ATOL, seed=0,
              hvp=None, what="second-order (Hessian-vector product)"):
    """Nested-tape H v against (g(x + eps v) - g(x - eps v)) / (2 eps), g the tape gradient.

    ``hvp(fn, arrays, ws, vs)`` replaces the nested tapes (``tape_hvp``) as the H v checked."""
    arrays = _as_arrays(args)
    rng = np.random.default_rng(seed)
    if ws is None:
        ws = _cotangents(fn, arrays, rng)
    if vs is None:
        vs = [rng.standard_normal(a.shape) for a in arrays]
    analytic = (hvp or tape_hvp)(fn, arrays, ws, vs)
    gp = tape_vjp(fn, [a + eps * v for a, v in zip(arrays, vs)], ws)
    gm = tape_vjp(fn, [a - eps * v for a, v in zip(arrays, vs)], ws)
    numeric = [(p - m) / (2 * eps) for p, m in zip(gp, gm)]
    extra = "\n".join(f"  direction v{k}:\n{np.array2string(v, precision=17, threshold=64)}" for k, v in enumerate(vs))
    _compare(what, analytic, numeric, rtol, atol, arrays, f"\ndirections:\n{extra}")
    return analytic


def check_grads(fn, args, order=2, *, eps=EPS, rtol=RTOL, atol=ATOL, seed=0):
    """Check tapeflow's derivatives of ``fn`` at ``args`` up to ``order`` (1 or 2)."""
    if order not in (1, 2):
        raise ValueError("check_grads checks order 1 or 2")
    rng = np.random.default_rng(seed)
    arrays = _as_arrays(args)
    ws = _cotangents(fn, arrays, rng)
    check_vjp(fn, arrays, ws, eps=eps, rtol=rtol, atol=atol)
    if order >= 2:
        vs = [rng.standard_normal(a.shape) for a in arrays]
        check_hvp(fn, arrays, ws, vs, eps=eps, rtol=rtol, atol=atol)


# --- jacobians ---------------------------------------------------------------------------------
def _loop_jacobian(tape, out, xs):
    """One tape.gradient per element of ``out`` (one-hot output_gradients)."""
    oshape = tuple(out._value.shape)
    n = int(np.prod(oshape, dtype=np.int64))
    rows = [np.zeros((n,) + tuple(x._value.shape)) for x in xs]
    for k in range(n):
        onehot = np.zeros(n)
        onehot[k] = 1.0
        grads = tape.gradient(out, xs, output_gradients=tf.constant(onehot.reshape(oshape)),
                              unconnected_gradients="zero")
        for r, g in zip(rows, grads):
            r[k] = _host(g)
    return [r.reshape(oshape + tuple(x._value.shape)) for r, x in zip(rows, xs)]


def _no_loop_warning(caught, what):
    looped = [str(w.message) for w in caught if "loops over" in str(w.message)]
    if looped:
        raise AssertionError(f"{what} fell back to a loop instead of one vectorized pass: {looped[0]}")


def check_jacobian(fn, args, *, chunk_sizes=(None, 2), rtol=1e-10, atol=1e-12):
    """tape.jacobian (vectorized, and in chunks) against the per-element gradient loop."""
    arrays = _as_arrays(args)
    xs = _tensors(arrays)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        outs = _flat_outputs(fn(*xs))
    for j, out in enumerate(outs):
        expected = _loop_jacobian(tape, out, xs)
        for chunk in chunk_sizes:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = tape.jacobian(out, xs, unconnected_gradients="zero", chunk_size=chunk)
            _no_loop_warning(caught, f"jacobian(chunk_size={chunk})")
            for i, (g, e) in enumerate(zip(got, expected)):
                g = _host(g)
                if g.shape != e.shape:
                    raise AssertionError(f"jacobian(chunk_size={chunk}) of output {j} wrt arg {i} "
                                         f"has shape {g.shape}, expected {e.shape}")
                np.testing.assert_allclose(
                    g, e, rtol=rtol, atol=atol,
                    err_msg=f"jacobian(chunk_size={chunk}) of output {j} wrt arg {i} "
                            f"(desired = per-element tape.gradient loop)\ninputs:\n{_describe(arrays)}")


def check_batch_jacobian(fn, x, *, chunk_sizes=(None, 2), rtol=1e-10, atol=1e-12):
    """tape.batch_jacobian against the per-example diagonal blocks of the full jacobian.

    ``fn`` must be batch-independent: example ``b`` of the output depends only on
    example ``b`` of ``x``.
    """
    (x_arr,) = _as_arrays([x])
    xt = tf.constant(x_arr)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        out = fn(xt)
    full = _host(tape.jacobian(out, xt))
    b = x_arr.shape[0]
    oshape, xshape = tuple(out._value.shape), x_arr.shape
    if oshape[0] != b:
        raise ValueError("check_batch_jacobian needs an output with the input's batch axis")
    full = full.reshape((b, int(np.prod(oshape[1:], dtype=np.int64)), b, -1))
    expected = np.stack([full[k, :, k, :] for k in range(b)]).reshape(oshape + xshape[1:])
    # batch-independence: the off-diagonal blocks are zero
    off = full.copy()
    for k in range(b):
        off[k, :, k, :] = 0
    assert not np.any(off), "check_batch_jacobian: fn mixes examples across the batch"
    for chunk in chunk_sizes:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = tape.batch_jacobian(out, xt, chunk_size=chunk)
        _no_loop_warning(caught, f"batch_jacobian(chunk_size={chunk})")
        got = _host(got)
        if got.shape != expected.shape:
            raise AssertionError(f"batch_jacobian(chunk_size={chunk}) has shape {got.shape}, "
                                 f"expected {expected.shape}")
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                   err_msg=f"batch_jacobian(chunk_size={chunk}) vs diagonal of jacobian")


# --- forward mode ------------------------------------------------------------------------------
def forward_jvp(fn, arrays, vs):
    """The tangents of fn's outputs along ``vs`` from a ForwardAccumulator (zeros if unconnected)."""
    xs = _tensors(arrays)
    with tf.autodiff.ForwardAccumulator(xs, [tf.constant(v) for v in vs]) as acc:
        outs = _flat_outputs(fn(*xs))
    return [_host(t) for t in acc.jvp(outs, unconnected_gradients="zero")]


def numerical_jvp(fn, arrays, vs, eps=EPS):
    """Sum over input elements of v[idx] times the central difference in that element alone
    (the steps of ``numerical_vjp``, so a domain chosen to make them exact keeps them exact)."""
    outs = [np.zeros_like(o) for o in _evaluate(fn, arrays)]
    for i, idx, op, om in _element_steps(fn, arrays, eps):
        for out, u, w in zip(outs, op, om):
            out += vs[i][idx] * ((u - w) / (2 * eps))
    return outs


def check_jvp(fn, args, vs=None, *, eps=EPS, rtol=RTOL, atol=ATOL, seed=0, dot_rtol=None):
    """Forward-mode J v against central differences along v, and against the tape's J^T w
    (to ``dot_rtol`` of sum |w * Jv|; by default ``rtol``: a case through float32 rounds)."""
    arrays = _as_arrays(args)
    rng = np.random.default_rng(seed)
    if vs is None:
        vs = [rng.standard_normal(a.shape) for a in arrays]
    analytic = forward_jvp(fn, arrays, vs)
    numeric = numerical_jvp(fn, arrays, vs, eps)
    extra = "\n".join(f"  direction v{k}:\n{np.array2string(v, precision=17, threshold=64)}"
                      for k, v in enumerate(vs))
    _compare("forward mode (JVP)", analytic, numeric, rtol, atol, arrays, f"\ndirections:\n{extra}")
    # <w, J v> = <J^T w, v>: forward mode against reverse mode, to rounding
    ws = [rng.standard_normal(o.shape) for o in analytic]
    forward = sum(float(np.sum(w * t)) for w, t in zip(ws, analytic))
    reverse = sum(float(np.sum(g * v)) for g, v in zip(tape_vjp(fn, arrays, ws), vs))
    dot_rtol = rtol if dot_rtol is None else dot_rtol
    scale = sum(float(np.sum(np.abs(w * t))) for w, t in zip(ws, analytic)) + 1e-300
    if abs(forward - reverse) > dot_rtol * scale + 1e-12:
        raise AssertionError(f"forward mode (JVP): <w, J v> = {forward!r} but <J^T w, v> = "
                             f"{reverse!r} from the tape\ninputs:\n{_describe(arrays)}{extra}")
    return analytic


def forward_over_reverse_hvp(fn, arrays, ws, vs):
    """The accumulator's JVP along v of tape.gradient(sum(fn(x) * w), x): forward over reverse."""
    xs = _tensors(arrays)
    with tf.autodiff.ForwardAccumulator(xs, [tf.constant(v) for v in vs]) as acc:
        with tf.GradientTape() as tape:
            tape.watch(xs)
            loss = _weighted_sum(_flat_outputs(fn(*xs)), ws)
        grads = tape.gradient(loss, xs, unconnected_gradients="zero")
    return [_host(h) for h in acc.jvp(grads, unconnected_gradients="zero")]


def check_forward_over_reverse(fn, args, ws=None, vs=None, **kw):
    """``check_hvp`` with the H v taken forward over reverse: the JVP of every op a backward
    pass runs, against central differences of the tape gradient."""
    return check_hvp(fn, args, ws, vs, hvp=forward_over_reverse_hvp,
                     what="forward-over-reverse (Hessian-vector product)", **kw)
