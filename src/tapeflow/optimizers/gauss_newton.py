"""The Gauss-Newton matrix of a loss of a model's outputs: the one place it is formed.

A loss ``L(theta) = l(z(theta))`` of outputs ``z`` (a batch, axis 0 the examples) has
the gradient ``g = J^T dl/dz`` and the generalized Gauss-Newton matrix::

    G = sum_i J_i^T H_i J_i          J_i = dz_i/dtheta,   H_i = d2 l / dz_i^2

which drops the second derivatives of the model and keeps the loss's: it is positive
semi-definite whenever the loss is convex in the outputs (squared errors, Huber,
cross-entropy on logits or probabilities), where the full Hessian of a ReLU network
is often indefinite.  For residuals ``r`` and ``l = 1/2 ||r||^2``, ``H = I``:
``G = J^T J`` and ``g = J^T r``, the least-squares case.

``OutputLoss(outputs_fn, loss_of_outputs=None)`` states such a loss: ``outputs_fn()``
returns ``z`` and ``loss_of_outputs(z)`` the scalar loss; without it ``z`` are
residuals and the loss is ``1/2 ||z||^2``.  ``gauss_newton(problem, variables)``
returns its value, ``g`` and ``G`` as float64 host arrays:

* ``J`` over ALL variables together, flattened in ``core.functional.flatten``'s
  order, in one vectorized reverse pass: with as many rows as the smaller of the
  number of outputs and of parameters (for more outputs than parameters, the
  jacobian with respect to a cotangent ``u`` of ``J^T u``, which is ``J^T``);
* ``H_i`` from tapeflow's autodiff, one ``batch_jacobian`` of ``dl/dz`` (the loss is a
  sum over examples, so its Hessian in ``z`` is block diagonal and those blocks are
  all of it), so no loss needs a hand-written Hessian.

``GaussNewtonProducts(problem, variables)`` is the matrix-free form, for models too large
for a dense ``G`` (n^2 floats, and J's rows): ``product(v) = J^T (H (J v))`` by one JVP and
one VJP through the outputs recorded once, never forming J; ``diagonal_estimate(k)``
estimates ``diag(G)`` for a Jacobi preconditioner from k VJPs.
"""
import time

import numpy as np

from .. import backend
from .. import losses as losses_module
from ..core.backprop import backward, reachable_nodes
from ..core.functional import flatten
from ..core.tape import GradientTape, batch_eye_seed
from ..core.tensor import Tensor
from ..ops.bias_activation import activation_slope
from ..ops.reduce import reduce_sum
from ..ops.shape import concat, reshape

__all__ = ["OutputLoss", "GaussNewton", "gauss_newton", "GaussNewtonProducts", "output_jacobian",
           "SUPPORTED_LOSSES", "check_supported_loss"]

# Keras losses convex in the outputs, so that each H_i is positive semi-definite.  Mean absolute
# error has H = 0 (no curvature to take a step from); a user's function is not known to be convex.
SUPPORTED_LOSSES = ("mean_squared_error", "huber", "binary_crossentropy",
                    "categorical_crossentropy", "sparse_categorical_crossentropy")


def check_supported_loss(loss, who):
    """Refuse, with one message, a compiled loss ``who`` cannot take Gauss-Newton steps on."""
    fn = getattr(loss, "fn", None)
    name = getattr(fn, "__name__", None) or getattr(loss, "name", None) or repr(loss)
    reduction = getattr(loss, "reduction", None)
    if fn is None or fn.__module__ != losses_module.__name__ or name not in SUPPORTED_LOSSES \
            or reduction in (None, "none"):
        raise ValueError(
            f"{who} cannot train on the loss {name!r}"
            f"{f' with reduction={reduction!r}' if reduction in (None, 'none') else ''}: its "
            f"step needs a loss convex in the model's outputs, reduced to a scalar, to form the "
            f"Gauss-Newton matrix J^T H J. It supports {', '.join(SUPPORTED_LOSSES)} (a Loss "
            f"object or its name, e.g. loss='mse'). For a sum of squared residuals of your own, "
            f"call optimizer.minimize(residual_fn, var_list).")


