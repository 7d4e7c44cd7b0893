"""``tf.saved_model.save`` / ``tf.saved_model.load``: a Module's traced functions and variables.

``save(obj, path)`` writes every ``tf.function`` attribute of ``obj`` (one
with an ``input_signature``, traced now; one without, each signature it has
already been traced for), plain ConcreteFunction attributes, the
``signatures`` asked for, and the Variables: the Module's own (in
``obj.variables`` order) and any other Variable a graph captured.  The files
are the saved format of ``saving/format.py``.

``load(path)`` rebuilds nothing from code: it returns an object whose
attributes replay the saved graphs (compiled; under a GradientTape through
``tracing.compiler.interpret``, so differentiable to any order) over new
Variables holding the saved values.  With
``SaveOptions(experimental_custom_gradients=True)`` (the default, as in
TensorFlow) each custom-gradient equation keeps its traced gradient graph, so a
reloaded gradient is the custom one; with False it is saved without, and in
a fresh process differentiating through it raises TensorFlow's ``LookupError:
No gradient defined for operation 'IdentityN' (op type: IdentityN)`` (in the
process that saved it the gradient is still known, as TensorFlow's registry
still holds it there).
"""
import inspect
import keyword
import warnings

import numpy as np

from ..core import nest
from ..core.tensor import Tensor, Variable, convert_to_tensor
from ..tracing.function import ConcreteFunction, Function, TensorSpec, _PerShape
from . import format as fmt
from .format import LoadError, SaveError

__all__ = ["save", "load", "SaveOptions", "LoadOptions", "LoadError", "SaveError"]


class SaveOptions:
    """Options for ``save``; TensorFlow's names.  Only ``experimental_custom_gradients`` acts."""

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False,
                 experimental_skip_saver=False, experimental_sharding_callback=None):
        self.experimental_custom_gradients = bool(experimental_custom_gradients)
        self.namespace_whitelist = namespace_whitelist
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases


class LoadOptions:
    """Options for ``load``; accepted for TensorFlow compatibility, none changes anything."""

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, experimental_variable_policy=None,
                 experimental_load_function_aliases=False):
        pass


# --- saving ------------------------------------------------------------------------------------
class _VariableTable:
    """The save's variables: each once, by identity, in the order first met."""

    def __init__(self, arrays):
        self._arrays = arrays
        self._index = {}
        self.entries = []

    def __call__(self, variable):
        i = self._index.get(id(variable))
        if i is None:
            i = self._index[id(variable)] = len(self.entries)
            value = np.asarray(variable.numpy())
            self.entries.append({"name": variable.path, "trainable": bool(variable.trainable),
                                 "shape": list(value.shape), "dtype": value.dtype.name,
                                 "value": {"$array": self._arrays.add(value)}})
        return i


def _encode_structure(structure, where):
    """A function's argument or result structure: lists, tuples, dicts; leaves are tensors."""
    if isinstance(structure, TensorSpec):
        shape = None if structure.shape is None else list(structure.shape)
        return {"$spec": [shape, structure.dtype.name]}
    if isinstance(structure, dict):
        if not all(isinstance(k, str) for k in structure):
            raise SaveError(f"{where}: dicts with non-string keys cannot be saved")
        return {"$dict": [[k, _encode_structure(structure[k], where)] for k in structure]}
    if isinstance(structure, (list, tuple)):
        items = [_encode_structure(x, where) for x in structure]
        return items if isinstance(structure, list) else {"$tuple": items}
    return {"$leaf": None}


