"""The per-op case table for the numerical gradient battery.

Every primitive in ``tf.registered_primitives()`` has an entry in ``OP_TABLE``:

* one or more ``Case``s: the op built through tapeflow's public API, how to draw
  its input shapes and non-differentiable parameters (a hypothesis ``spec``),
  the input domain the values are sampled from, and whether the op is C^2 on
  that domain (``smooth``: then the Hessian-vector product is checked too); or
* a ``NonDiff`` entry saying why the op has no gradient, with a ``probe`` that
  builds it from a watched float tensor, so the claim can be tested.

``spec(draw)`` returns ``(params, shapes)``: keyword arguments for ``fn`` and
the shapes of its differentiable (float64) inputs.  ``draw`` is hypothesis'
``data.draw``, so drawn shapes and parameters shrink and are reported on failure.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import tapeflow as tf

__all__ = ["Case", "Domain", "NonDiff", "CASES", "NON_DIFFERENTIABLE", "OP_TABLE",
           "BATCH_CASES", "case_by_name"]

MAX_SIDE = 4


# =================================================================================================
# Domains: where the values are sampled
# =================================================================================================
@dataclass(frozen=True)
class Domain:
    description: str
    sample: Callable  # (rng, shapes) -> list of float64 arrays

    def __call__(self, rng, shapes):
        return [np.asarray(a, dtype=np.float64) for a in self.sample(rng, shapes)]


def uniform(lo, hi, avoid=(), margin=0.1):
    """Uniform in [lo, hi], at least ``margin`` from each point of ``avoid`` (kinks)."""
    def sample(rng, shapes):
        out = []
        for s in shapes:
            a = rng.uniform(lo, hi, size=s)
            for _ in range(1000):
                bad = np.zeros(np.shape(a), dtype=bool)
                for p in avoid:
                    bad |= np.abs(a - p) < margin
                if not bad.any():
                    break
                a = np.where(bad, rng.uniform(lo, hi, size=s), a)
            out.append(a)
        return out
    desc = f"uniform in [{lo}, {hi}]"
    if avoid:
        desc += f", at least {margin} away from {list(avoid)}"
    return Domain(desc, sample)


def signed(lo, hi):
    """|x| uniform in [lo, hi], random sign: away from zero."""
    def sample(rng, shapes):
        return [rng.uniform(lo, hi, size=s) * rng.choice([-1.0, 1.0], size=s) for s in shapes]
    return Domain(f"|x| in [{lo}, {hi}], either sign", sample)


REAL = uniform(-2.0, 2.0)
POSITIVE = uniform(0.5, 2.0)
UNIT = uniform(-0.9, 0.9)
AWAY_FROM_ZERO = signed(0.1, 2.0)


def per_arg(*domains):
    def sample(rng, shapes):
        return [d(rng, [s])[0] for d, s in zip(domains, shapes)]
    return Domain("; ".join(f"arg {i}: {d.description}" for i, d in enumerate(domains)), sample)


def distinct(gap=0.25):
    """All elements of all inputs distinct, at least ``gap`` apart: no ties for max/min."""
    def sample(rng, shapes):
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        n = sum(sizes)
        values = (rng.permutation(n) - n / 2) * gap + rng.uniform(0, gap / 4)
        out, start = [], 0
        for s, k in zip(shapes, sizes):
            out.append(values[start:start + k].reshape(s))
            start += k
        return out
    return Domain(f"all elements distinct, at least {gap} apart (no ties)", sample)


def dyadic():
    """Multiples of 2**-6 in [-2, 2]: exactly representable in float32 (for casts)."""
    def sample(rng, shapes):
        return [rng.integers(-128, 129, size=s) / 64.0 for s in shapes]
    return Domain("multiples of 2**-6 in [-2, 2] (float32-exact), step 2**-12", sample)


def well_conditioned():
    """Square matrices I + 0.25 N(0, 1)/sqrt(n), condition number below 10: det and inverse O(1)."""
    def sample(rng, shapes):
        out = []
        for s in shapes:
            n = s[-1]
            for _ in range(1000):
                a = np.eye(n) + 0.25 * rng.standard_normal(s) / np.sqrt(n)
                if np.all(np.linalg.cond(a.reshape((-1, n, n))) < 10):
                    break
            out.append(a)
        return out
    return Domain("I + 0.25*N(0,1)/sqrt(n) square matrices with condition number < 10", sample)


def spd():
    def sample(rng, shapes):
        out = []
        for s in shapes:
            m = rng.standard_normal(s)
            out.append(m @ np.swapaxes(m, -1, -2) + s[-1] * np.eye(s[-1]))
        return out
    return Domain("symmetric positive definite M M^T + n I", sample)


def floormod_domain():
    """y away from 0, and x / y at least 0.01 from an integer (floormod jumps there)."""
    def sample(rng, shapes):
        for _ in range(1000):
            x = rng.uniform(-4, 4, size=shapes[0])
            y = rng.uniform(0.5, 2, size=shapes[1]) * rng.choice([-1.0, 1.0], size=shapes[1])
            q = np.asarray(x / y)
            frac = q - np.floor(q)
            if np.all((frac > 0.01) & (frac < 0.99)):
                return [x, y]
        raise RuntimeError("could not sample floormod inputs")
    return Domain("x in [-4, 4], |y| in [0.5, 2], x/y at least 0.01 from an integer", sample)


def with_zeros(base):
    def sample(rng, shapes):
        out = []
        for a in base(rng, shapes):
            a = a.copy()
            a[rng.random(a.shape) < 0.3] = 0.0
            out.append(a)
        return out
    return Domain(base.description + ", about 30% exact zeros", sample)


# =================================================================================================
# Shape / parameter specs (hypothesis)
# =================================================================================================
def shape_st(min_rank=0, max_rank=3, min_side=1, max_side=MAX_SIDE):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def unary(min_rank=0, max_rank=3):
    def spec(draw):
        return {}, [draw(shape_st(min_rank, max_rank))]
    return spec


def broadcast(num=2, min_dims=0, max_dims=3):
    def spec(draw):
        b = draw(mutually_broadcastable_shapes(num_shapes=num, min_dims=min_dims, max_dims=max_dims,
                                               min_side=1, max_side=MAX_SIDE))
        return {}, list(b.input_shapes)
    return spec


def same_shapes(num=2, min_rank=0, max_rank=3):
    def spec(draw):
        s = draw(shape_st(min_rank, max_rank))
        return {}, [s] * num
    return spec


def reduction_spec(min_rank=1, max_rank=3, min_side=1):
    def spec(draw):
        s = draw(shape_st(min_rank, max_rank, min_side=min_side))
        n = len(s)
        kind = draw(st.sampled_from(["none", "int", "list"]))
        if kind == "none":
            axis = None
        elif kind == "int":
            axis = draw(st.integers(-n, n - 1))
        else:
            axis = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n,
                                 unique_by=lambda a: a % n))
        return {"axis": axis, "keepdims": draw(st.booleans())}, [s]
    return spec


def axis_spec(min_rank=1, max_rank=3):
    def spec(draw):
        s = draw(shape_st(min_rank, max_rank))
        return {"axis": draw(st.integers(-len(s), len(s) - 1))}, [s]
    return spec


def cumulative_spec(draw):
    params, shapes = axis_spec()(draw)
    params.update(exclusive=draw(st.booleans()), reverse=draw(st.booleans()))
    return params, shapes


def matrices_spec(min_batch=0, max_batch=2):
    def spec(draw):
        n = draw(st.integers(1, MAX_SIDE))
        return {}, [draw(shape_st(min_batch, max_batch)) + (n, n)]
    return spec


def _batch_pair(draw, max_batch=2):
    b = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_batch,
                                           min_side=1, max_side=3))
    return b.input_shapes


def matmul_spec(draw):
    ba, bb = _batch_pair(draw)
    n, k, m = (draw(st.integers(1, MAX_SIDE)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    sa = ba + ((k, n) if ta else (n, k))
    sb = bb + ((m, k) if tb else (k, m))
    return {"transpose_a": ta, "transpose_b": tb}, [sa, sb]


def solve_spec(draw):
    ba, bb = _batch_pair(draw)
    n, k = draw(st.integers(1, MAX_SIDE)), draw(st.integers(1, 3))
    return {"adjoint": draw(st.booleans())}, [ba + (n, n), bb + (n, k)]


def index_array(draw, d, min_size=1, max_size=4):
    """Integer indices into an axis of size d, repeats and negatives allowed."""
    return np.array(draw(st.lists(st.integers(-d, d - 1), min_size=min_size, max_size=max_size)),
                    dtype=np.int64)


def basic_index(draw, shape):
    """A random basic index: per axis an int, a slice (any step), and maybe newaxis / Ellipsis."""
    items = []
    for d in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-d, d - 1)))
        elif kind == "full":
            items.append(slice(None))
        else:
            start = draw(st.none() | st.integers(-d - 1, d + 1))
            stop = draw(st.none() | st.integers(-d - 1, d + 1))
            step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
            items.append(slice(start, stop, step))
    if items and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)  # newaxis
    if items and draw(st.booleans()):  # drop trailing axes behind an Ellipsis
        k = draw(st.integers(0, len(items)))
        items = items[:k] + [Ellipsis]
    return tuple(items)


def getitem_basic_spec(draw):
    s = draw(shape_st(1, 3))
    return {"index": basic_index(draw, s)}, [s]


def getitem_int_spec(draw):
    s = draw(shape_st(1, 3))
    return {"index": draw(st.integers(-s[0], s[0] - 1))}, [s]


def getitem_array_spec(draw):
    s = draw(shape_st(1, 3))
    return {"index": index_array(draw, s[0]).tolist()}, [s]  # a Python list, as x[[0, 2, 0]]


def getitem_slice_array_spec(draw):
    s = draw(shape_st(2, 3))
    return {"index": (slice(1, None), index_array(draw, s[1]))}, [s]  # x[1:, idx]


def getitem_mask_spec(draw):
    s = draw(shape_st(1, 3))
    k = draw(st.integers(1, len(s)))
    mask = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(s[:k])),
                                  max_size=int(np.prod(s[:k]))))).reshape(s[:k])
    return {"index": mask}, [s]


def _broadcasting_index_arrays(draw, d0, d1):
    """Two integer index arrays whose shapes broadcast together (e.g. (2, 1) and (3,))."""
    shapes = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=2,
                                                min_side=1, max_side=3)).input_shapes
    i0 = np.array(draw(st.lists(st.integers(-d0, d0 - 1), min_size=int(np.prod(shapes[0])),
                                max_size=int(np.prod(shapes[0]))))).reshape(shapes[0])
    i1 = np.array(draw(st.lists(st.integers(-d1, d1 - 1), min_size=int(np.prod(shapes[1])),
                                max_size=int(np.prod(shapes[1]))))).reshape(shapes[1])
    return i0, i1


def getitem_separated_spec(draw):
    """x[i0, :, i2]: advanced indices separated by a slice (numpy moves them to the front)."""
    s = draw(shape_st(3, 4))
    i0, i2 = _broadcasting_index_arrays(draw, s[0], s[2])
    return {"index": (i0, slice(None), i2)}, [s]


def getitem_adjacent_spec(draw):
    """x[:, i1, i2]: adjacent advanced indices after a slice (they stay in place)."""
    s = draw(shape_st(3, 3))
    i1, i2 = _broadcasting_index_arrays(draw, s[1], s[2])
    return {"index": (slice(None), i1, i2)}, [s]


def getitem_ellipsis_spec(draw):
    s = draw(shape_st(1, 3))
    return {"index": (Ellipsis, None, draw(st.integers(-s[-1], s[-1] - 1)))}, [s]  # x[..., None, k]


def gather_spec(draw):
    s = draw(shape_st(1, 3))
    axis = draw(st.integers(0, len(s) - 1))
    indices = index_array(draw, s[axis], 1, 6) % s[axis]
    if draw(st.booleans()) and indices.size % 2 == 0:
        indices = indices.reshape(2, -1)  # 2-D indices: a new axis in the result
    return {"indices": indices, "axis": axis}, [s]


def boolean_mask_spec(draw):
    s = draw(shape_st(1, 3))
    axis = draw(st.integers(0, len(s) - 1))
    mask = np.array(draw(st.lists(st.booleans(), min_size=s[axis], max_size=s[axis])))
    return {"mask": mask, "axis": axis}, [s]


def scatter_spec(draw):
    """StridedSliceGrad: the cotangent of x[index] put back into x's shape."""
    s = draw(shape_st(3, 3))
    kind = draw(st.sampled_from(["basic", "array", "separated", "mask"]))
    if kind == "basic":
        index = basic_index(draw, s)
    elif kind == "array":
        index = (index_array(draw, s[0], 1, 6),)  # repeated indices add up
    elif kind == "separated":
        i0, i2 = _broadcasting_index_arrays(draw, s[0], s[2])
        index = (i0, slice(None), i2)
    else:
        mask = np.array(draw(st.lists(st.booleans(), min_size=s[0] * s[1], max_size=s[0] * s[1])))
        index = (mask.reshape(s[:2]),)
    out_shape = np.empty(s)[index].shape
    return {"shape": s, "index": index}, [out_shape]