class OutputLoss:
    """A loss as a function of outputs: ``loss_of_outputs(outputs_fn())``.

    ``outputs_fn()`` gives the outputs ``z`` (axis 0 the examples); ``loss_of_outputs(z)``
    the scalar loss, a sum of terms each reading one example's outputs only (every Keras
    loss is).  Without ``loss_of_outputs`` the outputs are residuals and the loss is
    ``1/2 ||z||^2``.

    ``outputs_on(start, stop)``, optional, gives the outputs of examples ``start:stop``
    computed on those examples alone (``model(x[start:stop])``).  Then the examples are
    independent, and J is each example's own gradient: per layer in one pass where every
    variable enters as a Dense layer's (``_jacobian_by_layers``, work ~ examples x
    parameters), otherwise a chunk of examples at a time, each chunk's rows from its own
    small forward pass (work ~ examples x chunk x parameters).  Used only where the first
    chunk's outputs equal the whole batch's (not with batch statistics or random masks).
    """

    def __init__(self, outputs_fn, loss_of_outputs=None, outputs_on=None):
        self.outputs_fn = outputs_fn
        self.loss_of_outputs = loss_of_outputs
        self.outputs_on = outputs_on

    def loss(self):
        """The loss at the variables' current values, a float."""
        z = self.outputs_fn()
        if self.loss_of_outputs is None:
            value = _host64(z._value if isinstance(z, Tensor) else z)
            return 0.5 * float(np.vdot(value, value))
        return float(_host64(self.loss_of_outputs(z)._value))

    def loss_tensor(self):
        """The loss as a tensor, for a tape to differentiate (a first-order step)."""
        z = self.outputs_fn()
        if self.loss_of_outputs is None:
            return 0.5 * reduce_sum(z * z)
        return reduce_sum(self.loss_of_outputs(z))


class GaussNewton:
    """The loss, its gradient ``g`` and the Gauss-Newton matrix ``G`` at one point
    (float64 host arrays), and the time each part took in ``seconds``."""

    def __init__(self, loss, gradient, matrix, seconds):
        self.loss, self.gradient, self.matrix, self.seconds = loss, gradient, matrix, seconds


def gauss_newton(problem, variables):
    """``GaussNewton`` of ``problem`` (an ``OutputLoss``) over all ``variables``."""
    start = time.perf_counter()
    z, jac = output_jacobian(problem.outputs_fn, variables, problem.outputs_on)
    jacobian_seconds = time.perf_counter() - start
    start = time.perf_counter()
    z64 = _host64(z._value).reshape(jac.shape[0])
    if problem.loss_of_outputs is None:
        loss = 0.5 * float(z64 @ z64)
        gradient = jac.T @ z64
        matrix = jac.T @ jac
    else:
        loss, dz, hessian = _output_curvature(problem.loss_of_outputs, z)
        examples, width = hessian.shape[0], hessian.shape[1]
        per_example = jac.reshape(examples, width, -1)
        gradient = jac.T @ dz.reshape(-1)
        if width == 1 and hessian.size and np.all(hessian == hessian.flat[0]):
            # one output per example and one curvature for all (mean squared error): h J^T J
            matrix = float(hessian.flat[0]) * (jac.T @ jac)
        elif width == 1 and np.all(hessian >= 0):
            # one output per example (regression, binary cross-entropy): (sqrt(h) J)^T (sqrt(h) J),
            # a symmetric product (BLAS syrk) at half the cost of a general one
            scaled = jac * np.sqrt(hessian.reshape(-1, 1))
            matrix = scaled.T @ scaled
        else:
            # sum_i J_i^T (H_i J_i) as one product of (N*m, n) matrices
            weighted = np.matmul(hessian, per_example).reshape(examples * width, -1)
            matrix = jac.T @ weighted
    matrix = 0.5 * (matrix + matrix.T)
    return GaussNewton(loss, gradient, matrix,
                       {"jacobian": jacobian_seconds,
                        "product": time.perf_counter() - start})


