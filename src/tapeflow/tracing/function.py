"""``tf.function``: trace a Python function once per input signature, then replay its graph.

A call's signature is its nested structure (the kinds of its lists, tuples,
namedtuples and dicts, and the dicts' keys), each tensor argument's shape and dtype,
each Variable argument's identity and every other Python argument's value
(by equality).  The first call with a new signature traces the function into a
Graph (``ConcreteFunction``); later matching calls run the compiled graph and
never run the Python function.  As in TensorFlow, Python side effects happen
only while tracing, and retracing again and again draws a warning; a trace that
changes a list or dict argument raises (``argument_mutation.py``).

``None`` in a ``TensorSpec`` (or a dimension that changed between calls under
``reduce_retracing=True``) asks for one graph for every size there.  The
function is traced a second time with another size, and the graph is kept
for all sizes only if both traces agree op for op. If they differ (the code
read the size and baked it into an op), the function is traced once for each
size it meets, which is always correct.
"""
import copy
import functools
import inspect
import threading
import warnings
import weakref

import numpy as np

from .. import backend
from ..core import nest
from ..core.context import PER_THREAD, context
from ..core.tensor import Tensor, Variable, convert_to_tensor, variables_made_in_traces
from ..dtypes import as_dtype, numpy_dtype
from ..ops import assertion
from ..ops.arithmetic import equal
from .argument_mutation import check_unmodified, snapshot
from .autograph import convert as autograph_convert
from .autograph.status import converting as autograph_converting
from .compiler import compile_graph, interpret, optimize
from .ir import Graph
from .tracer import SymbolicTensor, Tracer, tracing

__all__ = ["function", "Function", "ConcreteFunction", "TensorSpec", "run_functions_eagerly",
           "functions_run_eagerly"]

_RETRACE_WARN_AFTER = 5


class TensorSpec:
    """The shape (``None`` for any size) and dtype a tensor argument must have."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = None if shape is None else tuple(None if d is None else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        tensor = convert_to_tensor(tensor)
        return cls(tuple(tensor.shape), tensor.dtype, name)

    def is_compatible_with(self, value):
        shape = tuple(value.shape)
        if np.dtype(numpy_dtype(value.dtype)) != np.dtype(numpy_dtype(self.dtype)):
            return False
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            s is None or s == d for s, d in zip(self.shape, shape))

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype.name))

    def __repr__(self):
        shape = "None" if self.shape is None else f"({', '.join(map(str, self.shape))})"
        return f"TensorSpec(shape={shape}, dtype=tf.{self.dtype.name}, name={self.name!r})"


def run_functions_eagerly(run_eagerly):
    """Run every ``tf.function`` as plain Python (for debugging), as TensorFlow's."""
    context().functions_run_eagerly = bool(run_eagerly)


def functions_run_eagerly():
    return context().functions_run_eagerly


def function(func=None, input_signature=None, reduce_retracing=False, jit_compile=None,
             autograph=True, experimental_relax_shapes=None, name=None):
    """Decorator or wrapper: ``tf.function(fn)`` or ``@tf.function(input_signature=[...])``."""
    if func is None:
        return functools.partial(function, input_signature=input_signature,
                                 reduce_retracing=reduce_retracing, jit_compile=jit_compile,
                                 autograph=autograph,
                                 experimental_relax_shapes=experimental_relax_shapes, name=name)
    relax = bool(reduce_retracing or experimental_relax_shapes)
    return Function(func, input_signature, relax, name, autograph=autograph)