def split_spec(draw):
    s = draw(shape_st(1, 3, min_side=2))
    axis = draw(st.integers(0, len(s) - 1))
    first = draw(st.integers(1, s[axis] - 1))
    return {"sizes": [first, s[axis] - first], "axis": axis}, [s]


def reshape_spec(draw):
    s = draw(shape_st(0, 3))
    kind = draw(st.sampled_from(["flat", "reversed", "split"]))
    if kind == "flat":  # rank 4: never the input's own shape (that reshape is no op at all)
        target = [-1, 1, 1, 1]
    elif kind == "reversed":
        target = list(reversed(s)) + [1]
    else:
        target = [1] + list(s) + [1]
    return {"shape": target}, [s]


def transpose_spec(draw):
    s = draw(shape_st(2, 4))
    perm = draw(st.permutations(range(len(s))))
    if list(perm) == list(range(len(s))):
        perm = list(reversed(perm))
    return {"perm": list(perm)}, [s]


def concat_spec(draw):
    s = draw(shape_st(1, 3))
    axis = draw(st.integers(-len(s), len(s) - 1))
    num = draw(st.integers(2, 3))
    shapes = []
    for _ in range(num):
        t = list(s)
        t[axis] = draw(st.integers(1, 3))
        shapes.append(tuple(t))
    return {"axis": axis}, shapes


def stack_spec(draw):
    s = draw(shape_st(0, 3))
    return {"axis": draw(st.integers(-len(s) - 1, len(s)))}, [s, s]


def pad_spec(draw):
    s = draw(shape_st(1, 3))
    paddings = [[draw(st.integers(0, 2)), draw(st.integers(0, 2))] for _ in s]
    value = draw(st.sampled_from([0.0, 1.5, -2.0]))
    return {"paddings": paddings, "constant_values": value}, [s]


def tile_spec(draw):
    s = draw(shape_st(1, 3))
    return {"multiples": [draw(st.integers(1, 3)) for _ in s]}, [s]


def broadcast_to_spec(draw):
    target = draw(shape_st(1, 3))
    k = draw(st.integers(0, len(target)))
    src = [1 if draw(st.booleans()) else d for d in target[len(target) - k:]]
    if tuple(src) == target:
        target = (2,) + target
    return {"shape": list(target)}, [tuple(src)]


def reverse_spec(draw):
    s = draw(shape_st(1, 3))
    axes = draw(st.lists(st.integers(0, len(s) - 1), min_size=1, max_size=len(s), unique=True))
    return {"axis": axes}, [s]


def select_spec(draw):
    b = draw(mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=1,
                                           max_side=MAX_SIDE))
    cs, xs, ys = b.input_shapes
    n = int(np.prod(cs, dtype=np.int64))
    cond = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(cs)
    return {"cond": cond}, [xs, ys]


def select_scalar_spec(draw):
    s = draw(shape_st(0, 3))
    n = int(np.prod(s, dtype=np.int64))
    cond = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(s)
    return {"cond": cond}, [s]


def einsum_spec(equation):
    """Shapes for each operand from a drawn size per letter ('...' gets broadcasting batch dims)."""
    lhs = equation.split("->")[0].split(",")

    def spec(draw):
        letters = sorted(set("".join(lhs).replace(".", "")))
        size = {c: draw(st.integers(1, MAX_SIDE)) for c in letters}
        ell = [t for t in lhs if "..." in t]
        batches = iter(())
        if ell:
            batches = iter(draw(mutually_broadcastable_shapes(
                num_shapes=len(ell), min_dims=0, max_dims=2, min_side=1, max_side=3)).input_shapes)
        shapes = []
        for t in lhs:
            lead = next(batches) if "..." in t else ()
            shapes.append(tuple(lead) + tuple(size[c] for c in t.replace("...", "")))
        return {}, shapes
    return spec


def sigmoid_xent_spec(draw):
    s = draw(shape_st(0, 3))
    return {}, [s, s]


# =================================================================================================
# Cases
# =================================================================================================
@dataclass(frozen=True)
class Case:
    name: str
    ops: tuple                 # the primitives this case is the test for (they must be recorded)
    fn: Callable               # fn(*tensors, **params), through the public API
    spec: Callable             # spec(draw) -> (params, input shapes)
    domain: Domain = REAL
    smooth: bool = True        # C^2 on the domain: second order (Hessian-vector product) checked
    eps: float = 1e-6
    rtol: float = 1e-6
    atol: float = 1e-8
    note: str = ""

    def draw(self, draw, seed):
        """(fn with its parameters bound, float64 input arrays)."""
        params, shapes = self.spec(draw)
        args = self.domain(np.random.default_rng(seed), [tuple(s) for s in shapes])
        fn = self.fn

        def bound(*xs):
            return fn(*xs, **params)
        bound.__name__ = self.name
        return bound, args


@dataclass(frozen=True)
class NonDiff:
    kind: str         # "not_differentiable" | "integer_output" | "no_gradient"
    reason: str
    probe: Callable   # probe(x): builds the op from float64 tensor x


CASES = []


def case(name, ops, fn, spec, domain=REAL, **kw):
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    CASES.append(Case(name, ops, fn, spec, domain, **kw))


# --- arithmetic (broadcasting binary ops) ---------------------------------------------------------
case("add", "AddV2", lambda x, y: x + y, broadcast())
case("add_n", "AddV2", lambda x, y: tf.add_n([x, y, x]), broadcast())
case("sub", "Sub", lambda x, y: x - y, broadcast())
case("rsub_scalar", "Sub", lambda x: tf.subtract(2.0, x), unary())
case("mul", "Mul", lambda x, y: x * y, broadcast())
case("mul_self", "Mul", lambda x: tf.multiply(x, x), unary())
case("div", "RealDiv", lambda x, y: x / y, broadcast(), per_arg(REAL, AWAY_FROM_ZERO))
case("div_scalar_numerator", "RealDiv", lambda y: tf.math.divide(1.5, y), unary(), AWAY_FROM_ZERO)
case("floormod", "FloorMod", lambda x, y: tf.math.floormod(x, y), broadcast(), floormod_domain(),
     note="piecewise linear: the Hessian is zero between the jumps")
case("pow", "Pow", lambda x, y: tf.pow(x, y), broadcast(), per_arg(POSITIVE, REAL))
case("pow_const_exponent", "Pow", lambda x: x ** 3.0, unary(), REAL)
case("pow_const_base", "Pow", lambda y: 2.0 ** y, unary(), REAL)
case("maximum", "Maximum", lambda x, y: tf.maximum(x, y), broadcast(), distinct(),
     note="kink at x == y: sampled without ties")
case("minimum", "Minimum", lambda x, y: tf.minimum(x, y), broadcast(), distinct())
case("clip_by_value", ("Maximum", "Minimum"), lambda x: tf.clip_by_value(x, -0.5, 0.5), unary(),
     uniform(-2, 2, avoid=(-0.5, 0.5)))
case("squared_difference", "SquaredDifference", lambda x, y: tf.math.squared_difference(x, y),
     broadcast())
case("neg", "Neg", lambda x: -x, unary())
case("abs", "Abs", lambda x: tf.abs(x), unary(), AWAY_FROM_ZERO, note="kink at 0")

# --- unary elementwise ----------------------------------------------------------------------------
_UNARY = [
    ("exp", "Exp", tf.math.exp, REAL),
    ("log", "Log", tf.math.log, POSITIVE),
    ("log1p", "Log1p", tf.math.log1p, uniform(-0.5, 2.0)),
    ("expm1", "Expm1", tf.math.expm1, REAL),
    ("sqrt", "Sqrt", tf.math.sqrt, POSITIVE),
    ("rsqrt", "Rsqrt", tf.math.rsqrt, POSITIVE),
    ("square", "Square", tf.math.square, REAL),
    ("reciprocal", "Reciprocal", tf.math.reciprocal, AWAY_FROM_ZERO),
    ("sin", "Sin", tf.math.sin, REAL),
    ("cos", "Cos", tf.math.cos, REAL),
    ("tan", "Tan", tf.math.tan, uniform(-1.2, 1.2)),
    ("asin", "Asin", tf.math.asin, UNIT),
    ("acos", "Acos", tf.math.acos, UNIT),
    ("atan", "Atan", tf.math.atan, REAL),
    ("sinh", "Sinh", tf.math.sinh, REAL),
    ("cosh", "Cosh", tf.math.cosh, REAL),
    ("tanh", "Tanh", tf.math.tanh, REAL),
    ("asinh", "Asinh", tf.math.asinh, REAL),
    ("atanh", "Atanh", tf.math.atanh, UNIT),
    ("sigmoid", "Sigmoid", tf.math.sigmoid, uniform(-4, 4)),
    ("softplus", "Softplus", tf.math.softplus, uniform(-4, 4)),
    ("softsign", "Softsign", tf.math.softsign, AWAY_FROM_ZERO),  # |x|: second derivative jumps at 0
    ("relu", "Relu", tf.nn.relu, AWAY_FROM_ZERO),
    ("relu6", "Relu6", tf.nn.relu6, uniform(-2, 8, avoid=(0.0, 6.0))),
    ("elu", "Elu", tf.nn.elu, AWAY_FROM_ZERO),
    ("selu", "Selu", tf.nn.selu, AWAY_FROM_ZERO),
    ("erf", "Erf", tf.math.erf, REAL),
    ("sign", "Sign", tf.sign, AWAY_FROM_ZERO),  # gradient zero (not None), as TensorFlow
    ("identity", "Identity", tf.identity, REAL),
]
for _name, _op, _f, _dom in _UNARY:
    case(_name, _op, (lambda f: lambda x: f(x))(_f), unary(), _dom)
case("leaky_relu", "LeakyRelu", lambda x: tf.nn.leaky_relu(x, alpha=0.3), unary(), AWAY_FROM_ZERO)
case("gelu", ("Erf", "Mul", "AddV2"), lambda x: tf.nn.gelu(x), unary())
case("gelu_tanh", ("Tanh", "Mul"), lambda x: tf.nn.gelu(x, approximate=True), unary())
case("silu", ("Sigmoid", "Mul"), lambda x: tf.nn.silu(x), unary())

# --- moving elements around -------------------------------------------------------------------------
case("reshape", "Reshape", lambda x, shape: tf.reshape(x, shape), reshape_spec)
case("expand_squeeze", "Reshape", lambda x: tf.squeeze(tf.expand_dims(x, 0) * 2.0, 0),
     unary(0, 3))
case("transpose", "Transpose", lambda x, perm: tf.transpose(x, perm), transpose_spec)
case("matrix_transpose", "Transpose", lambda x: tf.linalg.matrix_transpose(x), unary(2, 3))
case("concat", "ConcatV2", lambda *xs, axis: tf.concat(list(xs), axis), concat_spec)
case("stack", ("ConcatV2", "Reshape"), lambda x, y, axis: tf.stack([x, y], axis=axis), stack_spec)
case("getitem_basic", "StridedSlice", lambda x, index: x[index], getitem_basic_spec,
     note="slices with any step (empty results included), ints, newaxis, Ellipsis")