def encode_concrete(concrete, arrays, variables, *, custom_gradients, where, signature=None):
    """The document entry of one ConcreteFunction."""
    graph = concrete.optimized_graph
    # what a call may pass: the input_signature's specs (TensorSpec(None) takes any shape,
    # as the tf.function did), else the traced types (with their None dimensions)
    if signature is not None:
        specs = []
        for s, vid in zip(nest.flatten(signature), graph.inputs):
            traced = graph.types[vid][0]
            if s.shape is not None and any(a is None and b is not None
                                           for a, b in zip(s.shape, traced)):
                # the graph was traced for one size (its ops depend on it): it takes that size
                warnings.warn(f"{where}: the traced graph depends on the size of an argument "
                              f"the signature leaves free ({s}); it is saved for the traced "
                              f"shape {traced}", stacklevel=3)
                s = TensorSpec(traced, s.dtype)
            specs.append([None if s.shape is None else
                          [None if d is None else int(d) for d in s.shape], s.dtype.name])
    else:
        specs = [[[None if d is None else int(d) for d in graph.types[v][0]],
                  graph.types[v][1].name] for v in graph.inputs]
    return {
        "graph": fmt.encode_graph(graph, arrays, variables, custom_gradients=custom_gradients,
                                  where=where),
        "input_specs": specs,
        "input_signature": None if signature is None else _encode_structure(signature, where),
        "outputs": _encode_structure(concrete._outputs_template, where),
    }


def _concretes_of(value):
    """The ConcreteFunctions an attribute holds: [] for anything but a function."""
    if isinstance(value, ConcreteFunction):
        return [(value, None)]
    if isinstance(value, Function):
        if value.input_signature is not None:
            return [(value.get_concrete_function(), value.input_signature)]
        found = []
        for entry in value._cache.values():
            if isinstance(entry, _PerShape):
                found.extend((c, None) for c in entry._by_shape.values())
            else:
                found.append((entry, None))
        return found
    return []


def function_attributes(obj, prefix="", seen=None):
    """``{attribute path: [(ConcreteFunction, input_signature or None), ...]}`` of ``obj`` and
    of the Modules in its attributes (``"child.f"`` for ``obj.child.f``, each Module once)."""
    from ..module import Module
    seen = {id(obj)} if seen is None else seen
    out = {}
    state = getattr(obj, "__dict__", {})
    for name in sorted(state):
        child = state[name]
        if isinstance(child, Module) and id(child) not in seen and name.isidentifier() \
                and not name.startswith("_"):
            seen.add(id(child))
            out.update(function_attributes(child, f"{prefix}{name}.", seen))
    out.update(_own_functions(obj, prefix))
    return out


def _own_functions(obj, prefix):
    out = {}
    names = set(dir(type(obj))) | set(getattr(obj, "__dict__", {}))
    for name in sorted(names):
        if name.startswith("__") and name != "__call__":
            continue
        try:
            static = inspect.getattr_static(obj, name)
        except AttributeError:
            continue
        if not isinstance(static, (Function, ConcreteFunction)):
            continue
        concretes = _concretes_of(getattr(obj, name))
        if concretes:
            out[prefix + name] = concretes
    return out


def tracked_variables(obj):
    variables = getattr(obj, "variables", ())
    if callable(variables):
        variables = variables()
    return [v for v in variables if isinstance(v, Variable)]


def save(obj, export_dir, signatures=None, options=None):
    """Save ``obj``'s ``tf.function``s and Variables to the directory ``export_dir``."""
    options = options or SaveOptions()
    custom = options.experimental_custom_gradients
    arrays = fmt.ArrayWriter()
    table = _VariableTable(arrays)
    for v in tracked_variables(obj):
        table(v)
    n_tracked = len(table.entries)
    functions = {}
    for name, concretes in function_attributes(obj).items():
        functions[name] = [encode_concrete(c, arrays, table, custom_gradients=custom,
                                           where=f"function '{name}'", signature=sig)
                           for c, sig in concretes]
    encoded_signatures = {}
    if signatures is not None:
        if not isinstance(signatures, dict):
            signatures = {"serving_default": signatures}
        for name, fn in signatures.items():
            concretes = _concretes_of(fn)
            if len(concretes) != 1:
                raise SaveError(f"signature '{name}' must be a ConcreteFunction or a tf.function "
                                f"with an input_signature")
            c, sig = concretes[0]
            encoded_signatures[name] = encode_concrete(c, arrays, table, custom_gradients=custom,
                                                       where=f"signature '{name}'", signature=sig)
    document = {"kind": "saved_model", "variables": table.entries, "tracked_variables": n_tracked,
                "functions": functions, "signatures": encoded_signatures}
    fmt.write(export_dir, document, arrays)