class GaussNewtonProducts:
    """``G v = J^T H J v`` at one point without forming J (see the module docstring).

    The outputs ``z`` are computed once under a persistent tape watching the variables, and
    their VJP ``J^T u`` once under a second tape watching a dummy cotangent ``u``.  Then:

    * ``J v`` (a JVP) is one backward pass through that recorded VJP, seeded with ``v``:
      ``<J^T u, v>`` is linear in ``u`` with gradient ``J v`` (the double-VJP trick, as
      ``autodiff.linearize`` does);  no forward pass is run again, where a
      ``ForwardAccumulator`` would run the model's forward pass once per product;
    * ``J^T w`` (a VJP) is one backward pass of the first tape, seeded with ``w``;
    * ``H`` is the loss's Hessian in the outputs, per example (``_output_curvature``), or I
      for residuals.

    ``loss`` and ``gradient`` (``J^T dl/dz``) are at the point the products are taken at;
    ``seconds`` has the time spent recording them.
    """

    def __init__(self, problem, variables):
        start = time.perf_counter()
        self.variables = list(variables)
        with GradientTape(persistent=True, watch_accessed_variables=False) as outer:
            with GradientTape(persistent=True, watch_accessed_variables=False) as inner:
                inner.watch(self.variables)
                z = problem.outputs_fn()
                if not isinstance(z, Tensor):
                    raise TypeError(f"the outputs (residuals) must be a tensor, got "
                                    f"{type(z).__name__}")
            u = Tensor(backend.array_module(z._value).zeros_like(z._value))
            outer.watch(u)
            transposed = flatten(inner.gradient(z, self.variables, output_gradients=u,
                                                unconnected_gradients="zero"))
        self._inner, self._outer, self._z, self._u, self._transposed = inner, outer, z, u, transposed
        if problem.loss_of_outputs is None:
            z64 = _host64(z._value)
            self.loss, dz, self.hessian = 0.5 * float(np.vdot(z64, z64)), z64, None
        else:
            self.loss, dz, self.hessian = _output_curvature(problem.loss_of_outputs, z)
        self.gradient = self.vjp(dz)
        self.products = 0
        self.seconds = {"linearize": time.perf_counter() - start}

    def jvp(self, v):
        """``J v`` (float64, the outputs' shape) for a flat float64 vector ``v``."""
        like = self._transposed._value
        # the CG runs on the host in float64: its vector goes to the model's device once per product
        seed = Tensor(backend.to_device(np.asarray(v, dtype=like.dtype), like=like))
        out = self._outer.gradient(self._transposed, self._u, output_gradients=seed,
                                   unconnected_gradients="zero")
        return _host64(out._value)

    def vjp(self, w):
        """``J^T w`` (flat float64) for ``w`` of the outputs' size."""
        value = self._z._value
        seed = Tensor(backend.to_device(np.asarray(w, dtype=value.dtype).reshape(value.shape),
                                        like=value))
        return _host64(flatten(self._inner.gradient(self._z, self.variables, output_gradients=seed,
                                                    unconnected_gradients="zero"))._value)

    def product(self, v):
        """``G v = J^T (H (J v))``: one JVP and one VJP."""
        self.products += 1
        jv = self.jvp(v)
        if self.hessian is not None:
            examples = self.hessian.shape[0]
            jv = np.matmul(self.hessian, jv.reshape(examples, -1, 1))
        return self.vjp(jv)

    def diagonal_estimate(self, samples, seed=0):
        """An estimate of ``diag(G)`` from ``samples`` VJPs (nonnegative, unbiased).

        ``G = (J^T L)(J^T L)^T`` with ``L L^T = H`` (per example, from ``eigh``; ``L = I`` for
        residuals), so for Rademacher ``e`` (E[e e^T] = I), ``E[(J^T L e)^2] = diag(G)``:
        each sample is one VJP, not the JVP and VJP of Hutchinson's ``E[e * G e]``, and
        never negative.  The exact diagonal needs every example's own gradient, which is
        what forming J costs (what this mode avoids)."""
        rng = np.random.default_rng(seed)
        shape = self._z._value.shape
        if self.hessian is not None:
            values, vectors = np.linalg.eigh(self.hessian)
            root = vectors * np.sqrt(np.maximum(values, 0.0))[:, None, :]
        total = 0.0
        for _ in range(samples):
            e = rng.choice(np.array([-1.0, 1.0]), size=shape)
            if self.hessian is not None:
                e = np.matmul(root, e.reshape(root.shape[0], -1, 1))
            total = total + self.vjp(e) ** 2
        return total / max(samples, 1)