case("getitem_int", "StridedSlice", lambda x, index: x[index], getitem_int_spec)
case("getitem_int_list", "StridedSlice", lambda x, index: x[index], getitem_array_spec,
     note="x[[0, 2, 0]]: repeated indices add up")
case("getitem_slice_and_array", "StridedSlice", lambda x, index: x[index],
     getitem_slice_array_spec, note="x[1:, idx]")
case("getitem_bool_mask", "StridedSlice", lambda x, index: x[index], getitem_mask_spec)
case("getitem_separated_advanced", "StridedSlice", lambda x, index: x[index],
     getitem_separated_spec, note="x[i0, :, i2] with broadcasting index arrays")
case("getitem_adjacent_advanced", "StridedSlice", lambda x, index: x[index],
     getitem_adjacent_spec, note="x[:, i1, i2]")
case("getitem_ellipsis_newaxis", "StridedSlice", lambda x, index: x[index], getitem_ellipsis_spec)
case("gather", "GatherV2", lambda x, indices, axis: tf.gather(x, indices, axis=axis),
     gather_spec, note="numpy indices: a constant input of the op")
case("gather_tensor_indices", "GatherV2",
     lambda x, indices, axis: tf.gather(x, tf.constant(indices), axis=axis), gather_spec,
     note="indices a tensor input (non-differentiable); repeated indices add up")