# --- loading -----------------------------------------------------------------------------------
def load_variables(document, arrays, where):
    entries = document.get("variables")
    if not isinstance(entries, list) or len(entries) > fmt.LIMITS["arrays"]:
        raise LoadError(f"{where}: the variable table is not a list")
    out = []
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and set(e) == {"name", "trainable", "shape", "dtype",
                                                     "value"}):
            raise LoadError(f"{where}: variable {i} is not {{name, trainable, shape, dtype, "
                            f"value}}")
        name = fmt.check_name(e["name"], f"{where}: variable {i}'s name")
        shape = fmt._shape(e["shape"], where, f"variable '{name}'")
        if None in shape:
            raise LoadError(f"{where}: variable '{name}' has an unknown dimension")
        dtype = fmt._dtype(e["dtype"], where)
        ref = e["value"]
        if not (isinstance(ref, dict) and set(ref) == {"$array"}):
            raise LoadError(f"{where}: variable '{name}' has no array reference")
        value = arrays.get(ref["$array"], f"variable '{name}'", expect=(shape, dtype))
        if value.shape != shape or value.dtype != dtype:
            raise LoadError(f"{where}: variable '{name}' is {value.dtype.name}{list(value.shape)} "
                            f"in the arrays but {dtype.name}{list(shape)} in the document")
        if type(e["trainable"]) is not bool:
            raise LoadError(f"{where}: variable '{name}': trainable is not a bool")
        out.append(Variable(value, trainable=e["trainable"], name=name))
    return out


class _Leaf:
    """A placeholder leaf of a loaded output structure."""

    __slots__ = ()