def output_jacobian(outputs_fn, variables, outputs_on=None):
    """``(z, J)``: the outputs ``z = outputs_fn()`` and ``J = dz/dtheta`` as a float64 host
    matrix of shape (z.size, n), n the variables' total size, in one vectorized pass (or,
    with ``outputs_on``, one per chunk of examples: ``OutputLoss``)."""
    variables = list(variables)
    n = sum(int(v._value.size) for v in variables)
    if outputs_on is not None:
        found = _jacobian_by_examples(outputs_fn, outputs_on, variables, n)
        if found is not None:
            return found
    with GradientTape(watch_accessed_variables=False) as outer:
        with GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(variables)
            z = outputs_fn()
            if not isinstance(z, Tensor):
                raise TypeError(f"the outputs (residuals) must be a tensor, got "
                                f"{type(z).__name__}")
            flat_z = reshape(z, (-1,))
        m = int(z._value.size)
        if m > n:
            # more outputs than parameters: J^T as the jacobian of the linear map u -> J^T u
            # (n rows to send back, not m)
            u = Tensor(backend.array_module(z._value).zeros_like(z._value))
            outer.watch(u)
            flat_grad = flatten(inner.gradient(z, variables, output_gradients=u,
                                               unconnected_gradients="zero"))
    if m > n:
        transposed = outer.jacobian(flat_grad, u, unconnected_gradients="zero")
        return z, _host64(transposed._value).reshape(n, m).T
    blocks = inner.jacobian(flat_z, variables, unconnected_gradients="zero")
    return z, _host64(concat([reshape(b, (m, -1)) for b in blocks], axis=1)._value)


_CHUNK_ROWS = 64  # Jacobian rows per chunk of examples: its cotangents are rows x examples wide