def _scatter_add_via_gradient(u, *, shape, indices, axis):
    """ScatterAdd, the gradient of tf.gather, as a function of the cotangent u."""
    x = tf.zeros(shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.gather(x, tf.constant(indices), axis=axis)
    return tape.gradient(y, x, output_gradients=u)


def scatter_add_spec(draw):
    params, (shape,) = gather_spec(draw)
    out = np.take(np.empty(shape), params["indices"], axis=params["axis"]).shape
    return {**params, "shape": shape}, [out]


case("scatter_add", "ScatterAdd", _scatter_add_via_gradient, scatter_add_spec,
     note="built as the gradient of gather w.r.t. its cotangent; its own gradient is a gather")
case("boolean_mask", "StridedSlice", lambda x, mask, axis: tf.boolean_mask(x, mask, axis=axis),
     boolean_mask_spec)
case("split", "StridedSlice", lambda x, sizes, axis: tf.split(x, sizes, axis=axis), split_spec,
     note="several outputs, each weighted")
case("unstack", "Unpack", lambda x: tf.unstack(x, axis=-1), unary(1, 3))


def unstack_spec(draw):
    s = draw(shape_st(1, 3))
    return {"axis": draw(st.integers(-len(s), len(s) - 1)), "used": draw(st.integers(0, 2))}, [s]


case("unstack_some_slices", "Unpack",
     lambda x, axis, used: [p * 2.0 for p in tf.unstack(x, axis=axis)[:used + 1]], unstack_spec,
     note="unused slices get zero cotangents (an RNN's loop reads every slice)")
case("trace", "StridedSlice", lambda a: tf.linalg.trace(a), unary(2, 3),
     note="diag_part is a[..., idx, idx]")


def _scatter_via_gradient(u, *, shape, index):
    """StridedSliceGrad, the gradient of x[index], as a function of the cotangent u."""
    x = tf.zeros(shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[index]
    return tape.gradient(y, x, output_gradients=u)


case("strided_slice_grad", "StridedSliceGrad", _scatter_via_gradient, scatter_spec,
     note="built as the gradient of getitem w.r.t. its cotangent (output_gradients)")


def dynamic_slice_spec(draw):
    """DynamicSlice: x[..., start:stop:step, ...] along one axis, its bounds as tensors (what
    x[i:j] becomes inside a tf.function when i or j is traced)."""
    s = draw(shape_st(1, 3))
    axis = draw(st.integers(-len(s), -1))
    n = s[axis]
    step = draw(st.sampled_from([1, 2, -1]))
    start = draw(st.integers(-n, n - 1))
    stop = draw(st.integers(-n - 1, n))
    length = len(range(*slice(start, stop, step).indices(n)))
    return {"start": start, "stop": stop, "axis": axis, "step": step, "length": length}, [s]


def _dynamic_slice(x, *, start, stop, axis, step, length):
    from tapeflow.core.dispatch import apply
    from tapeflow.ops.traced_index import DYNAMIC_SLICE
    bounds = (tf.constant(start, tf.int64), tf.constant(stop, tf.int64))
    return apply(DYNAMIC_SLICE, (x,) + bounds,
                 {"axis": axis, "step": step, "length": length}) * 1.5


def _dynamic_slice_grad_via_gradient(u, *, shape, **params):
    """DynamicSliceGrad, the gradient of DynamicSlice, as a function of the cotangent u."""
    x = tf.zeros(shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _dynamic_slice(x, **params)
    return tape.gradient(y, x, output_gradients=u)


def dynamic_slice_grad_spec(draw):
    params, (shape,) = dynamic_slice_spec(draw)
    out = list(shape)
    out[params["axis"]] = params["length"]
    return {**params, "shape": shape}, [tuple(out)]


case("dynamic_slice", "DynamicSlice", _dynamic_slice, dynamic_slice_spec,
     note="empty and reversed slices included")
case("dynamic_slice_grad", "DynamicSliceGrad", _dynamic_slice_grad_via_gradient,
     dynamic_slice_grad_spec, note="built as the gradient of DynamicSlice w.r.t. its cotangent")
def _relu_grad_via_gradient(u, x):
    """ReluGrad, relu's gradient, as a function of the cotangent u (and of x: zero a.e.)."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.relu(x)
    return tape.gradient(y, x, output_gradients=u)


def same_shape_pair_spec(draw):
    return {}, [draw(shape_st(0, 3))] * 2


case("relu_grad", "ReluGrad", _relu_grad_via_gradient, same_shape_pair_spec,
     per_arg(REAL, AWAY_FROM_ZERO),
     note="built as the gradient of relu w.r.t. its cotangent; piecewise linear in x")


# --- bias + activation, one op each way (Dense's and Conv's last step) ------------------------------
def _pre_activation_away_from_zero():
    """y and a bias whose sum stays 0.1 away from relu's kink at 0 (any activation is drawn)."""
    base = uniform(-2.0, 2.0, avoid=(0.0,))

    def sample(rng, shapes):
        y_shape, bias_shape = shapes[-2:]
        bias = rng.uniform(-1.0, 1.0, size=bias_shape)
        (pre,) = base(rng, [y_shape])
        return REAL(rng, shapes[:-2]) + [pre - bias, bias]  # a cotangent u first, if any
    return Domain(f"y + bias {base.description}; bias uniform in [-1, 1]; u in [-2, 2]", sample)


def bias_activation_spec(activations):
    def spec(draw):
        y = draw(shape_st(1, 3))
        return {"activation": draw(st.sampled_from(activations))}, [y, y[-1:]]
    return spec


def _bias_activation(y, bias, *, activation):
    from tapeflow.ops.bias_activation import bias_activation
    return bias_activation(y, bias, activation)


def _bias_activation_grads(u, y, bias, *, activation):
    """BiasActivationGrad (BiasAddGrad for linear), the gradient of BiasActivation, as a
    function of the cotangent u and of y and the bias (through the saved output)."""
    with tf.GradientTape() as tape:
        tape.watch([y, bias])
        out = _bias_activation(y, bias, activation=activation)
    return tape.gradient(out, [y, bias], output_gradients=u)


def bias_activation_grad_spec(activations):
    def spec(draw):
        params, (y, bias) = bias_activation_spec(activations)(draw)
        return params, [y, y, bias]
    return spec


case("bias_activation", "BiasActivation", _bias_activation,
     bias_activation_spec(["linear", "relu", "sigmoid", "tanh"]), _pre_activation_away_from_zero(),
     note="the activation drawn; the bias broadcast along y's last axis, summed backward")
case("bias_activation_grad", "BiasActivationGrad", _bias_activation_grads,
     bias_activation_grad_spec(["relu", "sigmoid", "tanh"]), _pre_activation_away_from_zero(),
     note="built as the gradient of BiasActivation w.r.t. its cotangent, y and bias")
case("bias_add_grad", "BiasAddGrad", _bias_activation_grads,
     bias_activation_grad_spec(["linear"]), _pre_activation_away_from_zero(),
     note="BiasActivation(linear)'s gradient w.r.t. its cotangent: the bias's is a sum")


def _sum_to_shape_via_gradient(u, *, shape):
    """SumToShape, the tape's unbroadcasting, as the gradient of broadcast_to w.r.t. u."""
    x = tf.zeros(shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x + tf.zeros(u.shape, dtype=tf.float64)
    return tape.gradient(y, x, output_gradients=u)


def sum_to_shape_spec(draw):
    options, (src,) = broadcast_to_spec(draw)
    return {"shape": src}, [tuple(options["shape"])]


case("sum_to_shape", "SumToShape", _sum_to_shape_via_gradient, sum_to_shape_spec,
     note="built as the gradient of a broadcasting add w.r.t. its cotangent")

case("pad", "PadV2", lambda x, paddings, constant_values: tf.pad(
    x, paddings, constant_values=constant_values), pad_spec)
case("tile", "Tile", lambda x, multiples: tf.tile(x, multiples), tile_spec)
case("broadcast_to", "BroadcastTo", lambda x, shape: tf.broadcast_to(x, shape), broadcast_to_spec)
case("reverse", "ReverseV2", lambda x, axis: tf.reverse(x, axis), reverse_spec)
case("where", "SelectV2", lambda x, y, cond: tf.where(tf.constant(cond), x, y), select_spec,
     note="condition, x and y all broadcast")
case("where_scalar_branch", "SelectV2", lambda x, cond: tf.where(tf.constant(cond), x, 0.0),
     select_scalar_spec)
case("cast_roundtrip", "Cast", lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64), unary(),
     dyadic(), eps=2.0 ** -12, note="values and step exact in float32, so the rounding is exact")

def _spread_via_gradient(u, *, shape, axis, keepdims):
    """SpreadReduced, the gradient of reduce_mean, as a function of the cotangent u."""
    x = tf.zeros(shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_mean(x, axis=axis, keepdims=keepdims)
    return tape.gradient(y, x, output_gradients=u)


def spread_spec(draw):
    options, (shape,) = reduction_spec()(draw)
    out_shape = np.mean(np.zeros(shape), axis=None if options["axis"] is None else tuple(
        np.atleast_1d(options["axis"])), keepdims=options["keepdims"]).shape
    return {"shape": shape, **options}, [out_shape]


case("spread_reduced", "SpreadReduced", _spread_via_gradient, spread_spec,
     note="built as the gradient of reduce_mean w.r.t. its cotangent")

# --- reductions -------------------------------------------------------------------------------------
case("reduce_sum", "Sum", lambda x, axis, keepdims: tf.reduce_sum(x, axis=axis, keepdims=keepdims),
     reduction_spec())
case("reduce_mean", "Mean", lambda x, axis, keepdims: tf.reduce_mean(x, axis=axis, keepdims=keepdims),
     reduction_spec())
case("reduce_max", "Max", lambda x, axis, keepdims: tf.reduce_max(x, axis=axis, keepdims=keepdims),
     reduction_spec(), distinct(), note="no ties (ties share the gradient, not a derivative)")
case("reduce_min", "Min", lambda x, axis, keepdims: tf.reduce_min(x, axis=axis, keepdims=keepdims),
     reduction_spec(), distinct())
case("reduce_prod", "Prod", lambda x, axis, keepdims: tf.reduce_prod(x, axis=axis, keepdims=keepdims),
     reduction_spec(), REAL)
case("reduce_prod_with_zeros", "Prod",
     lambda x, axis, keepdims: tf.reduce_prod(x, axis=axis, keepdims=keepdims),
     reduction_spec(), with_zeros(REAL),
     note="a polynomial: its derivatives exist at zeros, which the rule claims to handle exactly")
def _long_prod_spec(draw):
    return {}, [(draw(st.integers(257, 300)),)]


def _near_one_with_zeros():
    def sample(rng, shapes):
        (s,) = shapes
        a = rng.uniform(0.95, 1.05, size=s) * rng.choice([-1.0, 1.0], size=s)
        a[rng.choice(s[0], size=rng.integers(1, 3), replace=False)] = 0.0
        return [a]
    return Domain("|x| in [0.95, 1.05] with 1 or 2 exact zeros (the product stays O(1))", sample)


case("reduce_prod_long_axis_with_zeros", "Prod", lambda x: tf.reduce_prod(x),
     _long_prod_spec, _near_one_with_zeros(),
     note="more than 256 reduced elements; derivatives of a polynomial exist at its zeros")
case("cumsum", "Cumsum", lambda x, axis, exclusive, reverse: tf.cumsum(
    x, axis=axis, exclusive=exclusive, reverse=reverse), cumulative_spec)
case("cumprod", "Cumprod", lambda x, axis, exclusive, reverse: tf.math.cumprod(
    x, axis=axis, exclusive=exclusive, reverse=reverse), cumulative_spec, signed(0.5, 1.5),
    note="the rule divides by x (as TensorFlow's): sampled away from zero")
case("reduce_logsumexp", ("Exp", "Log", "Sum"),
     lambda x, axis, keepdims: tf.reduce_logsumexp(x, axis=axis, keepdims=keepdims), reduction_spec())
case("reduce_std", ("Mean", "Sqrt"),
     lambda x, axis, keepdims: tf.math.reduce_std(x, axis=axis, keepdims=keepdims),
     reduction_spec(min_side=2), distinct(0.3),
     note="std has a kink where the variance is 0: reduced axes have 2+ distinct elements")
case("norm", ("Sqrt", "Sum"), lambda x, axis, keepdims: tf.norm(x, axis=axis, keepdims=keepdims),
     reduction_spec(), AWAY_FROM_ZERO)

# --- linear algebra ---------------------------------------------------------------------------------
case("matmul", "BatchMatMulV2", lambda a, b, transpose_a, transpose_b: tf.matmul(
    a, b, transpose_a=transpose_a, transpose_b=transpose_b), matmul_spec,
    note="batch axes broadcast")
case("matmul_operator_rank3_rank2", "BatchMatMulV2", lambda a, b: a @ b,
     lambda draw: ({}, [draw(shape_st(1, 1, 1, 3)) + (2, 3), (3, draw(st.integers(1, 4)))]))
for _eq in ["ij,jk->ik", "bij,bjk->bik", "ij->", "ij->ji", "i,i->", "ij,j->i", "ij,k->ijk",
            "ij,jk,kl->il", "...ij,jk->...ik", "...ij,...jk->...ik", "bi,bi->b", "ij,jk"]:
    case(f"einsum[{_eq}]", "Einsum", (lambda eq: lambda *xs: tf.einsum(eq, *xs))(_eq),
         einsum_spec(_eq))
case("einsum[ii->]", "Einsum", lambda a: tf.einsum("ii->", a),
     lambda draw: ({}, [(draw(st.integers(1, 4)),) * 2]), note="repeated index (trace)")
case("einsum[ii->i]", "Einsum", lambda a: tf.einsum("ii->i", a),
     lambda draw: ({}, [(draw(st.integers(1, 4)),) * 2]), note="repeated index (diagonal)")


def _tensordot_spec(draw):
    k = draw(st.integers(1, MAX_SIDE))
    return {}, [draw(shape_st(0, 2)) + (k,), (k,) + draw(shape_st(0, 2))]


case("tensordot", "Einsum", lambda a, b: tf.tensordot(a, b, axes=1), _tensordot_spec)
case("solve", "MatrixSolve", lambda a, b, adjoint: tf.linalg.solve(a, b, adjoint=adjoint),
     solve_spec, per_arg(well_conditioned(), REAL), note="batch axes broadcast")
case("inv", "MatrixInverse", lambda a: tf.linalg.inv(a), matrices_spec(), well_conditioned())
case("det", "MatrixDeterminant", lambda a: tf.linalg.det(a), matrices_spec(), well_conditioned())
case("logdet", "LogMatrixDeterminant", lambda a: tf.linalg.logdet(a), matrices_spec(), spd())


# --- decompositions (ops/linalg_decompositions.py) and the solves built on them ---------------------
def spaced_spectrum(gap=0.3):
    """Matrices Q diag(w) Qᵀ (square) or U diag(s) Vᵀ, Q/U/V random orthogonal, the values at
    least ``gap`` apart in [0.5, 0.5 + gap k + 1]: eigen/singular vectors are well defined
    (distinct values) and the matrices well conditioned."""
    def sample(rng, shapes):
        out = []
        for shape in shapes:
            *batch, m, n = shape
            k = min(m, n)
            mats = []
            for _ in range(int(np.prod(batch, dtype=np.int64))):
                u = np.linalg.qr(rng.standard_normal((m, m)))[0]
                v = u if m == n else np.linalg.qr(rng.standard_normal((n, n)))[0]
                w = 0.5 + gap * rng.permutation(k) + rng.uniform(0, 1) + rng.uniform(0, gap / 4, k)
                w = w * rng.choice([-1.0, 1.0], size=k) if m == n and v is u else w
                mats.append((u[:, :k] * w) @ v[:, :k].T)
            out.append(np.array(mats).reshape(shape))
        return out
    return Domain(f"Q diag(w) Qᵀ / U diag(s) Vᵀ, random orthogonal factors, values at least {gap} "
                  f"apart with |w| in [0.5, 2.5 + {gap}n]", sample)


def rect_spec(min_batch=0, max_batch=1, square=False, wide=None):
    """Matrices [batch..., M, N] (M == N if ``square``; M <= N if ``wide`` is True)."""
    def spec(draw):
        m = draw(st.integers(1, MAX_SIDE))
        n = m if square else draw(st.integers(m if wide else 1, MAX_SIDE))
        return {}, [draw(shape_st(min_batch, max_batch, max_side=3)) + (m, n)]
    return spec


def triangular_solve_spec(draw):
    params, shapes = solve_spec(draw)
    params["lower"] = draw(st.booleans())
    return params, shapes


def _spd(m):
    """M Mᵀ + n I: symmetric positive definite for any M (finite differences stay in the domain)."""
    n = m.shape[-1]
    return tf.matmul(m, m, transpose_b=True) + float(n) * tf.eye(n, dtype=m.dtype)


def _near_identity(x):
    """I + x/4: its triangles are well conditioned for x in [-2, 2] and 4x4 or smaller."""
    n = x.shape[-1]
    return tf.eye(n, dtype=x.dtype) + 0.25 * x


def _flip_first_row(x):
    """x with its first row negated: a negative determinant where x's is positive."""
    n = x.shape[-1]
    return x * tf.constant(np.where(np.arange(n)[:, None] == 0, -1.0, 1.0))


def _lstsq_spec(fast=True):
    def spec(draw):
        m, n, k = (draw(st.integers(1, MAX_SIDE)) for _ in range(3))
        b = draw(shape_st(0, 1, max_side=2))
        return {"l2": draw(st.sampled_from([0.0, 0.5])) if fast else None}, [b + (m, n), b + (m, k)]
    return spec


def _pinv_rank_deficient_spec(draw):
    r = draw(st.integers(1, 2))
    m, n = draw(st.integers(r + 1, MAX_SIDE)), draw(st.integers(r + 1, MAX_SIDE))
    return {}, [(m, r), (r, n)]


_SVD_NOTE = "sign-invariant functions of u and v (u∘u, v∘v): their columns' signs are arbitrary"
case("cholesky", "Cholesky", lambda m: tf.linalg.cholesky(_spd(m)), matrices_spec(),
     note="input M Mᵀ + n I, built inside: symmetric positive definite for any M")
case("triangular_solve", "MatrixTriangularSolve", lambda a, b, lower, adjoint:
     tf.linalg.triangular_solve(_near_identity(a), b, lower=lower, adjoint=adjoint),
     triangular_solve_spec, note="batch axes broadcast; the other triangle of a is ignored")
case("cholesky_solve", ("Cholesky", "MatrixTriangularSolve"), lambda m, b:
     tf.linalg.cholesky_solve(tf.linalg.cholesky(_spd(m)), b), lambda draw: ({}, solve_spec(draw)[1]))
case("eigh", "SelfAdjointEigV2", lambda a: (lambda e, v: [e, v * v])(*tf.linalg.eigh(a)),
     rect_spec(square=True), spaced_spectrum(), rtol=1e-5, atol=1e-7,
     note="the input unsymmetrized: the forward reads, and the rule returns, the lower triangle")
case("eigh_reconstruct", ("SelfAdjointEigV2",), lambda a: (lambda e, v: tf.matmul(
    v * tf.expand_dims(e, -2), v, transpose_b=True))(*tf.linalg.eigh(0.5 * (a + tf.linalg.adjoint(a)))),
     rect_spec(square=True), spaced_spectrum(), rtol=1e-5, atol=1e-7)
case("svd", "Svd", lambda a: (lambda s, u, v: [s, u * u, v * v])(*tf.linalg.svd(a)),
     rect_spec(), spaced_spectrum(), rtol=1e-5, atol=1e-7, note=_SVD_NOTE + "; tall and wide")
case("svd_full_square", "Svd", lambda a: (lambda s, u, v: [u * u, tf.matmul(
    u * tf.expand_dims(s, -2), v, transpose_b=True)])(*tf.linalg.svd(a, full_matrices=True)),
     rect_spec(square=True), spaced_spectrum(), rtol=1e-5, atol=1e-7)
case("svd_values", "Svd", lambda a: tf.linalg.svd(a, compute_uv=False), rect_spec(),
     spaced_spectrum())
case("qr", "Qr", lambda a: list(tf.linalg.qr(a)), rect_spec(), spaced_spectrum(),
     rtol=1e-5, atol=1e-7, note="tall (reduced), square and wide inputs")
case("qr_full_wide", "Qr", lambda a: list(tf.linalg.qr(a, full_matrices=True)),
     rect_spec(wide=True), spaced_spectrum(), rtol=1e-5, atol=1e-7)
case("slogdet", "LogMatrixDeterminant", lambda a: list(tf.linalg.slogdet(a)), matrices_spec(),
     well_conditioned(), note="sign is piecewise constant: its cotangent is dropped")
case("slogdet_negative_det", "LogMatrixDeterminant",
     lambda a: tf.linalg.slogdet(_flip_first_row(a))[1], matrices_spec(), well_conditioned())
case("pinv", "MatrixPinv", lambda a: tf.linalg.pinv(a), rect_spec(), spaced_spectrum(),
     rtol=1e-5, atol=1e-7)
case("pinv_rank_deficient", "MatrixPinv", lambda x, y: tf.linalg.pinv(tf.matmul(x, y)),
     _pinv_rank_deficient_spec, spaced_spectrum(), rtol=1e-5, atol=1e-7,
     note="a rank-r product: the rule holds at constant rank")
case("lstsq", ("Cholesky", "MatrixTriangularSolve", "BatchMatMulV2"), lambda a, b, l2:
     tf.linalg.lstsq(a, b, l2_regularizer=l2), _lstsq_spec(), per_arg(spaced_spectrum(), REAL),
     rtol=1e-5, atol=1e-7, note="normal equations, tall and wide")
case("lstsq_l2", ("Cholesky", "MatrixTriangularSolve", "BatchMatMulV2"), lambda a, b, l2:
     tf.linalg.lstsq(a, b, l2_regularizer=0.5), _lstsq_spec(fast=False), per_arg(REAL, REAL),
     rtol=1e-5, atol=1e-7, note="ridge: positive definite for any matrix (traces with zeros)")
case("lstsq_slow", "MatrixPinv", lambda a, b, l2: tf.linalg.lstsq(a, b, fast=False),
     _lstsq_spec(fast=False), per_arg(spaced_spectrum(), REAL), rtol=1e-5, atol=1e-7)
case("matvec", "BatchMatMulV2", lambda a, b, transpose_a: tf.linalg.matvec(
    a, b, transpose_a=transpose_a), lambda draw: (lambda ta, m, n, batch: (
        {"transpose_a": ta}, [batch + ((n, m) if ta else (m, n)), (n,)]))(
        draw(st.booleans()), draw(st.integers(1, MAX_SIDE)), draw(st.integers(1, MAX_SIDE)),
        draw(shape_st(0, 2, max_side=3))))
case("band_part", "Mul", lambda a, lower, upper: tf.linalg.band_part(a, lower, upper),
     lambda draw: ({"lower": draw(st.integers(-1, 2)), "upper": draw(st.integers(-1, 2))},
                   [draw(shape_st(0, 1, max_side=3)) + (draw(st.integers(1, MAX_SIDE)),) * 2]))
case("global_norm", ("Sqrt", "Sum"), lambda x, y: tf.linalg.global_norm([x, y]),
     lambda draw: ({}, [draw(shape_st(0, 2)), draw(shape_st(0, 2))]), AWAY_FROM_ZERO)

# --- neural-network ops -----------------------------------------------------------------------------
case("softmax", "Softmax", lambda x, axis: tf.nn.softmax(x, axis=axis), axis_spec())
case("log_softmax", "LogSoftmax", lambda x, axis: tf.nn.log_softmax(x, axis=axis), axis_spec())
case("sigmoid_cross_entropy", "SigmoidCrossEntropyWithLogits",
     lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x), sigmoid_xent_spec,
     per_arg(uniform(0, 1), uniform(-4, 4)), note="labels and logits both differentiated")
case("softmax_cross_entropy", ("LogSoftmax", "Mul", "Sum"),
     lambda z, x: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
     same_shapes(2, 1, 3), per_arg(uniform(0, 1), REAL))
case("l2_normalize", ("Rsqrt", "Maximum"), lambda x: tf.math.l2_normalize(x, axis=-1),
     unary(1, 3), AWAY_FROM_ZERO)


# --- one operand a constant: rules must cope with needs_input_grad = False for the other ----------
def _const(draw, shape, domain=REAL):
    """A constant operand, from its own random stream (never the inputs' stream)."""
    rng = np.random.default_rng([draw(st.integers(0, 2 ** 32 - 1)), 7919])
    return domain(rng, [tuple(shape)])[0]


def _const_first_spec(domain=REAL):
    def spec(draw):
        _, (cs, xs) = broadcast()(draw)
        return {"c": _const(draw, cs, domain)}, [xs]
    return spec


case("squared_difference_const_first", "SquaredDifference",
     lambda y, c: tf.math.squared_difference(tf.constant(c), y), _const_first_spec())
case("maximum_const_first", "Maximum", lambda y, c: tf.maximum(tf.constant(c), y),
     _const_first_spec(uniform(-2, 2)), uniform(-2, 2),
     note="constant drawn independently: ties have probability 0, kinks stay > 1e-6 away a.s.")
case("where_const_true_branch", "SelectV2",
     lambda y, cond: tf.where(tf.constant(cond), 0.5, y), select_scalar_spec)


def _matmul_const_left_spec(draw):
    params, (sa, sb) = matmul_spec(draw)
    params["a"] = _const(draw, sa)
    return params, [sb]


def _solve_const_matrix_spec(draw):
    params, (sa, sb) = solve_spec(draw)
    params["a"] = _const(draw, sa, well_conditioned())
    return params, [sb]


def _solve_const_rhs_spec(draw):
    params, (sa, sb) = solve_spec(draw)
    params["b"] = _const(draw, sb)
    return params, [sa]


case("matmul_const_left", "BatchMatMulV2", lambda b, a, transpose_a, transpose_b: tf.matmul(
    tf.constant(a), b, transpose_a=transpose_a, transpose_b=transpose_b), _matmul_const_left_spec)
case("solve_const_matrix", "MatrixSolve", lambda b, a, adjoint: tf.linalg.solve(
    tf.constant(a), b, adjoint=adjoint), _solve_const_matrix_spec)
case("solve_const_rhs", "MatrixSolve", lambda a, b, adjoint: tf.linalg.solve(
    a, tf.constant(b), adjoint=adjoint), _solve_const_rhs_spec, well_conditioned())
case("einsum_const_operand", "Einsum", lambda b, a: tf.einsum("ij,jk->ik", tf.constant(a), b),
     lambda draw: (lambda n, k, m: ({"a": _const(draw, (n, k))}, [(k, m)]))(
         *(draw(st.integers(1, MAX_SIDE)) for _ in range(3))))
case("getitem_scalar_newaxis", "StridedSlice", lambda x: x[None] * x[...], unary(0, 0),
     note="indexing a 0-d tensor")


# --- guarded elementwise math (ops/special.py) ----------------------------------------------------
def _const_with_zeros_spec(const_arg, domain=REAL):
    """One operand a constant with about 30% exact zeros (where the op's guard fires); the other
    differentiated.  ``const_arg`` is 'x' (the first operand) or 'y'."""
    def spec(draw):
        _, (xs, ys) = broadcast()(draw)
        cshape, dshape = (xs, ys) if const_arg == "x" else (ys, xs)
        return {"c": _const(draw, cshape, with_zeros(domain))}, [dshape]
    return spec


case("atan2", "Atan2", lambda y, x: tf.atan2(y, x), broadcast(), per_arg(AWAY_FROM_ZERO, REAL),
     note="y away from 0: no branch cut, no origin")
case("acosh", "Acosh", lambda x: tf.math.acosh(x), unary(), uniform(1.2, 3.0))
case("divide_no_nan", "DivNoNan", lambda x, y: tf.math.divide_no_nan(x, y), broadcast(),
     per_arg(REAL, AWAY_FROM_ZERO))
case("divide_no_nan_zero_denominators", "DivNoNan",
     lambda x, c: tf.math.divide_no_nan(x, tf.constant(c)), _const_with_zeros_spec("y"),
     note="x / 0 is the constant 0: the x-gradient there is 0, as TensorFlow's")
case("multiply_no_nan", "MulNoNan", lambda x, y: tf.math.multiply_no_nan(x, y), broadcast(),
     with_zeros(REAL), note="continuous at y == 0, so exact zeros are checked too")
case("xlogy", "Xlogy", lambda x, y: tf.math.xlogy(x, y), broadcast(), per_arg(REAL, POSITIVE))
case("xlogy_zero_x", "Xlogy", lambda y, c: tf.math.xlogy(tf.constant(c), y),
     _const_with_zeros_spec("x"), POSITIVE, note="0 * log(y) is the constant 0: y-gradient 0")
case("xlog1py", "Xlog1py", lambda x, y: tf.math.xlog1py(x, y), broadcast(),
     per_arg(REAL, uniform(-0.5, 2.0)))
case("xlog1py_zero_x", "Xlog1py", lambda y, c: tf.math.xlog1py(tf.constant(c), y),
     _const_with_zeros_spec("x"), uniform(-0.5, 2.0))
case("xdivy", "Xdivy", lambda x, y: tf.math.xdivy(x, y), broadcast(), per_arg(REAL, AWAY_FROM_ZERO))
case("xdivy_zero_x", "Xdivy", lambda y, c: tf.math.xdivy(tf.constant(c), y),
     _const_with_zeros_spec("x"), AWAY_FROM_ZERO)
case("reduce_euclidean_norm", ("Sqrt", "Sum"),
     lambda x, axis, keepdims: tf.math.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims),
     reduction_spec(), AWAY_FROM_ZERO)


# --- segment reductions (ops/segment.py) ----------------------------------------------------------
def _sorted_ids(draw, min_rows=1):
    """Sorted segment ids with gaps (empty segments), the last segment non-empty."""
    counts = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    counts[-1] = max(counts[-1], min_rows)
    return np.repeat(np.arange(len(counts)), counts)


def segment_spec(draw):
    ids = _sorted_ids(draw)
    return {"ids": ids}, [(len(ids),) + draw(shape_st(0, 2))]


def unsorted_segment_spec(cover_all):
    """Ids of shape ``data.shape[:k]`` in any order, -1 (dropped) among them; with ``cover_all``
    every segment gets an element (so no max/min is the dtype's lowest/highest)."""
    def spec(draw):
        prefix = draw(shape_st(1, 2))
        n = int(np.prod(prefix))
        k = draw(st.integers(1, n))
        extra = draw(st.integers(0, 2))
        ids = draw(st.lists(st.integers(-1, k - 1), min_size=n, max_size=n))
        if cover_all:
            ids[:k] = list(range(k))
            ids = draw(st.permutations(ids))
        return {"ids": np.array(ids, dtype=np.int64).reshape(prefix),
                "num_segments": k + (0 if cover_all else extra)}, [prefix + draw(shape_st(0, 2))]
    return spec


case("segment_sum", "SegmentSum", lambda x, ids: tf.math.segment_sum(x, ids), segment_spec,
     note="empty segments (gaps in the ids) included")
case("segment_mean", ("SegmentSum", "RealDiv"), lambda x, ids: tf.math.segment_mean(x, ids),
     segment_spec)
case("segment_max", "SegmentMax", lambda x, ids: tf.math.segment_max(x, ids), segment_spec,
     distinct(), note="no ties (ties share the gradient, not a derivative)")
case("segment_min", "SegmentMin", lambda x, ids: tf.math.segment_min(x, ids), segment_spec,
     distinct())
case("unsorted_segment_sum", "SegmentSum",
     lambda x, ids, num_segments: tf.math.unsorted_segment_sum(x, ids, num_segments),
     unsorted_segment_spec(False), note="negative ids dropped")
case("unsorted_segment_mean", ("SegmentSum", "RealDiv"),
     lambda x, ids, num_segments: tf.math.unsorted_segment_mean(x, ids, num_segments),
     unsorted_segment_spec(False))
case("unsorted_segment_max", "SegmentMax",
     lambda x, ids, num_segments: tf.math.unsorted_segment_max(x, ids, num_segments),
     unsorted_segment_spec(True), distinct())
case("unsorted_segment_min", "SegmentMin",
     lambda x, ids, num_segments: tf.math.unsorted_segment_min(x, ids, num_segments),
     unsorted_segment_spec(True), distinct())


def _segment_sum_grad_spec(draw):
    """The SegmentSum rule's gather, as a function of the cotangent (multi-dim, negative ids)."""
    params, (shape,) = unsorted_segment_spec(False)(draw)
    ids = params["ids"]
    return params, [(params["num_segments"],) + tuple(shape[ids.ndim:])]


def _segment_sum_via_gradient(u, *, ids, num_segments):
    x = tf.zeros(ids.shape + tuple(u.shape[1:]), dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.unsorted_segment_sum(x, ids, num_segments)
    return tape.gradient(y, x, output_gradients=u)


case("unsorted_segment_sum_grad", ("StridedSlice", "SelectV2"), _segment_sum_via_gradient,
     lambda draw: _with_negative_id(draw), note="the gather-and-drop of the sum's rule, "
     "differentiated as a function of its cotangent")


def _with_negative_id(draw):
    params, shapes = _segment_sum_grad_spec(draw)
    params["ids"] = params["ids"].copy()
    params["ids"].reshape(-1)[0] = -1  # at least one dropped row, so the rule's select runs
    return params, shapes


# --- sorting and rearranging (ops/sorting.py, ops/rearrange.py) -----------------------------------
def sort_spec(draw):
    params, shapes = axis_spec()(draw)
    params["direction"] = draw(st.sampled_from(["ASCENDING", "DESCENDING"]))
    return params, shapes


def roll_spec(draw):
    s = draw(shape_st(1, 3))
    n = len(s)
    if draw(st.booleans()):
        return {"shift": draw(st.integers(-5, 5)), "axis": draw(st.integers(-n, n - 1))}, [s]
    pairs = draw(st.lists(st.tuples(st.integers(-5, 5), st.integers(-n, n - 1)), min_size=1,
                          max_size=3))
    return {"shift": [p[0] for p in pairs], "axis": [p[1] for p in pairs]}, [s]


def repeat_spec(draw):
    s = draw(shape_st(1, 3))
    axis = draw(st.none() | st.integers(-len(s), len(s) - 1))
    n = int(np.prod(s)) if axis is None else s[axis]
    if draw(st.booleans()):
        repeats = draw(st.integers(0, 3))
    else:
        repeats = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return {"repeats": repeats, "axis": axis}, [s]


def meshgrid_spec(draw):
    shapes = [(draw(st.integers(2, MAX_SIDE)),) for _ in range(draw(st.integers(2, 3)))]
    return {"indexing": draw(st.sampled_from(["xy", "ij"]))}, shapes


def diag_spec(draw):
    batch = draw(shape_st(0, 2, max_side=3))
    n, k = draw(st.integers(1, MAX_SIDE)), draw(st.integers(-2, 2))
    params = {"k": k, "padding_value": draw(st.sampled_from([0.0, 1.5]))}
    if draw(st.booleans()):  # a rectangular matrix: one more row or column than needed
        rows, cols = n + max(-k, 0), n + max(k, 0)
        params.update(num_rows=rows + (k >= 0), num_cols=cols + (k < 0))
    return params, [batch + (n,)]


def diag_part_spec(draw):
    batch = draw(shape_st(0, 2, max_side=3))
    m, n = draw(st.integers(1, MAX_SIDE)), draw(st.integers(1, MAX_SIDE))
    return {"k": draw(st.integers(-m + 1, n - 1))}, [batch + (m, n)]


def embedding_spec(draw):
    vocab = draw(st.integers(1, 5))
    ids_shape = draw(shape_st(0, 3, max_side=3))
    size = int(np.prod(ids_shape))
    ids = np.array(draw(st.lists(st.integers(0, vocab - 1), min_size=size, max_size=size)),
                   dtype=np.int64).reshape(ids_shape)
    return {"ids": ids}, [(vocab,) + draw(shape_st(0, 2))]


def embedding_sharded_spec(draw):
    params, (shape,) = embedding_spec(draw)
    first = draw(st.integers(0, shape[0]))
    return params, [(first,) + shape[1:], (shape[0] - first,) + shape[1:]]


case("sort", "TakeAlongLastAxis",
     lambda x, axis, direction: tf.sort(x, axis=axis, direction=direction), sort_spec, distinct(),
     note="a take along the axis by argsort (a tensor input); no ties (sort has kinks there)")
case("roll", "Roll", lambda x, shift, axis: tf.roll(x, shift, axis), roll_spec,
     note="several shifts, repeated axes add up")
case("repeat", "GatherV2", lambda x, repeats, axis: tf.repeat(x, repeats, axis=axis),
     repeat_spec, note="axis=None flattens; zero repeats included")
case("meshgrid", ("Reshape", "BroadcastTo"),
     lambda *xs, indexing: tf.meshgrid(*xs, indexing=indexing), meshgrid_spec,
     note="several outputs, each weighted")
case("linalg_diag", "StridedSliceGrad", lambda x, **kw: tf.linalg.diag(x, **kw), diag_spec,
     note="off-diagonal k, rectangular outputs, padding")
case("linalg_diag_part", "StridedSlice", lambda x, k: tf.linalg.diag_part(x, k=k),
     diag_part_spec, note="off-diagonal k of rectangular matrices")
case("embedding_lookup", "GatherV2", lambda p, ids: tf.nn.embedding_lookup(p, ids),
     embedding_spec, note="ids of any rank, repeated ids add up")
case("embedding_lookup_sharded", ("ConcatV2", "GatherV2"),
     lambda p0, p1, ids: tf.nn.embedding_lookup([p0, p1], ids), embedding_sharded_spec)
case("embedding_lookup_max_norm", ("GatherV2", "Maximum"),
     lambda p, ids: tf.nn.embedding_lookup(p, ids, max_norm=1.0), embedding_spec,
     uniform(-2.0, 2.0), note="rows clipped to norm 1; a row norm within 1e-6 of 1 has "
     "probability ~0")


def top_k_spec(draw):
    s = draw(shape_st(1, 3))
    return {"k": draw(st.integers(0, s[-1]))}, [s]


def along_last_axis_spec(scatter):
    """Rows of indices into a last axis of ``size`` (repeats included): the input is the
    gathered-from x [..., size], or for the scatter the updates [..., k]."""
    def spec(draw):
        s = draw(shape_st(1, 3))
        size, k = s[-1], draw(st.integers(1, MAX_SIDE))
        count = int(np.prod(s[:-1])) * k
        ids = np.array(draw(st.lists(st.integers(0, size - 1), min_size=count, max_size=count)),
                       dtype=np.int32).reshape(s[:-1] + (k,))
        if scatter:
            return {"ids": ids, "size": size}, [s[:-1] + (k,)]
        return {"ids": ids}, [s]
    return spec


def _take_along_last_axis(x, ids):
    from tapeflow.core.dispatch import apply
    from tapeflow.ops.sorting import TAKE_ALONG_LAST_AXIS
    return apply(TAKE_ALONG_LAST_AXIS, (x, tf.constant(ids)))


def _scatter_add_along_last_axis(u, ids, size):
    from tapeflow.core.dispatch import apply
    from tapeflow.ops.sorting import SCATTER_ADD_ALONG_LAST_AXIS
    return apply(SCATTER_ADD_ALONG_LAST_AXIS, (u, tf.constant(ids)), {"size": size})


case("top_k", "TopKV2", lambda x, k: tf.math.top_k(x, k)[0], top_k_spec, distinct(),
     note="no ties (top_k has kinks there); k = 0 included; the gradient scatters")
case("take_along_last_axis", "TakeAlongLastAxis", _take_along_last_axis,
     along_last_axis_spec(False), note="top_k's second-order rule; repeated indices")
case("scatter_add_along_last_axis", "ScatterAddAlongLastAxis", _scatter_add_along_last_axis,
     along_last_axis_spec(True), note="top_k's gradient; repeated indices add up")


# --- convolution and pooling (ops/conv.py) --------------------------------------------------------
def _conv_padding(draw):
    kind = draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if kind != "explicit":
        return kind
    return [[0, 0], [draw(st.integers(0, 2)), draw(st.integers(0, 1))],
            [draw(st.integers(0, 1)), draw(st.integers(0, 2))], [0, 0]]


def _conv_side(draw, k, stride, dilation, padding, axis):
    """An input length the window fits (an output of 1 to 3 positions)."""
    span = (k - 1) * dilation + 1
    pad = sum(padding[axis + 1]) if isinstance(padding, list) else 0
    lo = 1 if padding == "SAME" else max(span - pad, 1)
    return draw(st.integers(lo, lo + 2 * stride))


def conv2d_spec(groups=False):
    def spec(draw):
        k = [draw(st.integers(1, 3)) for _ in range(2)]
        s = [draw(st.integers(1, 2)) for _ in range(2)]
        d = [draw(st.integers(1, 2)) for _ in range(2)]
        padding = _conv_padding(draw)
        h, w = (_conv_side(draw, k[i], s[i], d[i], padding, i) for i in range(2))
        g = draw(st.integers(2, 3)) if groups else 1
        ci, co = draw(st.integers(1, 2)), draw(st.integers(1, 2)) * g
        params = {"strides": s, "padding": padding, "dilations": d}
        return params, [(draw(st.integers(1, 2)), h, w, ci * g), (k[0], k[1], ci, co)]
    return spec


def _conv2d_output_shape(params, x_shape, w_shape):
    return tf.nn.conv2d(np.zeros(x_shape), np.zeros(w_shape), **params).shape


def conv2d_transpose_spec(draw):
    params, (xs, ws) = conv2d_spec()(draw)
    dy_shape = tuple(_conv2d_output_shape(params, xs, ws))
    return params | {"output_shape": list(xs)}, [dy_shape, ws]


def conv2d_filter_grad_spec(draw):
    params, (xs, ws) = conv2d_spec()(draw)
    return params | {"filter_shape": ws}, [xs, tuple(_conv2d_output_shape(params, xs, ws))]


def _conv2d_filter_grad_via_gradient(x, u, *, filter_shape, **geometry):
    """Conv2DBackpropFilter, conv2d's filter gradient, as a function of the input and cotangent."""
    w = tf.zeros(filter_shape, dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.nn.conv2d(x, w, **geometry)
    return tape.gradient(y, w, output_gradients=u)


def conv1d_transpose_spec(draw):
    params, (xs, ws) = conv1d_spec(draw)
    dy_shape = tuple(tf.nn.conv1d(np.zeros(xs), np.zeros(ws), params["stride"], params["padding"],
                                  dilations=params["dilations"]).shape)
    return {"output_shape": list(xs), "strides": params["stride"], "padding": params["padding"],
            "dilations": params["dilations"]}, [dy_shape, ws]


def conv1d_spec(draw):
    k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    n = _conv_side(draw, k, s, d, padding, 0)
    ci, co = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    return {"stride": s, "padding": padding, "dilations": d}, [(draw(st.integers(1, 2)), n, ci),
                                                               (k, ci, co)]


def pool2d_spec(draw):
    k = [draw(st.integers(1, 3)) for _ in range(2)]
    s = [draw(st.integers(1, 3)) for _ in range(2)]
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    h, w = (_conv_side(draw, k[i], s[i], 1, padding, i) for i in range(2))
    return {"ksize": k, "strides": s, "padding": padding}, [
        (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 2)))]


def pool1d_spec(draw):
    k, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    n = _conv_side(draw, k, s, 1, padding, 0)
    return {"ksize": k, "strides": s, "padding": padding}, [
        (draw(st.integers(1, 2)), n, draw(st.integers(1, 2)))]


def _pool_output_shape(pool, params, x_shape):
    return tuple(pool(np.zeros(x_shape), **params).shape)


def pool_grad_spec(pool):
    def spec(draw):
        params, (xs,) = pool2d_spec(draw)
        return params, [_pool_output_shape(pool, params, xs), xs]
    return spec


def _pool_grad_via_gradient(pool):
    def fn(u, x, **params):
        """The pool's gradient (MaxPoolGrad / AvgPoolGrad) as a function of the cotangent u."""
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = pool(x, **params)
        return tape.gradient(y, x, output_gradients=u)
    return fn


def _max_pool_grad_grad_via_gradient(v, x, **params):
    """MaxPoolGradGrad: the derivative of max_pool's gradient in its cotangent, applied to v."""
    u = tf.zeros(tf.nn.max_pool2d(x, **params).shape, dtype=tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(u)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.max_pool2d(x, **params)
        g = tape.gradient(y, x, output_gradients=u)
    return outer.gradient(g, u, output_gradients=v)


def max_pool_grad_grad_spec(draw):
    params, (xs,) = pool2d_spec(draw)
    return params, [xs, xs]


case("conv2d", "Conv2D", lambda x, w, **kw: tf.nn.conv2d(x, w, **kw), conv2d_spec(),
     note="strides, dilations, SAME / VALID / explicit padding")
case("conv2d_grouped", ("Conv2D", "ConcatV2"), lambda x, w, **kw: tf.nn.conv2d(x, w, **kw),
     conv2d_spec(groups=True), note="input channels a multiple of the filters': groups")
def _conv2d_nchw(x, w, *, padding, **kw):
    if not isinstance(padding, str):  # the spec's NHWC pairs, in NCHW order
        padding = [[0, 0], [0, 0]] + padding[1:3]
    return tf.nn.conv2d(tf.transpose(x, [0, 3, 1, 2]), w, padding=padding, data_format="NCHW",
                        **kw)


case("conv2d_nchw", ("Conv2D", "Transpose"), _conv2d_nchw, conv2d_spec())
case("conv1d", ("Conv2D", "Reshape"), lambda x, w, **kw: tf.nn.conv1d(x, w, **kw), conv1d_spec)
case("conv2d_transpose", "Conv2DBackpropInput",
     lambda dy, w, **kw: tf.nn.conv2d_transpose(dy, w, **kw), conv2d_transpose_spec,
     note="conv2d's input gradient")
case("conv1d_transpose", ("Conv2DBackpropInput", "Reshape"),
     lambda dy, w, **kw: tf.nn.conv1d_transpose(dy, w, **kw), conv1d_transpose_spec,
     note="conv2d_transpose on one row")
case("conv2d_backprop_filter", "Conv2DBackpropFilter", _conv2d_filter_grad_via_gradient,
     conv2d_filter_grad_spec, note="built as the gradient of conv2d w.r.t. a filter, as a "
     "function of the input and the cotangent")
case("max_pool2d", "MaxPool", lambda x, **kw: tf.nn.max_pool2d(x, **kw), pool2d_spec, distinct(),
     note="no ties (a tie's gradient goes to the first maximum, not a derivative)")
case("max_pool1d", ("MaxPool", "Reshape"), lambda x, **kw: tf.nn.max_pool1d(x, **kw),
     pool1d_spec, distinct())
case("max_pool_grad", "MaxPoolGrad", _pool_grad_via_gradient(tf.nn.max_pool2d),
     pool_grad_spec(tf.nn.max_pool2d), per_arg(REAL, distinct()),
     note="built as the gradient of max_pool2d w.r.t. its cotangent; piecewise constant in x")
case("max_pool_grad_grad", "MaxPoolGradGrad", _max_pool_grad_grad_via_gradient,
     max_pool_grad_grad_spec, per_arg(REAL, distinct()),
     note="the derivative of max_pool2d's gradient in its cotangent, applied to v")
case("avg_pool2d", "AvgPool", lambda x, **kw: tf.nn.avg_pool2d(x, **kw), pool2d_spec,
     note="SAME windows average only the input elements they hold")
case("avg_pool1d", ("AvgPool", "Reshape"), lambda x, **kw: tf.nn.avg_pool1d(x, **kw),
     pool1d_spec)
case("avg_pool_grad", "AvgPoolGrad", _pool_grad_via_gradient(tf.nn.avg_pool2d),
     pool_grad_spec(tf.nn.avg_pool2d), per_arg(REAL, REAL),
     note="built as the gradient of avg_pool2d w.r.t. its cotangent")


# --- graph control flow (src/tapeflow/tracing/control_flow.py; more in tests/tracing) -----------
# Each case traces a fresh tf.function whose predicate / bound is an argument, so the op is one
# equation of the graph; calling it under the tapes interprets the graph and records the op.
def _traced_cond(x, y, *, pred):
    fn = tf.function(lambda a, b, p: tf.cond(p, lambda: tf.sin(a) * b, lambda: a * a - tf.exp(b)))
    return fn(x, y, tf.constant(pred))


def _traced_while(x, *, steps):
    def loop(a, n):
        return tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y) * a + 0.5 * y),
                             (0, a))[1]
    return tf.function(loop)(x, tf.constant(steps))


