"""The object graph of a SavedModel: what ``loaded.v``, ``loaded.layers[0].kernel`` and
``loaded.fns['a']`` come back from.

As TensorFlow's ``SavedObjectGraph``, a save lists *nodes*, node 0 the root::

    {"kind": "object", "type": class name (for repr only), "children": [[name, node]],
     "variables": [variable table index] | null}
    {"kind": "variable", "variable": i}            a Variable of the save's variable table
    {"kind": "function", "function": id}           a tf.function: all its concrete traces
    {"kind": "concrete_function", "function": id}  one ConcreteFunction
    {"kind": "list" | "tuple", "items": [node]}
    {"kind": "dict", "items": [[str key, node]]}
    {"kind": "constant", "value": JSON scalar}     a Python constant inside a list or dict

Each object is one node (by identity), so shared and cyclic references come
back shared.  What is tracked, as TensorFlow tracks it: a Module's attributes
(private ones too); a Keras layer's public attributes and its ``layers``; the
class's ``tf.function`` methods; lists, tuples and dicts holding any of these
(with Python constants kept in place).  Plain Python values in attributes are
not saved, as in TensorFlow.  Loading builds plain objects (``LoadedObject``)
with those attributes: no class of the user's is needed, none is imported.
"""
import inspect
import keyword

from ..core.tensor import Variable
from ..tracing.function import ConcreteFunction, Function
from . import format as fmt
from .arguments import _UNSAVEABLE, decode_constant, encode_constant
from .format import LoadError, SaveError
from .loaded_function import LoadedFunction

__all__ = ["ObjectGraphWriter", "build_objects", "LoadedObject", "tracked_variables",
           "tracked_attributes", "is_tracked_object", "concretes_of", "RESERVED"]

# attributes a loaded object sets itself
RESERVED = frozenset({"signatures", "variables", "trainable_variables",
                      "non_trainable_variables"})
_MODULE_IGNORED = frozenset({"_name", "_scope_name"})


def tracked_variables(obj):
    variables = getattr(obj, "variables", ())
    if callable(variables):
        variables = variables()
    return [v for v in variables if isinstance(v, Variable)]


def concretes_of(value):
    """``[(ConcreteFunction, input_signature or None)]`` a function attribute holds: a
    tf.function with an input_signature its one graph (traced now if it was not yet), one
    without every graph it was traced for; [] for anything else."""
    from ..tracing.function import _PerShape, _PerValue, _Undecided
    if isinstance(value, ConcreteFunction):
        return [(value, None)]
    if isinstance(value, LoadedFunction):  # a loaded object saved again
        return [(c, c.input_signature) for c in value.concrete_functions]
    if isinstance(value, Function):
        if value.input_signature is not None:
            return [(value.get_concrete_function(), value.input_signature)]
        found = []
        for key, entry in list(value._cache.items()):
            if isinstance(entry, _Undecided):  # relaxed, called at one size so far
                entry.settle(value, key)
                entry = value._cache[key]
            if isinstance(entry, _PerShape):
                found.extend((c, None) for c in entry._by_shape.values())
            elif isinstance(entry, _PerValue):  # each checks the values it was traced for
                found.extend((c, None) for c in entry.concretes())
            else:
                found.append((entry, None))
        return found
    return []


def is_tracked_object(value):
    from ..layers.base import Layer
    from ..module import Module
    return isinstance(value, (Module, Layer, LoadedObject))


def _is_function(value):
    return isinstance(value, (Function, ConcreteFunction, LoadedFunction))


def _valid_attribute(name):
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name) \
        and (not name.startswith("__") or name == "__call__") and name not in RESERVED


