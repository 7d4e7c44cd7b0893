"""``tf.saved_model.save`` / ``tf.saved_model.load``: an object graph, its traced functions and
its variables.

``save(obj, path)`` writes ``obj``'s object graph (``object_graph.py``: its
Variables, sub-Modules, Keras layers and models, lists, tuples and dicts, and
``tf.function``s), every graph of each tf.function (one with an
``input_signature``, traced now; one without, each call it has been traced
for, with that call's Python arguments: ``arguments.py``), the ``signatures``
asked for (or ``serving_default`` for a root's one input_signature function:
``signatures.py``), and the Variables: the object's own (in ``obj.variables``
order) and any other Variable a graph captured.  The files are the saved format
of ``saving/format.py``; the document says its layout's version
(``SAVED_MODEL_VERSION``), and a save of version 1 (functions by attribute
path, no object graph) still loads.

``load(path)`` rebuilds nothing from code: it returns an object (``LoadedObject``)
with the saved attributes, whose functions replay the saved graphs (compiled; under a GradientTape through
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
import warnings

import numpy as np

from ..core import nest
from ..core.tensor import Variable
from ..tracing.function import TensorSpec
from . import format as fmt
from .damaged import reading
from .arguments import encode_arguments, encode_parameters
from .format import LoadError, SaveError
from .loaded_function import (  # noqa: F401 - LoadedFunction, decode_concrete: Lambda layers
    LoadedFunction, decode_concrete, load_functions, valid_function_name,
)
from .object_graph import (
    LoadedObject, ObjectGraphWriter, build_objects, concretes_of, tracked_variables,
)
from .signatures import decode_signature, describe_signature, signature_concretes

__all__ = ["save", "load", "SaveOptions", "LoadOptions", "LoadError", "SaveError"]

# The layout of a SavedModel's document (the graph encoding is format.FORMAT_VERSION's):
# 1 saved the functions by attribute path and positional signatures; 2 adds the object graph,
# each graph's call arguments and keyword signatures.  Both load.
SAVED_MODEL_VERSION = 2


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


class _FunctionTable:
    """The save's functions, each once (by identity): ``{id: [graph entry, ...]}``.  The id
    is the function's first attribute path where that is a dotted name (``inner.double``),
    else ``function_<n>``."""

    def __init__(self, arrays, variables, custom_gradients):
        self._arrays = arrays
        self._variables = variables
        self._custom = custom_gradients
        self.entries = {}
        self._ids = {}          # id(Function or ConcreteFunction) -> function id
        self._where = {}        # id(ConcreteFunction) -> (function id, index)
        self._held = []

    def add(self, fn, path):
        known = self._ids.get(id(fn))
        if known is not None:
            return known
        concretes = concretes_of(fn)
        if not concretes:
            return None
        fid = path if path and valid_function_name(path) and path not in self.entries \
            else f"function_{len(self.entries)}"
        while fid in self.entries:
            fid += "_"
        self._ids[id(fn)] = fid
        self._held.append(fn)
        self.entries[fid] = []
        for index, (concrete, signature) in enumerate(concretes):
            where = f"function '{path or fid}'"
            entry = encode_concrete(concrete, self._arrays, self._variables,
                                    custom_gradients=self._custom, where=where,
                                    signature=signature)
            arguments = concrete.structured_arguments
            if arguments is None:  # a graph no tf.function traced: its tensors positionally
                arguments = concrete.structured_input_signature
            entry["arguments"] = encode_arguments(arguments, self._variables, where)
            entry["parameters"] = encode_parameters(concrete.parameters)
            self.entries[fid].append(entry)
            self._where.setdefault(id(concrete), (fid, index))
        return fid

    def locate(self, concrete):
        """``(function id, index)`` of a ConcreteFunction, saved now if it was not yet."""
        if id(concrete) not in self._where:
            self.add(concrete, None)
        return self._where[id(concrete)]


def save(obj, export_dir, signatures=None, options=None):
    """Save ``obj``'s object graph (its Variables, sub-Modules, layers, containers and
    ``tf.function``s) and its ``signatures`` to the directory ``export_dir``."""
    options = options or SaveOptions()
    if "signatures" in getattr(obj, "__dict__", {}) and not isinstance(obj, LoadedObject):
        raise SaveError("the object to save has an attribute named 'signatures', the name a "
                        "loaded SavedModel gives its signatures; rename it (del obj.signatures)")
    arrays = fmt.ArrayWriter()
    table = _VariableTable(arrays)
    for v in tracked_variables(obj):
        table(v)
    n_tracked = len(table.entries)
    functions = _FunctionTable(arrays, table, options.experimental_custom_gradients)
    writer = ObjectGraphWriter(table, functions.add)
    nodes = writer.add_root(obj)
    if writer.untraced:
        warnings.warn(f"Found untraced functions such as {', '.join(writer.untraced[:5])} while "
                      f"saving (showing {min(5, len(writer.untraced))} of "
                      f"{len(writer.untraced)}). These functions will not be directly callable "
                      f"after loading.", stacklevel=2)
    root_functions = [(name, writer.held(ref)) for name, ref in nodes[0]["children"]
                      if nodes[ref]["kind"] in ("function", "concrete_function")]
    encoded_signatures = {}
    for name, concrete in signature_concretes(obj, signatures, root_functions).items():
        inputs, outputs = describe_signature(concrete, name)
        fid, index = functions.locate(concrete)
        encoded_signatures[name] = {"function": fid, "concrete": index, "inputs": inputs,
                                    "outputs": outputs}
    document = {"kind": "saved_model", "saved_model_version": SAVED_MODEL_VERSION,
                "variables": table.entries, "tracked_variables": n_tracked,
                "functions": functions.entries, "objects": nodes,
                "signatures": encoded_signatures}
    fmt.write(export_dir, document, arrays)


# --- loading -----------------------------------------------------------------------------------
def load_variables(document, arrays, where):
    return [Variable(stored.read(), trainable=trainable, name=name)
            for name, trainable, stored in stored_variables(document, arrays, where)]


def stored_variables(document, arrays, where):
    """``[(name, trainable, StoredArray), ...]`` of the save's variable table: every entry and
    its dataset's header checked against the document, no data read yet."""
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
        if type(e["trainable"]) is not bool:
            raise LoadError(f"{where}: variable '{name}': trainable is not a bool")
        out.append((name, e["trainable"],
                    arrays.header(ref["$array"], f"variable '{name}'", expect=(shape, dtype))))
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
    """The object saved at ``export_dir``: its object graph (attributes, Variables,
    functions) and ``signatures``, rebuilt without any of the saving program's code."""
    with reading(export_dir):
        return _load(export_dir)