def _while_gradient_inside(x, *, steps):
    """The gradient of a while loop taken inside a tf.function: one WhileGrad equation."""
    def grad(a, n):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, tf.sin(y) * a + 0.5 * y),
                              (0, a))[1]
            s = tf.reduce_sum(y * y)
        return tape.gradient(s, a)
    return tf.function(grad)(x, tf.constant(steps))


def _traced_map_fn(x, w):
    fn = tf.function(lambda a, b: tf.map_fn(lambda r: tf.tanh(r * b) + tf.reduce_sum(r * r), a))
    return fn(x, w)


def _cond_spec(draw):
    _, shapes = broadcast()(draw)
    return {"pred": draw(st.booleans())}, shapes


def _while_spec(draw):
    return {"steps": draw(st.integers(0, 3))}, [draw(shape_st(0, 2))]


def _map_fn_spec(draw):
    s = draw(shape_st(1, 3))
    return {}, [s, s[1:]]


case("cond", "If", _traced_cond, _cond_spec, note="both branches, chosen at run time")
case("while_loop", "While", _traced_while, _while_spec,
     note="trip count an argument: 0 to 3 steps, the body captures x")
case("while_grad", "WhileGrad", _while_gradient_inside, _while_spec,
     note="a while loop's gradient inside tf.function (O(n): states kept); second order "
          "through the recomputing form")
