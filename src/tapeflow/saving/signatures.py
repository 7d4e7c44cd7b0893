"""SavedModel signatures, as TensorFlow serves them: keyword arguments in, a dict out.

A signature is one graph called by name: ``loaded.signatures["serving_default"](x=...)``
takes its tensors as keyword arguments only (named after the function's
parameters, or the TensorSpecs' ``name``; ``x_0``, ``x_1``... for the leaves of a
nested argument) and returns ``{"output_0": ...}`` (or the keys of a dict the
function returned).  ``save`` with no ``signatures`` makes ``serving_default`` from
the root's one tf.function with an ``input_signature``, as TensorFlow does.
In the save, a signature names a function's graph and the names of its
inputs and outputs, in the graph's order.
"""
import inspect

from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..tracing.function import ConcreteFunction, Function, TensorSpec
from . import format as fmt
from .format import LoadError, SaveError
from .loaded_function import LoadedFunction, SavedOutput

__all__ = ["DEFAULT_SIGNATURE", "signature_concretes", "describe_signature", "LoadedSignature",
           "decode_signature"]

DEFAULT_SIGNATURE = "serving_default"


# --- saving ------------------------------------------------------------------------------------
def signature_concretes(root, signatures, root_functions):
    """``{name: ConcreteFunction}`` for ``save``'s ``signatures`` argument; with None, the
    root's one function with an input_signature (``root_functions``: its function
    attributes, ``(name, function)``) as ``serving_default`` (its ``_default_save_signature``
    if it has one), or nothing where there is none or several."""
    if signatures is None:
        found = []
        for name, fn in root_functions:
            if name == "_default_save_signature":  # TensorFlow's name for the one to use
                return {DEFAULT_SIGNATURE: _signature_concrete(fn)}
            concrete = _signature_concrete(fn)
            if concrete is not None and _try_describe(concrete):
                found.append(concrete)
        return {DEFAULT_SIGNATURE: found[0]} if len(found) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SIGNATURE: signatures}
    out = {}
    for name, fn in signatures.items():
        if not isinstance(name, str) or not name:
            raise SaveError(f"signature names are non-empty strings, got {name!r}")
        concrete = _signature_concrete(fn)
        if concrete is None:
            raise SaveError(f"signature '{name}': Expected a TensorFlow function for which to "
                            f"generate a signature (a ConcreteFunction, or a tf.function with an "
                            f"input_signature); got {fmt._short(fn)}")
        out[name] = concrete
    return out


def _signature_concrete(fn):
    if isinstance(fn, Function) and fn.input_signature is not None:
        return fn.get_concrete_function()
    if isinstance(fn, ConcreteFunction):
        return fn
    if isinstance(fn, LoadedSignature):  # a loaded model's signatures, saved again
        return fn._concrete
    if isinstance(fn, LoadedFunction) and len(fn.concrete_functions) == 1 and \
            fn.concrete_functions[0].input_signature is not None:
        return fn.concrete_functions[0]
    return None


def _try_describe(concrete):
    try:
        describe_signature(concrete, "serving_default")
    except SaveError:
        return False
    return True


def describe_signature(concrete, name):
    """``(input names, output names)``, each in the graph's order; SaveError for a function
    that cannot be a signature (a Python argument, an output that is not a tensor)."""
    where = f"signature '{name}'"
    n_inputs = len(concrete.graph.inputs)
    if concrete.structured_arguments is None:
        inputs = [f"input_{k}" for k in range(n_inputs)]
    else:
        inputs = _input_names(concrete, where)
    # TensorFlow's signatures return one flat dict: a tensor, a flat list or tuple of them
    # (output_0, ...), or a flat dict of them (its keys)
    template = concrete._outputs_template
    if isinstance(template, Tensor):
        template = [template]
    items = list(template.values()) if isinstance(template, dict) else \
        list(template) if isinstance(template, (list, tuple)) else [template]
    bad = [x for x in items if not isinstance(x, (Tensor, SavedOutput))]  # (a loaded one's)
    if None in concrete.graph.outputs:
        bad.append(None)
    if bad or not items:
        raise SaveError(f"{where}: got a non-Tensor value {fmt._short(bad[0] if bad else None)} "
                        f"in the function's outputs; a signature returns a tensor, or a flat "
                        f"list, tuple or dict of tensors")
    if isinstance(template, dict):
        return inputs, sorted(template)  # nest.flatten's order
    return inputs, [f"output_{i}" for i in range(len(items))]