def _decode_structure(value, where, depth=0):
    if depth > fmt.LIMITS["attr_depth"]:
        raise LoadError(f"{where}: a structure nested too deeply")
    if isinstance(value, list):
        return [_decode_structure(v, where, depth + 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$leaf" and body is None:
            return _Leaf()
        if tag == "$spec" and isinstance(body, list) and len(body) == 2:
            shape = None if body[0] is None else fmt._shape(body[0], where, "a TensorSpec")
            return TensorSpec(shape, fmt._dtype(body[1], where).name)
        if tag == "$tuple" and isinstance(body, list):
            return tuple(_decode_structure(v, where, depth + 1) for v in body)
        if tag == "$dict" and isinstance(body, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in body):
            return {k: _decode_structure(v, where, depth + 1) for k, v in body}
    raise LoadError(f"{where}: {fmt._short(value)} is not a saved function structure")


class LoadedConcreteFunction(ConcreteFunction):
    """A ConcreteFunction rebuilt from a save: it checks its arguments against the saved types."""

    def __init__(self, graph, outputs, name, input_specs, input_signature):
        # The saved graph was optimized before it was saved: it is compiled as it is, so that
        # loading runs no op (constant folding would run a file's equations at load time).
        super().__init__(graph, outputs, name, optimized=True)
        self.input_specs = input_specs
        self.input_signature = input_signature

    def accepts(self, tensors):
        return len(tensors) == len(self.input_specs) and all(
            s.is_compatible_with(t) for s, t in zip(self.input_specs, tensors))

    @property
    def structured_input_signature(self):
        return list(self.input_specs)


def decode_concrete(entry, arrays, variables, name, where):
    if not (isinstance(entry, dict) and set(entry) == {"graph", "input_specs", "input_signature",
                                                       "outputs"}):
        raise LoadError(f"{where}: a function entry is not {{graph, input_specs, "
                        f"input_signature, outputs}}")
    graph = fmt.decode_graph(entry["graph"], arrays, variables, where=where)
    specs = entry["input_specs"]
    if not isinstance(specs, list) or len(specs) != len(graph.inputs):
        raise LoadError(f"{where}: input_specs do not match the graph's {len(graph.inputs)} inputs")
    input_specs = []
    for vid, spec in zip(graph.inputs, specs):
        if not (isinstance(spec, list) and len(spec) == 2):
            raise LoadError(f"{where}: an input spec is not [shape, dtype]")
        shape = None if spec[0] is None else fmt._shape(spec[0], where, "an input")
        dtype = fmt._dtype(spec[1], where)
        traced_shape, traced_dtype = graph.types[vid]
        if dtype != traced_dtype or (shape is not None and (
                len(shape) != len(traced_shape) or
                any(a is not None and b is not None and a != b
                    for a, b in zip(shape, traced_shape)))):
            raise LoadError(f"{where}: an input spec does not match the graph's type of value "
                            f"{vid}")
        input_specs.append(TensorSpec(shape, dtype.name))
    signature = None
    if entry["input_signature"] is not None:
        signature = _decode_structure(entry["input_signature"], where)
        if len(nest.flatten(signature)) != len(input_specs):
            raise LoadError(f"{where}: the input signature does not match the graph's inputs")
    outputs = _decode_structure(entry["outputs"], where)
    if len(nest.flatten(outputs)) != len(graph.outputs):
        raise LoadError(f"{where}: the output structure does not match the graph's "
                        f"{len(graph.outputs)} outputs")
    return LoadedConcreteFunction(graph, outputs, name, input_specs, signature)


class LoadedFunction:
    """A saved ``tf.function``: calls run the first saved graph whose signature fits."""

    def __init__(self, name, concretes):
        self.__name__ = self.name = name
        self.concrete_functions = list(concretes)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self.name} (loaded) takes its tensors as positional arguments")
        for concrete in self.concrete_functions:
            flat = _flatten_args(args, concrete)
            if flat is None:
                continue
            converted = [_as_tensor(a, s) for a, s in zip(flat, concrete.input_specs)]
            if all(t is not None for t in converted) and concrete.accepts(converted):
                return concrete._call_flat(converted)
        got = ", ".join(f"{t.dtype.name}{list(t.shape)}" if isinstance(t, Tensor) else
                        type(t).__name__ for t in args)
        expected = "; ".join("(" + ", ".join(repr(s) for s in c.input_specs) + ")"
                             for c in self.concrete_functions)
        raise ValueError(f"{self.name} (loaded) was saved for arguments {expected}; "
                         f"it was called with ({got})")

    def get_concrete_function(self, *args):
        return self.concrete_functions[0]

    def __repr__(self):
        return f"<loaded tf.function {self.name} ({len(self.concrete_functions)} signature(s))>"


def _flatten_args(args, concrete):
    """The call's tensors in the saved order: up to the input_signature's structure if there
    was one (a nested list argument is then one tensor), else one tensor per argument."""
    if concrete.input_signature is None:
        return list(args) if len(args) == len(concrete.input_specs) else None
    out = []

    def walk(spec, value):
        if isinstance(spec, dict):
            if not isinstance(value, dict) or sorted(value) != sorted(spec):
                raise ValueError
            for k in sorted(spec):
                walk(spec[k], value[k])
        elif isinstance(spec, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(spec):
                raise ValueError
            for s, v in zip(spec, value):
                walk(s, v)
        else:
            out.append(value)
    try:
        walk(list(concrete.input_signature), list(args))
    except ValueError:
        return None
    return out


def _as_tensor(arg, spec):
    """A tensor for ``arg``; a Python number or array takes the saved dtype, as a signature
    converts it; None if it cannot be a tensor."""
    if isinstance(arg, Tensor):
        return arg
    try:
        return convert_to_tensor(arg, dtype=spec.dtype)  # host data to the current device
    except (TypeError, ValueError):
        return None


def load_functions(section, arrays, variables, where):
    if not isinstance(section, dict):
        raise LoadError(f"{where}: the functions are not an object")
    out = {}
    if len(section) > fmt.LIMITS["arrays"]:
        raise LoadError(f"{where}: too many functions")
    for name, entries in section.items():
        parts = name.split(".") if isinstance(name, str) and len(name) <= 512 else [None]
        if not all(isinstance(p, str) and p.isidentifier() and not keyword.iskeyword(p)
                   and (not p.startswith("__") or p == "__call__") for p in parts) \
                or "__call__" in parts[:-1] or len(parts) > fmt.LIMITS["graph_depth"]:
            raise LoadError(f"{where}: {fmt._short(name)} is not a valid function name")
        if not isinstance(entries, list) or not entries:
            raise LoadError(f"{where}: function '{name}' has no saved graph")
        out[name] = LoadedFunction(name, [
            decode_concrete(e, arrays, variables, name, f"{where}: function '{name}'")
            for e in entries])
    return out


class _LoadedChild:
    """A saved sub-module: its functions as attributes."""

    def __call__(self, *args, **kwargs):
        fn = vars(self).get("__call__")
        if fn is None:
            raise TypeError("the saved sub-module had no __call__ tf.function")
        return fn(*args, **kwargs)


class _LoadedObject:
    """What ``load`` returns: the saved functions as attributes, and the variables."""

    def __init__(self, functions, signatures, variables, n_tracked):
        for path, fn in functions.items():
            *parents, name = path.split(".")
            target = self
            for p in parents:  # a sub-module's function: obj.child.f
                if not isinstance(vars(target).get(p), _LoadedChild):
                    setattr(target, p, _LoadedChild())
                target = vars(target)[p]
            setattr(target, name, fn)
        self.signatures = signatures
        self._all_variables = list(variables)
        self.variables = list(variables[:n_tracked])
        self.trainable_variables = [v for v in self.variables if v.trainable]
        self.non_trainable_variables = [v for v in self.variables if not v.trainable]

    def __call__(self, *args, **kwargs):
        fn = vars(self).get("__call__")
        if fn is None:
            raise TypeError("the saved object had no __call__ tf.function")
        return fn(*args, **kwargs)

    def __repr__(self):
        names = sorted(k for k, v in vars(self).items() if isinstance(v, LoadedFunction))
        return f"<loaded SavedModel: {', '.join(names)}; {len(self.variables)} variables>"


def read_contents(document, arrays, where, kind, other_loader, min_tracked=0):
    """The variables, the count of them the object tracks, and the functions of a save of
    ``kind`` (a save of another kind names ``other_loader``, the function that loads it)."""
    if document.get("kind") != kind:
        raise LoadError(f"{where} is a tapeflow save of kind {fmt._short(document.get('kind'))}, "
                        f"not a {_KIND_NAMES[kind]} (load it with {other_loader})")
    variables = load_variables(document, arrays, where)
    n_tracked = document.get("tracked_variables")
    if type(n_tracked) is not int or not min_tracked <= n_tracked <= len(variables):
        raise LoadError(f"{where}: tracked_variables is not a count of the variables")
    return variables, n_tracked, load_functions(document.get("functions"), arrays, variables, where)


_KIND_NAMES = {"saved_model": "SavedModel", "keras_model": "Keras model"}


def load(export_dir, tags=None, options=None):
    """The object saved at ``export_dir``: its functions and variables, nothing else."""
    document, arrays = fmt.read(export_dir)
    where = str(export_dir)
    try:
        variables, n_tracked, functions = read_contents(
            document, arrays, where, "saved_model", "tf.keras.models.load_model")
        signatures_doc = document.get("signatures")
        if not isinstance(signatures_doc, dict):
            raise LoadError(f"{where}: the signatures are not an object")
        signatures = {}
        for name, entry in signatures_doc.items():
            fmt.check_name(name, f"{where}: signature")
            signatures[name] = LoadedFunction(
                name, [decode_concrete(entry, arrays, variables, name,
                                       f"{where}: signature '{name}'")])
    finally:
        arrays.close()
    return _LoadedObject(functions, signatures, variables, n_tracked)