class Function:
    """A traced Python function: a cache of ConcreteFunctions, one per signature."""

    def __init__(self, python_function, input_signature=None, reduce_retracing=False, name=None,
                 instance=None, autograph=True, check_argument_mutation=True):
        """``check_argument_mutation=False``: the function may change the containers it is
        given (tf.data's map functions, which TensorFlow hands fresh ones at each trace)."""
        self.python_function = python_function
        self._autograph = autograph
        self._check_mutation = check_argument_mutation
        self.input_signature = None if input_signature is None else list(input_signature)
        if self.input_signature is not None:
            for spec in nest.flatten(self.input_signature):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"input_signature takes tf.TensorSpec objects, got {spec!r}")
        self._reduce_retracing = reduce_retracing
        self._name = name or getattr(python_function, "__name__", "function")
        self._instance = instance
        self._cache = {}
        self._exact = {}            # (shape, dtype, ...) of a tensors-only call -> its function
        self._relaxed = {}          # leaf position -> shape with None dims (reduce_retracing)
        self._trace_count = 0
        self._warned = False
        self._made_variables = False  # a trace made Variables: no later trace may
        self._bound = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()  # threads calling at once: one traces, the others wait
        functools.update_wrapper(self, python_function)

    # methods: ``@tf.function`` on a method traces per instance
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        bound = self._bound.get(instance)
        if bound is None:
            bound = Function(self.python_function, self.input_signature, self._reduce_retracing,
                             self._name, instance=weakref.ref(instance),
                             autograph=self._autograph,
                             check_argument_mutation=self._check_mutation)
            self._bound[instance] = bound
        return bound

    @property
    def name(self):
        return self._name

    def experimental_get_tracing_count(self):
        return self._trace_count

    def _args(self, args, kwargs):
        if self._instance is not None:
            instance = self._instance()
            return (instance,) + tuple(args), kwargs
        return tuple(args), kwargs

    def __call__(self, *args, **kwargs):
        ctx = PER_THREAD.context
        if ctx.functions_run_eagerly:
            full, kwargs = self._args(args, kwargs)
            return self.python_function(*full, **kwargs)
        exact, flat = (None, None) if kwargs else _exact_key(ctx.device, args)
        if exact is not None:
            # The common call, tensors only, with shapes and dtypes seen before: one lookup,
            # and with nothing watching, straight into the compiled function.
            concrete = self._exact.get(exact)
            if concrete is not None:
                if ctx.active:
                    return concrete._call_flat(flat)
                outs = concrete._run(*flat)
                return outs[0] if concrete._single_output else concrete._pack(outs)
        concrete, tensors = self._concrete_for(args, kwargs)
        if exact is not None and concrete.pinned is None:
            self._exact[exact] = concrete
        return concrete._call_flat(tensors)

    def run_for_effects(self, *args):
        """Call for what the call changes (Variables, random state, prints), not its results,
        which are not computed once this signature has run ``EFFECTS_AFTER`` times
        (``ConcreteFunction.effects_only``); returns None.  ``fit`` runs a step whose logs no
        callback reads so: Keras reads an epoch's logs from the metrics."""
        ctx = PER_THREAD.context
        if not ctx.functions_run_eagerly and not ctx.active:
            exact, flat = _exact_key(ctx.device, args)
            concrete = None if exact is None else self._exact.get(exact)
            run = None if concrete is None else concrete.effects_only()
            if run is not None:
                run(*flat)
                return None
        self(*args)
        return None

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (tensors, or TensorSpecs), tracing if new."""
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        return self._concrete_for(args, kwargs)[0]

    # --- signatures --------------------------------------------------------------------------
    def _concrete_for(self, args, kwargs):
        if self.input_signature is not None:
            args = self._check_signature(args, kwargs)
            kwargs = {}
        structure = (args, kwargs)
        composite = nest.find_composite(structure)
        if composite is not None:
            raise TypeError(f"{self._name}: a {type(composite).__name__} cannot be an argument of "
                            "a tf.function here; make it inside the function, or pass its "
                            "tensors (TensorArray.stack())")
        leaves = nest.flatten(structure)
        key, tensors, shapes = self._key(structure, leaves)
        concrete = self._cache.get(key)
        if concrete is None or concrete.__class__ is not ConcreteFunction:
            with self._lock:
                concrete = self._cache.get(key)
                if concrete is None:
                    concrete = self._trace(structure, leaves, shapes, key)
                elif concrete.__class__ is _PerShape:
                    concrete = concrete.get(self, structure, leaves, shapes, tensors)
                elif concrete.__class__ is _Undecided:
                    concrete = concrete.decide(self, key, structure, leaves, tensors)
                elif concrete.__class__ is _PerValue:
                    concrete = concrete.get(self, structure, leaves, tensors)
        return concrete, tensors

    def _check_signature(self, args, kwargs):
        specs = self.input_signature
        if kwargs or len(args) < len(specs):
            params = list(inspect.signature(self.python_function).parameters.values())
            if self._instance is not None:
                params = params[1:]
            args = list(args)
            for p in params[len(args):len(specs)]:
                if p.name in kwargs:
                    args.append(kwargs[p.name])
                elif p.default is not inspect.Parameter.empty:
                    args.append(p.default)  # as TensorFlow: a default fills its spec
                else:
                    break
        if len(args) != len(specs):
            raise TypeError(f"{self._name}: the input_signature has {len(specs)} arguments, "
                            f"the call passed {len(args)}")
        return tuple(_signed(self._name, i, spec, a) for i, (a, spec) in
                     enumerate(zip(args, specs)))

    def _key(self, structure, leaves):
        # A graph's constants live on the device it was traced on: each device has its own.
        # The nesting is part of the key: [[a], b] and [[a, b]] flatten alike, trace apart.
        key = [("D", PER_THREAD.context.device), ("S", nest.structure_key(structure))]
        tensors, shapes = [], []
        for pos, leaf in enumerate(leaves):
            spec = None
            if leaf.__class__ is _Signed:
                leaf, spec = leaf.tensor, leaf.spec
            if isinstance(leaf, Variable):
                key.append(("V", id(leaf)))
            elif isinstance(leaf, TensorSpec):
                shape = leaf.shape
                key.append(("T", shape, leaf.dtype.name))
                tensors.append(leaf)
                shapes.append(shape)
            elif isinstance(leaf, Tensor) or backend.is_array(leaf):
                t = leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf)
                shape = tuple(t._value.shape)
                if spec is not None and spec.shape is not None:
                    shape = spec.shape
                elif self._reduce_retracing:
                    shape = self._relax(pos, shape)
                key.append(("T", shape, t._value.dtype.name))
                tensors.append(t)
                shapes.append(shape)
            else:
                try:
                    hash(leaf)
                except TypeError:
                    raise TypeError(f"{self._name}: argument {leaf!r} of type {type(leaf).__name__} "
                                    "is neither a tensor nor a hashable Python value; tf.function "
                                    "keys its traces on Python values by equality") from None
                key.append(("P", type(leaf).__name__, leaf))
        return tuple(key), tensors, shapes

    def _relax(self, pos, shape):
        seen = self._relaxed.get(pos)
        if seen is None:
            self._relaxed[pos] = shape
            return shape
        if len(seen) != len(shape):
            return shape
        relaxed = tuple(None if a != b else a for a, b in zip(seen, shape))
        self._relaxed[pos] = relaxed
        return relaxed

    # --- tracing -------------------------------------------------------------------------------
    def _trace(self, structure, leaves, shapes, key):
        self._count_trace()
        polymorphic = any(s is None or None in s for s in shapes)
        first = self._trace_once(structure, leaves, shapes, probe=False)
        if first.made_variables:
            # As TensorFlow: Variables made on the first call are lifted out and kept; a
            # function that makes them again when traced again would make them at every call.
            # TensorFlow traces twice on that first call to find out; so does this.
            self._made_variables = True
            first = self._trace_once(structure, leaves, shapes, probe=False)
        if first.pinned is not None:
            self._cache[key] = _PerValue(first, leaves)
            return first
        if polymorphic and not any(isinstance(leaf, TensorSpec) for leaf in leaves):
            # Called with data: whether the graph depends on the free sizes is found out at the
            # first call with other sizes, by tracing for it (so the Python body never runs
            # twice in one call).  A signature of TensorSpecs alone is probed now, below.
            self._cache[key] = _Undecided(first, structure, leaves, shapes)
            return first
        if polymorphic:
            try:
                second = self._trace_once(structure, leaves, shapes, probe=True)
            except Exception:  # noqa: BLE001 - the probe size broke it: the code depends on it
                second = None
            if second is None or not _same_graph(first.graph, second.graph):
                per_shape = _PerShape()
                per_shape.add(first, leaves)
                self._cache[key] = per_shape
                return first
            first.relax_types(second.graph)
        self._cache[key] = first
        return first

    def _count_trace(self):
        self._trace_count += 1
        if self._trace_count > _RETRACE_WARN_AFTER and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self._trace_count} calls to {self._name} triggered tf.function retracing. "
                "Tracing is expensive; the excessive number of tracings could be due to (1) "
                "creating @tf.function repeatedly in a loop, (2) passing tensors with different "
                "shapes, (3) passing Python objects instead of tensors. For (2), "
                "@tf.function has reduce_retracing=True and input_signature with None "
                "dimensions.", stacklevel=4)

    def _trace_once(self, structure, leaves, shapes, probe):
        made = variables_made_in_traces()
        concrete = self._trace_body(structure, leaves, shapes, probe)
        concrete.made_variables = variables_made_in_traces() != made
        if concrete.made_variables and self._made_variables:
            raise ValueError(
                f"tf.function only supports singleton tf.Variables created on the first call. "
                f"Make sure the tf.Variable is only created once or created outside tf.function. "
                f"('{self._name}' made a Variable when traced again: create it in __init__, or "
                f"guard it, as `if self.v is None: self.v = tf.Variable(...)`)")
        return concrete

    def _trace_body(self, structure, leaves, shapes, probe):
        tracer = Tracer(self._name)
        if context().trace is None:
            # the integer arguments a loop's TensorArray size is computed from (loop_sizing)
            tracer.pinned_inputs = set()
        traced_leaves = []
        argument_leaves = []  # what the call was, as a save records it: tensors as TensorSpecs
        k = 0
        for leaf in leaves:
            spec_name = None
            if leaf.__class__ is _Signed:
                leaf, spec_name = leaf.tensor, leaf.spec.name
            if isinstance(leaf, Variable):
                traced_leaves.append(leaf)
                argument_leaves.append(leaf)
            elif isinstance(leaf, (Tensor, TensorSpec)) or backend.is_array(leaf):
                example = _example(leaf, shapes[k], probe)
                traced_leaves.append(tracer.placeholder(example))
                if isinstance(leaf, TensorSpec):
                    spec_name = leaf.name
                argument_leaves.append(TensorSpec(shapes[k], example.dtype, spec_name))
                k += 1
            else:
                traced_leaves.append(leaf)
                argument_leaves.append(leaf)
        args, kwargs = nest.pack_sequence_as(structure, traced_leaves)
        full, kwargs = self._args(args, kwargs)
        before = snapshot(full, kwargs)
        # AutoGraph: the one place the function is swapped for its converted form (cached)
        traced_function = autograph_convert(self.python_function) if self._autograph \
            else self.python_function
        with tracing(tracer), autograph_converting(self._autograph):
            result = traced_function(*full, **kwargs)
            _assert_pinned(self._name, tracer,
                           [leaf for leaf in traced_leaves if leaf.__class__ is SymbolicTensor])
            if self._check_mutation:
                check_unmodified(before, full, kwargs, self.python_function)
            flat_out = nest.flatten(result, expand_composites=True)
            out_ids = []
            for r in flat_out:
                if r is None:
                    out_ids.append(None)
                elif isinstance(r, Tensor):
                    out_ids.append(tracer.value_of(r)[0])
                elif isinstance(r, (int, float, bool, np.ndarray, np.generic)):
                    out_ids.append(tracer.value_of(convert_to_tensor(r))[0])
                else:
                    raise TypeError(f"{self._name} returned {type(r).__name__}; a tf.function "
                                    "returns tensors, Python numbers or None")
        tracer.graph.outputs = out_ids
        concrete = ConcreteFunction(tracer.graph, result, self._name)
        pins = getattr(tracer, "pinned_inputs", None)
        if pins:
            positions = [k for k, vid in enumerate(tracer.graph.inputs) if vid in pins]
            inputs = [leaf for leaf in traced_leaves if leaf.__class__ is SymbolicTensor]
            concrete.pinned = (positions, _values_at(positions, [t._example for t in inputs]))
        concrete.structured_arguments = nest.pack_sequence_as(structure, argument_leaves)
        concrete.parameters = self._parameters()
        return concrete

    def _parameters(self):
        """The Python function's parameters (``self`` left out for a method), or None where
        Python cannot tell them (a builtin)."""
        try:
            params = list(inspect.signature(self.python_function).parameters.values())
        except (TypeError, ValueError):
            return None
        return params[1:] if self._instance is not None else params


_TUPLE = object()  # marks a tuple argument in an exact key
# A signature's effects-only code is compiled on its ``EFFECTS_AFTER + 1``-th such call: a short
# fit (most of a test suite's) never compiles it, a long one saves the results' work and the
# logs' packing on every step after (bench_housing.py's step: compiled in ~2.5 ms, saves ~7 us
# of a ~45 us step, so it pays from a few hundred steps on).
EFFECTS_AFTER = 128


def _exact_key(device, args):
    """``(key, flat tensors)`` for a call whose arguments are plain tensors or tuples of them
    (Keras's ``(x, y)`` batches): the device, the shapes and dtypes.  ``(None, None)`` for any
    other call."""
    key, flat = [device], []
    for a in args:
        if a.__class__ is Tensor:
            v = a._value
            key.append(v.shape)
            key.append(v.dtype)
            flat.append(a)
        elif a.__class__ is tuple:
            key.append(_TUPLE)
            key.append(len(a))
            for t in a:
                if t.__class__ is not Tensor:
                    return None, None
                v = t._value
                key.append(v.shape)
                key.append(v.dtype)
                flat.append(t)
        else:
            return None, None
    return tuple(key), flat


def _signed(name, i, spec, value):
    """``value`` matched against ``spec`` (a TensorSpec, or lists, tuples and dicts of them):
    each spec's value becomes a tensor of the spec's dtype (a Python list or numpy array
    included), wrapped with its spec."""
    if isinstance(spec, TensorSpec):
        if isinstance(value, TensorSpec):
            return value
        t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=spec.dtype)
        if not spec.is_compatible_with(t):
            raise ValueError(
                f"Python inputs incompatible with input_signature: argument {i} of {name} is "
                f"a {t.dtype.name} tensor of shape {tuple(t.shape)}, the signature says {spec}")
        return _Signed(t, spec)
    if isinstance(spec, dict) and isinstance(value, dict) and set(spec) == set(value):
        return {k: _signed(name, i, spec[k], value[k]) for k in spec}
    if isinstance(spec, (list, tuple)) and isinstance(value, (list, tuple)) and \
            len(spec) == len(value):
        return type(spec)(_signed(name, i, s, v) for s, v in zip(spec, value))
    raise ValueError(f"{name}: argument {i} does not match the input_signature {spec}")


class _Signed:
    """A tensor argument with the TensorSpec it matched."""

    __slots__ = ("tensor", "spec")

    def __init__(self, tensor, spec):
        self.tensor = tensor
        self.spec = spec


class _Undecided:
    """A relaxed signature traced at one shape: the first call with other free sizes traces
    again, for that call, and the two graphs decide whether one serves every size."""

    def __init__(self, first, structure, leaves, relaxed_shapes):
        self.first = first
        self.shapes = _concrete_shapes(leaves)
        # the call as specs (no data kept alive), for a save that must decide before a call does
        self._structure = structure
        self._specs = _as_specs(leaves, relaxed_shapes)

    def settle(self, function, key):
        """Decide now, by a probe trace (as a signature of TensorSpecs is decided): a save
        records either one relaxed graph or the first call's exact one."""
        try:
            probe = function._trace_once(self._structure, self._specs,
                                         [s.shape for s in self._specs
                                          if isinstance(s, TensorSpec)], probe=True)
        except Exception:  # noqa: BLE001 - the probe size broke it: the code depends on it
            probe = None
        if probe is not None and _same_graph(self.first.graph, probe.graph):
            self.first.relax_types(probe.graph)
            function._cache[key] = self.first
        else:
            per_shape = _PerShape()
            per_shape.add(self.first, None, self.shapes)
            function._cache[key] = per_shape
        return self.first

    def decide(self, function, key, structure, leaves, tensors):
        shapes = _concrete_shapes(leaves)
        if shapes == self.shapes:
            return self.first
        exact = [tuple(t._value.shape) for t in tensors]
        second = function._trace_once(structure, leaves, exact, probe=False)
        if _same_graph(self.first.graph, second.graph):
            self.first.relax_types(second.graph)
            function._cache[key] = self.first
            return self.first
        function._count_trace()  # the graph depends on the sizes: one trace per shape
        per_shape = _PerShape()
        per_shape.add(self.first, None, self.shapes)
        per_shape.add(second, leaves)
        function._cache[key] = per_shape
        return second


def _as_specs(leaves, shapes):
    """Tensors among ``leaves`` as TensorSpecs of ``shapes`` (in order); other leaves kept."""
    shapes = iter(shapes)
    out = []
    for leaf in leaves:
        if leaf.__class__ is _Signed:
            leaf = leaf.tensor
        if isinstance(leaf, (Tensor, TensorSpec)) or backend.is_array(leaf):
            dtype = leaf.dtype if isinstance(leaf, (Tensor, TensorSpec)) else \
                convert_to_tensor(leaf).dtype
            out.append(TensorSpec(next(shapes), dtype))
        else:
            out.append(leaf)
    return out


class _PerValue:
    """A signature whose graph holds the values of some integer arguments (the size a loop
    grows a TensorArray to, from ``for i in tf.range(n)``): one ConcreteFunction per value."""

    def __init__(self, first, leaves):
        self._positions = first.pinned[0]
        self._by_value = {(_concrete_shapes(leaves), first.pinned[1]): first}

    def concretes(self):
        return list(self._by_value.values())

    def get(self, function, structure, leaves, tensors):
        arrays = [t._value if isinstance(t, Tensor) else _example(t, None, False)
                  for t in tensors]  # (a TensorSpec: zeros, as it is traced with)
        values = (_concrete_shapes(leaves), _values_at(self._positions, arrays))
        concrete = self._by_value.get(values)
        if concrete is None:
            function._count_trace()
            exact = [tuple(a.shape) for a in arrays]
            concrete = function._trace_once(structure, leaves, exact, probe=False)
            if concrete.pinned is None or concrete.pinned[0] != self._positions:
                raise AssertionError("a retrace pinned other arguments")  # traces are pure
            self._by_value[values] = concrete
        return concrete


def _assert_pinned(name, tracer, placeholders):
    """First in the graph, wherever it runs (a ConcreteFunction called directly, a saved
    one): an assertion that each pinned input has the value it was traced for."""
    pins = getattr(tracer, "pinned_inputs", None)
    if not pins:
        return
    eqns = tracer.graph.eqns
    start = len(eqns)
    for k, placeholder in enumerate(placeholders):
        if placeholder._vid in pins:
            traced_for = placeholder._example
            assertion.assert_that(
                equal(placeholder, convert_to_tensor(traced_for)),
                [f"{name} was traced for input {k} == {backend.to_host(traced_for)} (a loop it "
                 "bounds sizes a TensorArray); it was called with", None,
                 ": call the tf.function, which traces once per value"], [placeholder])
    added = eqns[start:]
    del eqns[start:]
    eqns[0:0] = added  # (they read only inputs and constants)


def _values_at(positions, arrays):
    """The host values of ``arrays`` at ``positions`` (a pinned trace's key; a deliberate
    read of a few integer scalars)."""
    return tuple(backend.to_host(arrays[k]).tobytes() + str(arrays[k].dtype).encode()
                 for k in positions)


class _PerShape:
    """A relaxed signature whose graph depends on the sizes: one ConcreteFunction per shape."""

    def __init__(self):
        self._by_shape = {}

    def add(self, concrete, leaves, shapes=None):
        self._by_shape[_concrete_shapes(leaves) if shapes is None else shapes] = concrete

    def get(self, function, structure, leaves, shapes, tensors):
        key = _concrete_shapes(leaves)
        concrete = self._by_shape.get(key)
        if concrete is None:
            function._count_trace()
            exact = [tuple(t._value.shape) for t in tensors]
            concrete = function._trace_once(structure, leaves, exact, probe=False)
            self._by_shape[key] = concrete
        return concrete


def _concrete_shapes(leaves):
    out = []
    for leaf in leaves:
        if leaf.__class__ is _Signed:
            leaf = leaf.tensor
        if isinstance(leaf, Tensor):
            out.append(tuple(leaf._value.shape))
        elif backend.is_array(leaf):
            out.append(tuple(leaf.shape))
    return tuple(out)


def _example(leaf, shape, probe):
    """The array a placeholder is traced with: the argument's own data, or for a spec zeros.

    The probe trace of a relaxed signature gives each free (None) dimension one more row.
    """
    if isinstance(leaf, TensorSpec):
        dims = [1 if d is None else d for d in (leaf.shape or ())]
        if probe:
            dims = [2 if s is None else d for s, d in zip(leaf.shape or (), dims)]
        return backend.device_module().zeros(dims, numpy_dtype(leaf.dtype))
    value = (leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf))._value
    if leaf.__class__ is SymbolicTensor:  # called inside another trace: that trace's example
        value = leaf._example
    if not probe or shape is None:
        return value
    xp = backend.array_module(value)
    for axis, d in enumerate(shape):
        if d is None:
            first = xp.take(value, [0], axis=axis) if value.shape[axis] else \
                xp.zeros(value.shape[:axis] + (1,) + value.shape[axis + 1:], value.dtype)
            value = xp.concatenate([value, first], axis=axis)
    return value