case("map_fn", "MapFn", _traced_map_fn, _map_fn_spec,
     note="rows of x; w captured by the mapped function (its gradient sums over rows)")


# --- whole-sequence recurrent ops (src/tapeflow/ops/rnn.py; layers in tests/layers) -------------
_RNN_GATES = {"simple_rnn": 1, "lstm": 4, "gru": 3}


def _rnn_sequence_spec(kind, small=False):
    def spec(draw):  # small: the gradient ops' jacobians run the unrolled form once a row
        batch, steps, units = (draw(st.integers(1, n)) for n in ((1, 2, 1) if small else
                                                                 (2, 3, 2)))
        width = _RNN_GATES[kind] * units
        with_state = draw(st.booleans())
        shapes = [(batch, steps, width), (units, width)] + ([(width,)] if kind == "gru" else [])
        shapes += [(batch, units)] * ((2 if kind == "lstm" else 1) if with_state else 0)
        keep = draw(st.none() | st.lists(st.booleans(), min_size=batch * steps,
                                         max_size=batch * steps))
        mask = None if keep is None else np.reshape(keep, (batch, steps))
        return {"kind": kind, "mask": mask, "zero_output": draw(st.booleans())}, shapes
    return spec


def _rnn_sequence(kind_name):
    def fn(p, u, *rest, kind, mask, zero_output):
        from tapeflow.ops.rnn import recurrent_sequence
        rb, states = (rest[0], rest[1:]) if kind == "gru" else (None, rest)
        seq, last = recurrent_sequence(kind, p, u, rb, list(states) or None,
                                       None if mask is None else tf.constant(mask), zero_output)
        return [seq] + last
    fn.__name__ = kind_name
    return fn