def _input_names(concrete, where):
    args, kwargs = concrete.structured_arguments
    positions = {id(leaf): k for k, leaf in enumerate(
        x for x in nest.flatten((args, kwargs)) if isinstance(x, TensorSpec))}
    if concrete.parameters is None:
        bound = {"args": args, **kwargs}
    else:
        bound = inspect.Signature(concrete.parameters).bind(*args, **kwargs).arguments
    names = [None] * len(positions)
    used = set()
    for param, value in bound.items():
        leaves = nest.flatten(value)
        if any(not isinstance(x, TensorSpec) and x is not None for x in leaves) and \
                any(isinstance(x, TensorSpec) for x in leaves):
            raise SaveError(f"{where}: argument '{param}' mixes tensors and Python values")
        specs = [x for x in leaves if isinstance(x, TensorSpec)]
        single = isinstance(value, TensorSpec)
        for i, spec in enumerate(specs):
            name = spec.name or (param if single else f"{param}_{i}")
            base, n = name, 1
            while name in used:
                name, n = f"{base}_{n}", n + 1
            used.add(name)
            names[positions[id(spec)]] = name
    return names


# --- loading -----------------------------------------------------------------------------------
class LoadedSignature:
    """A signature of a loaded SavedModel: keyword arguments only, a dict of tensors out."""

    def __init__(self, name, concrete, inputs, outputs):
        self.name = name
        self._concrete = concrete
        self._inputs = list(inputs)
        self._outputs = list(outputs)
        self._specs = dict(zip(self._inputs, concrete.input_specs))

    @property
    def structured_input_signature(self):
        return (), dict(self._specs)

    @property
    def structured_outputs(self):
        graph = self._concrete.graph
        return {name: TensorSpec(*graph.types[vid]) for name, vid in zip(self._outputs,
                                                                          graph.outputs)}

    @property
    def graph(self):
        return self._concrete.graph

    def __call__(self, *args, **kwargs):
        if args:
            raise TypeError(f"signature '{self.name}' takes keyword arguments only "
                            f"({', '.join(self._inputs)}); it was given {len(args)} "
                            f"positional argument(s)")
        if set(kwargs) != set(self._inputs):
            missing = [k for k in self._inputs if k not in kwargs]
            extra = sorted(set(kwargs) - set(self._inputs))
            raise TypeError(f"signature '{self.name}' takes the keyword arguments "
                            f"{', '.join(self._inputs)}; missing {missing}, unexpected {extra}")
        tensors = []
        for name in self._inputs:
            spec, value = self._specs[name], kwargs[name]
            tensor = value if isinstance(value, Tensor) else convert_to_tensor(value,
                                                                                dtype=spec.dtype)
            if not spec.is_compatible_with(tensor):
                raise ValueError(f"signature '{self.name}': argument '{name}' is a "
                                 f"{tensor.dtype.name} tensor of shape {tuple(tensor.shape)}; "
                                 f"the signature takes {spec}")
            tensors.append(tensor)
        flat = nest.flatten(self._concrete._call_flat(tensors))
        return dict(zip(self._outputs, flat))

    def __repr__(self):
        return f"<signature {self.name}({', '.join(self._inputs)}) -> {self._outputs}>"


def decode_signature(name, entry, functions, where):
    """The LoadedSignature of a save's entry ``{function, concrete, inputs, outputs}``."""
    fmt.check_name(name, f"{where}: signature")
    what = f"{where}: signature '{name}'"
    if not (isinstance(entry, dict) and set(entry) == {"function", "concrete", "inputs",
                                                       "outputs"}):
        raise LoadError(f"{what} is not {{function, concrete, inputs, outputs}}")
    fn = functions.get(entry["function"]) if isinstance(entry["function"], str) else None
    index = entry["concrete"]
    if fn is None or type(index) is not int or not 0 <= index < len(fn.concrete_functions):
        raise LoadError(f"{what} names no saved graph")
    concrete = fn.concrete_functions[index]
    # inputs are keyword names, so identifiers; outputs are a dict's keys, any short strings
    for key, count, valid in (("inputs", len(concrete.graph.inputs), str.isidentifier),
                              ("outputs", len(concrete.graph.outputs), _short_string)):
        names = entry[key]
        if not (isinstance(names, list) and len(names) == count and len(set(names)) == count
                and all(isinstance(n, str) and valid(n) for n in names)):
            raise LoadError(f"{what}: its {key} are not {count} distinct names")
    return LoadedSignature(name, concrete, entry["inputs"], entry["outputs"])


def _short_string(name):
    return 0 < len(name) <= fmt.LIMITS["name_chars"]