def _jacobian_by_examples(outputs_fn, outputs_on, variables, n):
    """``(z, J)`` for a batch of independent examples, or None where that is not cheaper or
    the examples are not independent (the first chunk alone does not give the batch's
    outputs).  Per layer (``_jacobian_by_layers``) where every variable enters as a Dense
    layer's do; otherwise a chunk of examples at a time."""
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(variables)  # recorded, for the per-layer path to read
        z = outputs_fn()
    if not isinstance(z, Tensor) or z._value.ndim == 0:
        return None
    examples = int(z._value.shape[0])
    width = int(z._value.size) // max(examples, 1)
    chunk = max(1, _CHUNK_ROWS // max(width, 1))
    if examples <= chunk or n <= chunk * width:  # one pass of the whole batch is as cheap
        return None
    whole = _host64(z._value).reshape(examples, -1)
    if not _independent(whole, outputs_on, chunk):
        return None
    found = _jacobian_by_layers(tape, z, variables)
    if found is not None:
        return z, found
    parts = []
    for begin in range(0, examples, chunk):
        stop = min(begin + chunk, examples)
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            part = outputs_on(begin, stop)
            flat = reshape(part, (-1,))
        rows = int(flat._value.size)
        blocks = tape.jacobian(flat, variables, unconnected_gradients="zero")
        parts.append(_host64(concat([reshape(b, (rows, -1)) for b in blocks], axis=1)._value))
    return z, np.concatenate(parts, axis=0)


def _independent(whole, outputs_on, chunk):
    """Whether the first ``chunk`` examples alone give the outputs the whole batch gave them
    (no batch statistics, no random masks drawn per batch)."""
    first = _host64(outputs_on(0, chunk)._value).reshape(chunk, -1)
    scale = float(np.max(np.abs(whole[:chunk]))) if whole.size else 0.0
    return first.shape == whole[:chunk].shape and np.allclose(
        first, whole[:chunk], rtol=1e-4, atol=1e-5 * max(scale, 1.0))


def _jacobian_by_layers(tape, z, variables):
    """J of outputs ``z`` (recorded by persistent ``tape``) with every example's own gradient
    in one pass, O(examples x parameters), or None unless every variable enters the outputs
    through exactly one op of these kinds:

    * ``x @ W`` (``BatchMatMulV2``, no transposes) with ``x`` of shape (examples, ..., k):
      example i's rows of J for W are ``x_i (outer) s_i``, summed over the middle axes;
    * ``y + b`` (``AddV2``) with ``b`` broadcast over the examples: its rows are ``s_i``,
      and ``act(y + b)`` (``BiasActivation``, Dense's): ``s_i * act'``,

    where ``s_i = dz_i / da_i`` is the sensitivity of example i's outputs to that op's
    output ``a``: one backward pass from the outputs to every such ``a`` at once, seeded
    with the identity over each example's outputs (``batch_jacobian``'s seed: valid for
    independent examples, which the caller has checked).  This is the per-example gradient
    of Goodfellow (2015) and BackPACK, read off the tape's own records: the Dense stacks of
    any depth and activation, where J by chunks of examples costs a chunk's width more."""
    examples = int(z._value.shape[0])
    uses = {v._id: [] for v in variables}
    for node in reachable_nodes(tape._id, [z._node], ordered=False):
        for k, in_id in enumerate(node.in_ids):
            if in_id in uses:
                uses[in_id].append((node, k))
    plan = []
    for v in variables:
        if len(uses[v._id]) != 1:  # unused, or shared by several ops
            return None
        node, k = uses[v._id][0]
        kind = _per_example_kind(node, k, examples)
        if kind is None:
            return None
        plan.append((v, node, kind))
    tshape = tuple(z._value.shape)
    width = int(np.prod(tshape[1:], dtype=np.int64))
    seed = batch_eye_seed(range(width), width, tshape, z._value.dtype, z._value)
    handles = [Tensor(None, None, node.out_ids[0]) for _, node, _ in plan]
    sensitivities = backward(tape._id, [z], [seed], handles, batch_ndim=1)
    blocks = []
    for (v, node, kind), s in zip(plan, sensitivities):
        size = int(v._value.size)
        if s is None:  # the op does not reach the outputs
            blocks.append(np.zeros((examples, width, size)))
            continue
        s = _host64(s._value).reshape(width, examples, -1, node.out_meta[0][0][-1])
        if kind == "matmul":
            x = _host64(node.saved_inputs[0]._value)
            x = x.reshape(examples, -1, x.shape[-1])
            blocks.append(np.einsum("ntk,rnth->nrkh", x, s).reshape(examples, width, size))
        else:
            if kind == "bias_activation":  # s is the sensitivity to act(y + b): times act'
                out = _host64(node.outputs[0]._value)
                s = s * activation_slope(out.reshape((1, examples, -1, out.shape[-1])),
                                         node.attrs["activation"])
            blocks.append(s.sum(axis=2).transpose(1, 0, 2).reshape(examples, width, size))
    return np.concatenate(blocks, axis=2).reshape(examples * width, -1)


def _per_example_kind(node, k, examples):
    """``"matmul"`` or ``"bias"`` where ``_jacobian_by_layers`` knows the op reading a
    variable as its input ``k``; None otherwise."""
    (out_shape, _), = node.out_meta if len(node.out_meta) == 1 else (((), None),)
    if len(out_shape) < 2 or out_shape[0] != examples:
        return None
    name, shapes = node.op.name, node.in_shapes
    if name == "BatchMatMulV2" and k == 1 and len(shapes[1]) == 2 and len(shapes[0]) >= 2 \
            and shapes[0][0] == examples and not node.attrs.get("transpose_a") \
            and not node.attrs.get("transpose_b") and node.saved_inputs is not None:
        return "matmul"
    if name == "AddV2" and len(shapes[k]) == 1 and tuple(shapes[1 - k]) == tuple(out_shape) \
            and shapes[k][0] == out_shape[-1]:
        return "bias"
    if name == "BiasActivation" and k == 1 and tuple(shapes[0]) == tuple(out_shape):
        return "bias" if node.attrs["activation"] == "linear" else "bias_activation"
    return None


def _output_curvature(loss_of_outputs, z):
    """``(loss, dl/dz, H)`` at outputs ``z``: dl/dz as (N, m), H as (N, m, m) host float64."""
    examples = int(z._value.shape[0]) if z._value.ndim else 1
    leaf = Tensor(reshape(z, (examples, -1))._value)
    with GradientTape(watch_accessed_variables=False) as outer:
        outer.watch(leaf)
        with GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(leaf)
            loss = loss_of_outputs(reshape(leaf, tuple(z._value.shape)))
            if loss._value.size != 1:
                raise ValueError(f"the loss of the outputs must be a scalar, got shape "
                                 f"{tuple(loss._value.shape)}")
            loss = reduce_sum(loss)
        dz = inner.gradient(loss, leaf, unconnected_gradients="zero")
    hessian = outer.batch_jacobian(dz, leaf, unconnected_gradients="zero")
    return float(_host64(loss._value)), _host64(dz._value), _host64(hessian._value)


def _host64(value):
    return np.asarray(backend.to_host(value), dtype=np.float64)