def _rnn_sequence_gradient(kind_name):
    """The whole-sequence op's gradient op as a function of its inputs (and a fixed cotangent)."""
    forward = _rnn_sequence(kind_name)

    def fn(*xs, **params):
        with tf.GradientTape() as tape:
            tape.watch(xs)
            outs = forward(*xs, **params)
            total = tf.add_n([tf.reduce_sum(tf.sin(o)) for o in outs])
        return tape.gradient(total, list(xs))
    return fn


for _kind, _op in (("simple_rnn", "SimpleRNN"), ("lstm", "LSTM"), ("gru", "GRU")):
    case(f"{_kind}_sequence", f"{_op}Sequence", _rnn_sequence(_kind), _rnn_sequence_spec(_kind),
         uniform(-1.5, 1.5), note="masks, zero_output_for_mask and given initial states drawn")
    case(f"{_kind}_sequence_grad", f"{_op}SequenceGrad", _rnn_sequence_gradient(_kind),
         _rnn_sequence_spec(_kind, small=True), uniform(-1.5, 1.5),
         note="back through time in one op; second order through the unrolled form")

# --- layer normalization (src/tapeflow/ops/layer_norm.py; the layer in tests/layers) ------------
def _layer_norm_spec(small=False):
    def spec(draw):  # small: the gradient op's checks differentiate nested tapes
        # sides from 2: a variance away from 0 (the derivatives grow as its powers)
        tail = draw(shape_st(1, 1 if small else 2, min_side=2, max_side=3))
        rows = draw(shape_st(1, 1 if small else 2, max_side=2 if small else 3))
        return {"axes_count": len(tail)}, [rows + tail, tail, tail]
    return spec


def _layer_norm(x, gamma, beta, axes_count):
    """All three outputs: the statistics' own gradients go through LayerNormGrad too."""
    from tapeflow.ops.layer_norm import layer_norm
    return list(layer_norm(x, gamma, beta, axes_count, epsilon=1e-3))


def _layer_norm_gradient(x, gamma, beta, axes_count):
    """LayerNormGrad as a function of the op's inputs (a fixed smooth cotangent of each
    output, the statistics' included)."""
    with tf.GradientTape() as tape:
        tape.watch([x, gamma, beta])
        total = tf.add_n([tf.reduce_sum(tf.sin(o)) for o in _layer_norm(x, gamma, beta,
                                                                          axes_count)])
    return tape.gradient(total, [x, gamma, beta])


case("layer_norm", "LayerNorm", _layer_norm, _layer_norm_spec(),
     note="over the last one or two axes; mean and 1/sqrt(variance + epsilon) outputs too")
case("layer_norm_grad", "LayerNormGrad", _layer_norm_gradient, _layer_norm_spec(small=True),
     rtol=1e-5, note="one op back; second order through the same formula in ops (a third "
     "derivative of the layer norm: central differences of it reach ~1e-6 relative)")

# =================================================================================================
# Ops without a gradient
# =================================================================================================
def _f64(t):
    return tf.cast(t, tf.float64)


def _identity_n_without_gradient(x):
    """IdentityN as a graph loaded without its saved gradient applies it: no rule to find."""
    from tapeflow.core.dispatch import apply
    from tapeflow.tracing.ir import CUSTOM_GRADIENT
    return apply(CUSTOM_GRADIENT, (x, x * 1.0), {"n_inputs": 1})


def _printed(x):
    """tf.print's op on x; what comes back (x's size) does not depend on x's values."""
    import io
    tf.print(x, output_stream=io.StringIO())
    return tf.cast(tf.size(x), tf.float64)


def _nd(kind, reason, probe):
    return NonDiff(kind, reason, probe)


_PIECEWISE_CONSTANT = "piecewise constant: the derivative is zero almost everywhere and undefined " \
                      "at the jumps; registered NotDifferentiable (None), as in TensorFlow"
_BOOL = "boolean result: nothing to differentiate; registered NotDifferentiable"

_RANDOM = "a random draw (stateful: new numbers at every run): no derivative with respect " \
          "to anything; registered NotDifferentiable, as in TensorFlow"


def _uniform_like(x):
    """The draw whose shape is x's when it runs (dropout's): x is an operand, yet no gradient."""
    from tapeflow.ops.random import uniform_like
    return uniform_like(x, dtype=tf.float64)


_OPTIMIZER = "an optimizer's update (the fast array kernel of one step, stored with assign): " \
             "state, never differentiated; registered NotDifferentiable"
_LR = 0.1
_STEP = "step"  # the optimizer's iterations, an int64 tensor
_METRIC = "a metric's state update (the metric's array code as an op in a traced step): " \
          "never differentiated; registered NotDifferentiable"


def _check_class_indices(x):
    from tapeflow.core.dispatch import apply
    from tapeflow.ops.nn import CHECK_CLASS_INDICES
    return apply(CHECK_CLASS_INDICES, (tf.math.floor(tf.abs(x)),), {"depth": 3})


def _asserted_zeros(x, numerics=False):
    """The check on x; what comes back (zeros of x's shape) does not depend on x's values."""
    if numerics:
        tf.debugging.check_numerics(x, "finite")
    else:
        tf.Assert(tf.reduce_all(x > -10.0), [x])
    return tf.zeros_like(x)


def _metric_values(x):
    from tapeflow import metrics
    return metrics._traced_values(metrics._squared_differences, x, x * 2.0)


def _metric_sums(x):
    from tapeflow import metrics
    return metrics._traced_sums(x, None, "mean", np.float64)


class _OneRank:
    """An MPIStrategy of one rank for MPIAllReduceSum's probe: the sum is the value."""

    def _packed_sum(self, values, before, after):
        return [tf.constant(v) for v in values]


def _optimizer_op(name, *operands, **attrs):
    """An optimizer primitive on x (variable, slots and gradient): its first output."""
    from tapeflow.core.dispatch import apply
    from tapeflow.core.registry import lookup_primitive
    op = lookup_primitive(name)
    operands = tuple(tf.constant(o, dtype=tf.float64) if isinstance(o, float) else
                     tf.constant(3, dtype=tf.int64) if isinstance(o, str) else o for o in operands)
    out = apply(op, operands, attrs or None)
    return out if op.num_outputs == 1 else out[0]