def _load(export_dir):
    document, arrays = fmt.read(export_dir)
    where = str(export_dir)
    try:
        version = document.get("saved_model_version", 1)  # version 1 did not record one
        if version not in (1, SAVED_MODEL_VERSION) or type(version) is not int:
            raise LoadError(f"{where} is a SavedModel of version {fmt._short(version)}; this "
                            f"tapeflow reads versions 1 to {SAVED_MODEL_VERSION} (save it "
                            f"again with the tapeflow that wrote it, or upgrade)")
        variables, n_tracked, functions = read_contents(
            document, arrays, where, "saved_model", "tf.keras.models.load_model")
        signatures_doc = document.get("signatures")
        if not isinstance(signatures_doc, dict):
            raise LoadError(f"{where}: the signatures are not an object")
        if version == 1:
            return _load_version_1(signatures_doc, functions, variables, n_tracked, arrays,
                                   where)
        objects = build_objects(document.get("objects"), variables, functions, where)
        root = objects[0]
        root.signatures = {name: decode_signature(name, entry, functions, where)
                           for name, entry in signatures_doc.items()}
        return root
    finally:
        arrays.close()


def _load_version_1(signatures_doc, functions, variables, n_tracked, arrays, where):
    """A save from before the object graph: functions by attribute path, and signatures
    that take their tensors positionally (as they were written)."""
    signatures = {}
    for name, entry in signatures_doc.items():
        fmt.check_name(name, f"{where}: signature")
        signatures[name] = LoadedFunction(
            name, [decode_concrete(entry, arrays, variables, name,
                                   f"{where}: signature '{name}'")])
    return _LoadedObject(functions, signatures, variables, n_tracked)