class ObjectGraphWriter:
    """Collects the nodes of a save.  ``function_id(value)`` records a Function or a
    ConcreteFunction in the save's functions (returning its id), or returns None for a
    tf.function that was never traced (nothing to save); ``variable_index`` is the table's."""

    def __init__(self, variable_index, function_id):
        self._variable_index = variable_index
        self._function_id = function_id
        self.nodes = []
        self.untraced = []  # tf.functions never traced: nothing of them is saved
        self._ids = {}
        self._held = {}  # node -> what it was made from, alive until the save ends: ids stay
        #                  unique (a model's ``layers`` is a new list at each access)

    def add_root(self, root):
        """The nodes of ``root``'s graph.  The root is an object: a Module, a layer or model,
        a loaded SavedModel, or any Python object whose attributes hold what is saved."""
        if isinstance(root, (Variable, list, tuple, dict)) or _is_function(root) or \
                not hasattr(root, "__dict__"):
            raise SaveError(f"tf.saved_model.save saves an object (a tf.Module, a Keras layer or "
                            f"model) and what its attributes hold; got a "
                            f"{type(root).__qualname__}: put it in an attribute of a tf.Module")
        self._ids[id(root)] = 0
        self._held[0] = root
        self.nodes.append(None)
        self.nodes[0] = self._describe(root, "")
        return self.nodes

    def held(self, index):
        """What node ``index`` was made from."""
        return self._held[index]

    def node(self, value, path):
        """The node number of ``value`` (saved once), or None when it is not saved."""
        known = self._ids.get(id(value))
        if known is not None:
            return known
        if not self._trackable(value):
            return None
        index = len(self.nodes)
        self._ids[id(value)] = index
        self.nodes.append(None)
        self._held[index] = value
        self.nodes[index] = self._describe(value, path)
        return index

    def _describe(self, value, path):
        if isinstance(value, Variable):
            return {"kind": "variable", "variable": self._variable_index(value)}
        if _is_function(value):
            kind = "concrete_function" if isinstance(value, ConcreteFunction) else "function"
            return {"kind": kind, "function": self._function_id(value, path)}
        if isinstance(value, (list, tuple)):
            kind = "list" if isinstance(value, list) else "tuple"
            return {"kind": kind, "items": [self._item(v, f"{path}.{i}")
                                            for i, v in enumerate(value)]}
        if isinstance(value, dict):
            return {"kind": "dict", "items": [[k, self._item(v, f"{path}.{k}")]
                                              for k, v in value.items()]}
        children = []
        for name, child in tracked_attributes(value):
            node = self.node(child, f"{path}.{name}" if path else name)
            if node is not None:
                children.append([name, node])
            elif isinstance(child, Function):
                self.untraced.append(name)
        variables = [self._variable_index(v) for v in tracked_variables(value)]
        return {"kind": "object", "type": type(value).__name__, "children": children,
                "variables": variables}

    def _item(self, value, path):
        node = self.node(value, path)
        if node is None:  # a constant in a container: kept so that indices stay right
            node = len(self.nodes)
            self.nodes.append({"kind": "constant", "value": encode_constant(value)})
        return node

    def _trackable(self, value, depth=0):
        """Variables, traced functions, Modules, layers, and containers holding any of them
        whose other items are Python constants (nested at most ``attr_depth``: a list that
        holds itself is not saved)."""
        if depth > fmt.LIMITS["attr_depth"]:
            return False
        if isinstance(value, Variable) or is_tracked_object(value):
            return True
        if _is_function(value):
            return bool(concretes_of(value))
        if isinstance(value, (list, tuple, dict)):
            if isinstance(value, dict):
                if not all(isinstance(k, str) for k in value):
                    return False
                items = list(value.values())
            else:
                items = list(value)
            tracked = [self._trackable(v, depth + 1) for v in items]
            return any(tracked) and all(
                t or encode_constant(v) is not _UNSAVEABLE for t, v in zip(tracked, items))
        return False


def tracked_attributes(obj):
    """``(name, value)`` of the attributes an object's node keeps, sorted by name."""
    from ..layers.base import Layer
    state = dict(vars(obj))
    if isinstance(obj, LoadedObject):
        state.pop("_saved_type")
    elif isinstance(obj, Layer):
        skipped = getattr(type(obj), "_not_saved", ())  # Model's compiled fit/evaluate steps
        state = {k: v for k, v in state.items() if not k.startswith("_") and k not in skipped}
        if obj._tracked_layers and "layers" not in state:
            state["layers"] = obj.layers
    else:
        state = {k: v for k, v in state.items() if k not in _MODULE_IGNORED}
    for name in dir(type(obj)):  # @tf.function methods live on the class
        if name in state or (name.startswith("__") and name != "__call__"):
            continue
        try:
            static = inspect.getattr_static(obj, name)
        except AttributeError:
            continue
        if isinstance(static, (Function, ConcreteFunction)):
            state[name] = getattr(obj, name)
    return [(name, state[name]) for name in sorted(state) if _valid_attribute(name)]


# --- loading -----------------------------------------------------------------------------------
class LoadedObject:
    """A saved Module, layer or model: its saved attributes, and its variables."""

    def __init__(self, type_name):
        self._saved_type = type_name

    def __call__(self, *args, **kwargs):
        fn = vars(self).get("__call__")
        if fn is None:
            raise TypeError(f"the saved {self._saved_type} had no __call__ tf.function")
        return fn(*args, **kwargs)

    def __repr__(self):
        names = sorted(k for k in vars(self) if not k.startswith("_saved"))
        return f"<loaded {self._saved_type}: {', '.join(names)}>"