NON_DIFFERENTIABLE = {
    "NextAfter": _nd("not_differentiable", "the next representable float: piecewise constant; "
                     "TensorFlow registers no gradient either", lambda x: tf.math.nextafter(x, 2.0)),
    "PrintV2": _nd("not_differentiable", "tf.print has no outputs: nothing flows through it",
                   lambda x: _printed(x)),
    "FloorDiv": _nd("not_differentiable", _PIECEWISE_CONSTANT, lambda x: tf.math.floordiv(x, 0.7)),
    "Round": _nd("not_differentiable", _PIECEWISE_CONSTANT, lambda x: tf.round(x)),
    "Floor": _nd("not_differentiable", _PIECEWISE_CONSTANT, lambda x: tf.math.floor(x)),
    "Ceil": _nd("not_differentiable", _PIECEWISE_CONSTANT, lambda x: tf.math.ceil(x)),
    "IsNan": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.math.is_nan(x))),
    "IsInf": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.math.is_inf(x))),
    "IsFinite": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.math.is_finite(x))),
    "Equal": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.equal(x, 0.5))),
    "NotEqual": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.not_equal(x, 0.5))),
    "Less": _nd("not_differentiable", _BOOL, lambda x: _f64(x < 0.5)),
    "LessEqual": _nd("not_differentiable", _BOOL, lambda x: _f64(x <= 0.5)),
    "Greater": _nd("not_differentiable", _BOOL, lambda x: _f64(x > 0.5)),
    "GreaterEqual": _nd("not_differentiable", _BOOL, lambda x: _f64(x >= 0.5)),
    "LogicalAnd": _nd("not_differentiable", _BOOL,
                      lambda x: _f64(tf.logical_and(x > 0.0, x < 1.0))),
    "LogicalOr": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.logical_or(x > 1.0, x < 0.0))),
    "LogicalXor": _nd("not_differentiable", _BOOL,
                      lambda x: _f64(tf.math.logical_xor(x > 1.0, x < 0.0))),
    "LogicalNot": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.logical_not(x > 0.0))),
    "Any": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.reduce_any(x > 0.0, axis=-1))),
    "All": _nd("not_differentiable", _BOOL, lambda x: _f64(tf.reduce_all(x > 0.0, axis=-1))),
    "StopGradient": _nd("not_differentiable", "stop_gradient blocks gradients by definition",
                        lambda x: tf.stop_gradient(x) * 2.0),
    "ArgMax": _nd("integer_output", "integer result: never recorded, no rule registered",
                  lambda x: _f64(tf.argmax(x, axis=-1))),
    "ArgMin": _nd("integer_output", "integer result: never recorded, no rule registered",
                  lambda x: _f64(tf.argmin(x, axis=-1))),
    "ArgSort": _nd("integer_output", "integer result: never recorded, no rule registered "
                   "(tf.sort's gradient goes through the gather, not through argsort)",
                   lambda x: _f64(tf.argsort(x, axis=-1))),
    "SearchSorted": _nd("integer_output", "integer result: never recorded, no rule registered",
                        lambda x: _f64(tf.searchsorted(tf.sort(tf.reshape(x, [-1])),
                                                       tf.reshape(x, [-1])))),
    "IdentityN": _nd("no_gradient",
                     "custom_gradient's op in a traced graph: its gradient is the traced grad_fn "
                     "it carries (tests/tracing); with none saved, differentiating it raises "
                     "LookupError, as in TensorFlow",
                     lambda x: _identity_n_without_gradient(x)),
    "RandomStandardNormal": _nd("not_differentiable", _RANDOM,
                                lambda x: tf.random.normal(tf.shape(x), dtype=tf.float64)),
    "RandomUniform": _nd("not_differentiable", _RANDOM,
                         lambda x: tf.random.uniform(tf.shape(x), dtype=tf.float64)
                         + _uniform_like(x)),
    "RandomShuffle": _nd("not_differentiable", _RANDOM, lambda x: tf.random.shuffle(x)),
    "TruncatedNormal": _nd("not_differentiable", _RANDOM,
                           lambda x: tf.random.truncated_normal(tf.shape(x), dtype=tf.float64)),
    "GlobalNorm": _nd("not_differentiable", _OPTIMIZER,
                      lambda x: _optimizer_op("GlobalNorm", x, x)),
    "ApplyGradientDescent": _nd("not_differentiable", _OPTIMIZER,
                                lambda x: _optimizer_op("ApplyGradientDescent", x, x, _LR)),
    "ApplyMomentum": _nd("not_differentiable", _OPTIMIZER,
                         lambda x: _optimizer_op("ApplyMomentum", x, x * x, x, _LR,
                                                 momentum=0.9, nesterov=True)),
    "ApplyAdam": _nd("not_differentiable", _OPTIMIZER,
                     lambda x: _optimizer_op("ApplyAdam", x, x * x, x * x, x, _LR, _STEP,
                                             beta_1=0.9, beta_2=0.999, epsilon=1e-7)),
    "ApplyAdamWithAmsgrad": _nd("not_differentiable", _OPTIMIZER,
                                lambda x: _optimizer_op("ApplyAdamWithAmsgrad", x, x * x, x * x,
                                                        x * x, x, _LR, _STEP, beta_1=0.9,
                                                        beta_2=0.999,
                                                        epsilon=1e-7)),
    "ApplyNadam": _nd("not_differentiable", _OPTIMIZER,
                      lambda x: _optimizer_op("ApplyNadam", x, x * x, x * x, x, _LR, 0.5, _STEP,
                                              beta_1=0.9, beta_2=0.999, epsilon=1e-7)),
    "NadamMomentumProduct": _nd("not_differentiable", _OPTIMIZER,
                                lambda x: _optimizer_op("NadamMomentumProduct",
                                                        tf.reduce_sum(x), _STEP, beta_1=0.9)),
    "OneHot": _nd("not_differentiable", "of integer class indices: nothing to differentiate; "
                  "registered NotDifferentiable, as in TensorFlow",
                  lambda x: tf.one_hot(tf.cast(tf.math.floor(tf.abs(x)), tf.int32), 3,
                                       dtype=tf.float64)),
    "CheckClassIndices": _nd("not_differentiable",
                             "sparse crossentropy's label check in a traced step: the labels pass "
                             "through (or it raises); class indices have no derivative",
                             lambda x: _check_class_indices(x)),
    "Assert": _nd("not_differentiable", "tf.Assert / tf.debugging's check: it has no outputs, "
                  "so nothing flows through it; registered NotDifferentiable",
                  lambda x: _asserted_zeros(x)),
    "CheckNumerics": _nd("not_differentiable", "check_numerics' check has no outputs (the "
                         "checked tensor passes through an Identity, whose gradient is the "
                         "identity): nothing flows through it",
                         lambda x: _asserted_zeros(x, numerics=True)),
    "MPIAllReduceSum": _nd("not_differentiable", "MPIStrategy's sum of a step's packed gradients "
                           "over the ranks (a collective): registered NotDifferentiable",
                           lambda x: _optimizer_op("MPIAllReduceSum", x, 0.5,
                                                   strategy=_OneRank())),
    "MetricValues": _nd("not_differentiable", _METRIC,
                        lambda x: _metric_values(x)),
    "MetricSums": _nd("not_differentiable", _METRIC,
                      lambda x: tf.add_n(list(_metric_sums(x)))),
    "ApplyRMSProp": _nd("not_differentiable", _OPTIMIZER,
                        lambda x: _optimizer_op("ApplyRMSProp", x, x * x, x * x, x * x, x, _LR,
                                                rho=0.9, momentum=0.5, epsilon=1e-7,
                                                centered=False)),
    "ApplyAdagrad": _nd("not_differentiable", _OPTIMIZER,
                        lambda x: _optimizer_op("ApplyAdagrad", x, x * x, x, _LR, epsilon=1e-7)),
    "ApplyAdaMax": _nd("not_differentiable", _OPTIMIZER,
                       lambda x: _optimizer_op("ApplyAdaMax", x, x * x, x * x, x, _LR, _STEP,
                                               beta_1=0.9, beta_2=0.999, epsilon=1e-7)),
    "ApplyLion": _nd("not_differentiable", _OPTIMIZER,
                     lambda x: _optimizer_op("ApplyLion", x, x * x, x, _LR, beta_1=0.9,
                                             beta_2=0.99)),
    "InTopKV2": _nd("not_differentiable", _BOOL,
                    lambda x: _f64(tf.math.in_top_k(tf.constant([0, 1, 2]),
                                                    tf.reshape(x, [3, -1]), 2))),
    "ConfusionMatrix": _nd("not_differentiable", "counts of class indices: nothing to "
                           "differentiate; registered NotDifferentiable",
                           lambda x: _f64(tf.math.confusion_matrix(
                               tf.argmax(tf.reshape(x, [-1, 3]), axis=-1),
                               tf.argmin(tf.reshape(x, [-1, 3]), axis=-1), num_classes=3))),
    "Multinomial": _nd("not_differentiable", _RANDOM,
                       lambda x: _f64(tf.random.categorical(tf.reshape(x, [-1, 3]), 4))),
    "AdjustContrastv2": _nd("no_gradient",
                            "registered without a gradient, as in TensorFlow: differentiating it "
                            "raises LookupError", lambda x: tf.image.adjust_contrast(x, 2.0)),
}


# =================================================================================================
# The table: every op name -> its cases, or its NonDiff entry
# =================================================================================================
def _build_table():
    table = {}
    for c in CASES:
        for op in c.ops:
            table.setdefault(op, []).append(c)
    for op, entry in NON_DIFFERENTIABLE.items():
        if op in table:
            raise ValueError(f"{op} has both cases and a non-differentiable entry")
        table[op] = entry
    return table


OP_TABLE = _build_table()


def case_by_name(name):
    return next(c for c in CASES if c.name == name)


def _names_unique():
    names = [c.name for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"duplicate case names: {sorted(dup)}")


_names_unique()


# =================================================================================================
# Batch-independent functions for batch_jacobian: fn(x) with x of shape (batch, ...)
# =================================================================================================
_W = np.random.default_rng(1).standard_normal((3, 4))


@dataclass(frozen=True)
class BatchCase:
    name: str
    fn: Callable
    example_shape: tuple       # shape of one example (after the batch axis)
    domain: Domain = REAL


BATCH_CASES = [
    BatchCase("tanh", lambda x: tf.math.tanh(x), (3,)),
    BatchCase("softmax", lambda x: tf.nn.softmax(x, axis=-1), (3,)),
    BatchCase("log_softmax_rank3", lambda x: tf.nn.log_softmax(x, axis=-1), (2, 3)),
    BatchCase("matmul_weights", lambda x: tf.matmul(x, tf.constant(_W)), (3,)),
    BatchCase("einsum_weights", lambda x: tf.einsum("bi,ij->bj", x, tf.constant(_W)), (3,)),
    BatchCase("reduce_sum_rows", lambda x: tf.reduce_sum(x * x, axis=-1, keepdims=True), (2, 3)),
    BatchCase("cumsum", lambda x: tf.cumsum(x, axis=1, reverse=True), (3,)),
    BatchCase("getitem", lambda x: x[:, [2, 0, 2]], (3,)),
    BatchCase("gather", lambda x: tf.gather(x, tf.constant([[2, 0], [2, 1]]), axis=1), (3,)),
    BatchCase("tile", lambda x: tf.tile(x, [1, 2]), (3,)),
    BatchCase("inv", lambda x: tf.linalg.inv(x), (3, 3), well_conditioned()),
    BatchCase("det", lambda x: tf.linalg.det(x)[:, None], (3, 3), well_conditioned()),
    BatchCase("sort_rows", lambda x: tf.sort(x, axis=-1), (4,), distinct()),
    BatchCase("roll", lambda x: tf.roll(x, [1, -2], [1, 2]), (2, 3)),
    BatchCase("xlogy", lambda x: tf.math.xlogy(x, x * x + 1.0), (3,)),
    BatchCase("linalg_diag", lambda x: tf.linalg.diag(x, k=1), (3,)),
    BatchCase("cholesky", lambda x: tf.linalg.cholesky(_spd(x)), (3, 3)),
    BatchCase("eigh", lambda x: (lambda e, v: tf.concat([e, tf.reshape(v * v, [-1, 9])], 1))(
        *tf.linalg.eigh(x)), (3, 3), spaced_spectrum()),
    BatchCase("svd", lambda x: (lambda s, u, v: tf.concat([s, tf.reshape(u * u, [-1, 6])], 1))(
        *tf.linalg.svd(x)), (3, 2), spaced_spectrum()),
    BatchCase("qr", lambda x: tf.reshape(tf.linalg.qr(x)[1], [-1, 4]), (3, 2), spaced_spectrum()),
    BatchCase("pinv", lambda x: tf.linalg.pinv(x), (2, 3), spaced_spectrum()),
]