def _same_graph(a, b):
    if len(a.eqns) != len(b.eqns) or a.outputs != b.outputs or a.inputs != b.inputs:
        return False
    if [id(v) for v in a.variables] != [id(v) for v in b.variables]:
        return False
    if a.consts.keys() != b.consts.keys():
        return False
    for k, v in a.consts.items():
        w = b.consts[k]
        if v.shape != w.shape or v.dtype != w.dtype:
            return False
        # A retrace's comparison, not a step: constants on a device are compared on the host.
        if not np.array_equal(backend.to_host(v), backend.to_host(w), equal_nan=True):
            return False
    for x, y in zip(a.eqns, b.eqns):
        if x.op is not y.op or x.inputs != y.inputs or x.outputs != y.outputs:
            return False
        if x.attrs.keys() != y.attrs.keys():
            return False
        for k in x.attrs:
            u, w = x.attrs[k], y.attrs[k]
            if isinstance(u, Graph) or isinstance(w, Graph):
                if not (isinstance(u, Graph) and isinstance(w, Graph) and _same_graph(u, w)):
                    return False
            elif not _equal_attr(u, w):
                return False
    return True


def _equal_attr(u, w):
    if isinstance(u, np.ndarray) or isinstance(w, np.ndarray):
        return (isinstance(u, np.ndarray) and isinstance(w, np.ndarray) and u.shape == w.shape
                and u.dtype == w.dtype and np.array_equal(u, w))
    if isinstance(u, (list, tuple)) and isinstance(w, (list, tuple)):
        return len(u) == len(w) and all(_equal_attr(p, q) for p, q in zip(u, w))
    try:
        return bool(u == w) and type(u) is type(w)
    except Exception:  # noqa: BLE001
        return False