def build_objects(nodes, variables, functions, where):
    """The loaded objects of ``nodes`` (checked); node 0 is the root."""
    if not isinstance(nodes, list) or not nodes or len(nodes) > fmt.LIMITS["arrays"]:
        raise LoadError(f"{where}: the object graph is not a non-empty list of nodes")
    built = [None] * len(nodes)
    fill = []
    for i, node in enumerate(nodes):  # first every object, list and dict, empty
        built[i] = _shell(node, i, variables, functions, where)
        if not isinstance(built[i], _TupleShell):
            fill.append(i)
    for i in range(len(nodes)):  # tuples are immutable: built from their items
        if isinstance(built[i], _TupleShell):
            _build_tuple(i, nodes, built, where, set())
    for i in fill:
        _fill(nodes[i], built[i], built, nodes, where)
    if not isinstance(built[0], LoadedObject):
        raise LoadError(f"{where}: the root of the object graph is not an object")
    return built


class _TupleShell:
    pass


def _node_ref(ref, nodes, where):
    if type(ref) is not int or not 0 <= ref < len(nodes):
        raise LoadError(f"{where}: the object graph refers to node {fmt._short(ref)}, which it "
                        f"does not hold")
    return ref


def _shell(node, i, variables, functions, where):
    what = f"{where}: object node {i}"
    if not isinstance(node, dict) or "kind" not in node:
        raise LoadError(f"{what} is not an object with a kind")
    kind, keys = node["kind"], set(node)
    if kind == "object" and keys == {"kind", "type", "children", "variables"}:
        if not isinstance(node["type"], str) or len(node["type"]) > fmt.LIMITS["name_chars"] \
                or not node["type"].isidentifier():
            raise LoadError(f"{what}: the type name is not an identifier")
        obj = LoadedObject(node["type"])
        refs = node["variables"]
        if not (isinstance(refs, list) and all(
                type(r) is int and 0 <= r < len(variables) for r in refs)):
            raise LoadError(f"{what}: its variables are not indices of the variable table")
        obj.variables = [variables[r] for r in refs]
        obj.trainable_variables = [v for v in obj.variables if v.trainable]
        obj.non_trainable_variables = [v for v in obj.variables if not v.trainable]
        return obj
    if kind == "variable" and keys == {"kind", "variable"}:
        ref = node["variable"]
        if type(ref) is not int or not 0 <= ref < len(variables):
            raise LoadError(f"{what}: variable {fmt._short(ref)} is not in the variable table")
        return variables[ref]
    if kind in ("function", "concrete_function") and keys == {"kind", "function"}:
        fn = functions.get(node["function"]) if isinstance(node["function"], str) else None
        if fn is None:
            raise LoadError(f"{what} names no saved function")
        if kind == "concrete_function":
            if len(fn.concrete_functions) != 1:
                raise LoadError(f"{what}: a concrete function has one graph")
            return fn.concrete_functions[0]
        return fn
    if kind in ("list", "tuple", "dict") and keys == {"kind", "items"} and \
            isinstance(node["items"], list):
        return {"list": list, "dict": dict, "tuple": _TupleShell}[kind]()
    if kind == "constant" and keys == {"kind", "value"}:
        value = decode_constant(node["value"])
        if value is not _UNSAVEABLE:
            return value
    raise LoadError(f"{what} ({fmt._short(kind)}) is not a node of the object graph")


def _build_tuple(i, nodes, built, where, visiting):
    if not isinstance(built[i], _TupleShell):
        return built[i]
    if i in visiting or len(visiting) > fmt.LIMITS["attr_depth"]:
        raise LoadError(f"{where}: tuples in the object graph contain themselves or nest "
                        f"too deeply")
    visiting.add(i)
    items = []
    for ref in nodes[i]["items"]:
        ref = _node_ref(ref, nodes, where)
        items.append(_build_tuple(ref, nodes, built, where, visiting))
    visiting.discard(i)
    built[i] = tuple(items)
    return built[i]


def _fill(node, obj, built, nodes, where):
    kind = node["kind"]
    if kind == "object":
        children = node["children"]
        if not isinstance(children, list):
            raise LoadError(f"{where}: an object's children are not a list")
        for pair in children:
            if not (isinstance(pair, list) and len(pair) == 2 and _valid_attribute(pair[0])):
                raise LoadError(f"{where}: {fmt._short(pair)} is not [attribute name, node]")
            setattr(obj, pair[0], built[_node_ref(pair[1], nodes, where)])
    elif kind == "list":
        obj.extend(built[_node_ref(ref, nodes, where)] for ref in node["items"])
    elif kind == "dict":
        for pair in node["items"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise LoadError(f"{where}: {fmt._short(pair)} is not [key, node]")
            obj[pair[0]] = built[_node_ref(pair[1], nodes, where)]