class ConcreteFunction:
    """One traced graph of a function, for one input signature.

    ``graph`` is what was traced (print it for a jaxpr-like listing);
    ``optimized_graph`` what runs.  Called with no tape or trace around it,
    it runs the compiled graph; under a GradientTape (or another trace) it
    runs the same graph through ``apply``, so it is recorded (or inlined).
    """

    def __init__(self, graph, structured_outputs, name, optimized=False):
        """``optimized``: ``graph`` is already optimized (a loaded graph is compiled as saved,
        so that loading runs none of its equations, as constant folding would)."""
        self.graph = graph
        self.name = name
        self._outputs_template = structured_outputs
        self._n_outputs = len(nest.flatten(structured_outputs, expand_composites=True))
        self._n_inputs = len(graph.inputs)
        self._single_output = isinstance(structured_outputs, Tensor)
        # A plain dict of tensors (Keras's logs): its keys in flattening (sorted) order, and
        # in the dict's own order, so a call rebuilds it without walking the structure.
        self._flat_dict = None
        if structured_outputs.__class__ is dict and all(
                isinstance(v, Tensor) for v in structured_outputs.values()):
            self._flat_dict = (sorted(structured_outputs), list(structured_outputs))
        self.optimized_graph = graph if optimized else optimize(graph)
        # traced (or loaded) under the current device, whose array module its constants use
        self._xp = backend.device_module()
        self._effects_calls = 0
        self._compile()
        # set by the tf.function that traced it: the call's (args, kwargs), tensors as
        # TensorSpecs, and the Python function's parameters (a save records both)
        self.structured_arguments = None
        self.parameters = None
        # (input positions, their values) the graph was traced for, where it holds them
        self.pinned = None

    def _compile(self):
        self._run = compile_graph(self.optimized_graph, tensors=True, xp=self._xp, in_place=True)
        self._effects_run = None  # ``_run`` without the results (``effects_only``), made later

    def relax_types(self, other):
        """Mark dimensions that differ in ``other`` (the probe trace) as free (None)."""
        for graph in (self.graph, self.optimized_graph):
            for vid, (shape, dtype) in graph.types.items():
                alt = other.types.get(vid)
                if alt is not None and len(alt[0]) == len(shape):
                    graph.types[vid] = (tuple(None if a != b else a for a, b in zip(shape, alt[0])),
                                        dtype)
        # Kernels were specialized for the traced sizes (a matmul over an inner size of 1 is an
        # outer product): compiled again, those of a free size fall back to the general ones.
        self._compile()
        if self.structured_arguments is not None:
            inputs = iter(self.graph.inputs)
            self.structured_arguments = nest.map_structure(
                lambda leaf: TensorSpec(self.graph.types[next(inputs)][0], leaf.dtype, leaf.name)
                if isinstance(leaf, TensorSpec) else leaf, self.structured_arguments)

    @property
    def structured_input_signature(self):
        """``(args, kwargs)`` as the function was traced for, tensors as TensorSpecs and Python
        arguments as their values (TensorFlow's form)."""
        if self.structured_arguments is not None:
            args, kwargs = self.structured_arguments
            return tuple(args), dict(kwargs)
        return tuple(TensorSpec(self.graph.types[v][0], self.graph.types[v][1])
                     for v in self.graph.inputs), {}

    @property
    def structured_outputs(self):
        """The returned structure, each tensor as the TensorSpec of its value."""
        specs = [None if o is None else TensorSpec(*self.graph.types[o])
                 for o in self.graph.outputs]
        if self._single_output:
            return specs[0]
        return nest.pack_sequence_as(self._outputs_template, specs, expand_composites=True) \
            if self._n_outputs else self._outputs_template

    @property
    def output_shapes(self):
        return nest.map_structure(lambda s: None if s is None else s.shape,
                                  self.structured_outputs)

    @property
    def output_dtypes(self):
        return nest.map_structure(lambda s: None if s is None else s.dtype,
                                  self.structured_outputs)

    @property
    def variables(self):
        return tuple(self.graph.variables)

    @property
    def trainable_variables(self):
        return tuple(v for v in self.graph.variables if v.trainable)

    def __call__(self, *args, **kwargs):
        """Called with the arguments it was traced for (Python values equal to the traced
        ones), or with its flat tensors in order."""
        tensors = self._structured_tensors(args, kwargs)
        if tensors is None:
            tensors = [a if isinstance(a, Tensor) else convert_to_tensor(a)
                       for a in nest.flatten((args, kwargs)) if not isinstance(a, Variable)]
        self._check_bound(tensors)
        return self._call_flat(tensors)

    def _check_bound(self, tensors):
        """Each tensor of a direct call against the type it was traced for: the compiled kernels
        hold the traced sizes (a mean its count), so another size would run silently wrong."""
        if len(tensors) != len(self.graph.inputs):
            return  # _call_flat's message
        for k, (t, vid) in enumerate(zip(tensors, self.graph.inputs)):
            shape, dtype = self.graph.types[vid]
            got = tuple(t.shape)
            if t.dtype != dtype or len(got) != len(shape) or \
                    any(d is not None and d != g for d, g in zip(shape, got)):
                raise TypeError(
                    f"Binding inputs to tf.function `{self.name}` failed: can not cast "
                    f"{TensorSpec(got, t.dtype)} to {TensorSpec(shape, dtype)} (input {k}; a "
                    f"ConcreteFunction runs only for the types it was traced for: call the "
                    f"tf.function, which traces for new ones)")

    def _structured_tensors(self, args, kwargs):
        if self.structured_arguments is None:
            return None
        want_args, want_kwargs = self.structured_arguments
        want = (tuple(want_args), dict(want_kwargs))
        given = (tuple(args), dict(kwargs))
        if nest.structure_key(given) != nest.structure_key(want):
            return None
        tensors = []
        for w, g in zip(nest.flatten(want), nest.flatten(given)):
            if isinstance(w, TensorSpec):
                tensors.append(g if isinstance(g, Tensor) else convert_to_tensor(g, dtype=w.dtype))
            elif isinstance(w, Variable):
                continue  # captured by reference, not an input
            elif isinstance(g, Tensor) or not _equal_attr(w, g):
                raise TypeError(f"{self.name} was traced with the Python argument {w!r}; it "
                                f"was called with {g!r} (a ConcreteFunction is for the Python "
                                f"arguments it was traced with; call the tf.function instead)")
        return tensors

    def _call_flat(self, tensors):
        if context().active:
            # Under a tape (or inside another trace) the graph as traced runs op by op: its
            # constants are still the eager tensors they came from, none folded away.
            graph = self.graph
            if len(tensors) != len(graph.inputs):
                raise TypeError(f"{self.name} takes {len(graph.inputs)} tensors, got {len(tensors)}")
            outs = interpret(graph, [t if isinstance(t, Tensor) else convert_to_tensor(t)
                                     for t in tensors])
        else:
            if len(tensors) != self._n_inputs:
                raise TypeError(f"{self.name} takes {self._n_inputs} tensors, got {len(tensors)}")
            outs = self._run(*tensors)
        return self._pack(outs)

    def _pack(self, outs):
        template = self._outputs_template
        if self._single_output:
            return outs[0]
        if not self._n_outputs or template is None:
            return template
        if self._flat_dict is not None:
            flat_keys, keys = self._flat_dict
            by_key = dict(zip(flat_keys, outs))
            return {k: by_key[k] for k in keys}
        return nest.pack_sequence_as(template, list(outs), expand_composites=True)

    def effects_only(self):
        """``_run`` without computing the results: the Variables' assignments, random draws,
        prints and asserts run as in ``_run`` (the same equations in the same order), the
        equations that only feed the results are dead code.  None for the first
        ``EFFECTS_AFTER`` asks: its compilation pays only for a function called many times."""
        run = self._effects_run
        if run is None:
            self._effects_calls += 1
            if self._effects_calls <= EFFECTS_AFTER:
                return None
            graph = copy.copy(self.optimized_graph)
            graph.outputs = []
            run = self._effects_run = compile_graph(optimize(graph), tensors=True, xp=self._xp,
                                                    in_place=True)
        return run

    def pretty_printed_graph(self):
        return str(self.graph)

    def __repr__(self):
        return f"<ConcreteFunction {self.name} ({len(self.optimized_graph.eqns)} equations)>"
