"""Where each layer's variables go in a Keras 3 weights file: the layer tree's positions.

Keras 3 (``keras/src/saving/saving_lib.py``: ``_save_state``, ``_walk_saveable``,
``_save_container_state``) addresses a layer by where it sits, never by its
auto-numbered name, so a model built again (``dense_7`` by now) finds its
weights::

    vars                          the model's own variables (usually none)
    layers/dense/vars/0, .../1    a Sequential's or functional model's layers, each
    layers/dense_1/vars/0         named by its class, numbered among its siblings
    encoder/vars/0                a subclassed model's or layer's child: its attribute
    blocks/dense_1/vars/0         a list (or dict) attribute: a container, named as above
    optimizer/vars/0, ...         the optimizer's variables, in ``optimizer.variables`` order

A layer's own variables are numbered ``0, 1, ...``: the trainable ones, then the
others, each in the order the layer made them.  A layer met twice (a shared
layer) is written once, where it is first met.  Attributes are visited in
sorted order, private ones (``_name``) last, as Keras's ``_name_key`` orders them; a
property a layer class defines counts as an attribute, as Keras walks ``dir(layer)``
(MultiHeadAttention's ``query_dense`` names the layer it keeps in ``_query_dense``).
Class names become path names by Keras's ``to_snake_case`` (``Conv2D`` is ``conv2d``);
``layer_tree(model, naming=snake_case)`` gives the paths tapeflow wrote before it did.
"""
import re

import numpy as np

from ..dtypes import is_float_dtype
from ..layers.base import Layer
from ..saving.errors import LoadError
from .model_classes import model_class

__all__ = ["layer_tree", "keras_snake_case", "own_variables", "LayerWeights",
           "hard_linked_entries"]

# Base attributes that hold layers already reached another way (or never hold one).
_SKIPPED = frozenset({"_tracked_layers", "_own_weights", "_inbound_nodes", "_nodes",
                      "inputs", "outputs", "_inputs_struct", "_outputs_struct"})


def own_variables(layer):
    """The layer's own variables in Keras's order: trainable ones first, then the rest."""
    own = layer._own_weights
    return [v for v in own if v.trainable] + [v for v in own if not v.trainable]


def keras_snake_case(name):
    """Keras 3's ``naming.to_snake_case``: "Conv2D" -> "conv2d", "MaxPooling2D" ->
    "max_pooling2d" (a digit before a capital is not split, unlike layer names)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def layer_tree(model, naming=keras_snake_case):
    """``[(inner path, layer), ...]``: every layer of ``model`` (itself first, path ``""``) at
    the place Keras 3 writes its variables, each layer once."""
    out, seen = [], set()
    _visit(model, "", out, seen, naming)
    return out


def _join(path, name):
    return f"{path}/{name}" if path else name


def _visit(layer, path, out, seen, naming):
    if id(layer) in seen:
        return
    seen.add(id(layer))
    out.append((path, layer))
    for name, child in _children(layer):
        where = _join(path, name)
        if isinstance(child, Layer):
            _visit(child, where, out, seen, naming)
        else:
            _visit_container(child, where, out, seen, set(), naming)
    # a layer tracked without an attribute (``_track`` called directly): still saved
    left = [c for c in layer._tracked_layers if id(c) not in seen]
    if left:
        _visit_container(left, _join(path, "layers"), out, seen, set(), naming)


def _children(layer):
    """Keras's ``_walk_saveable``: a Sequential's or functional model's ``layers`` first, then
    the attributes (and the properties of the layer's own classes) holding layers, by name,
    private ones last."""
    if isinstance(layer, (model_class("Sequential"), model_class("Functional"))):
        yield "layers", list(layer._tracked_layers)
    names = set(vars(layer)) | _own_properties(type(layer))
    for name in sorted(names, key=lambda n: f"~{n}" if n.startswith("_") else n):
        if name in _SKIPPED:
            continue
        if name in vars(layer):
            value = vars(layer)[name]
        else:
            try:
                value = getattr(layer, name)
            except Exception:  # noqa: BLE001 - Keras skips a property that raises, too
                continue
        if isinstance(value, Layer) or (isinstance(value, (list, tuple, dict))
                                        and _holds_layer(value)):
            yield name, value


def _own_properties(cls):
    """Public properties defined by ``cls`` and its bases below tapeflow's model and layer
    classes (Keras skips what a bare Layer has)."""
    bases = {Layer, model_class("Model"), model_class("Sequential"), model_class("Functional")}
    found = set()
    for klass in cls.__mro__:
        if klass in bases or not issubclass(klass, Layer):
            break
        found.update(n for n, v in vars(klass).items()
                     if isinstance(v, property) and not n.startswith("_"))
    return found


def _holds_layer(container, depth=0):
    items = container.values() if isinstance(container, dict) else container
    return depth < 32 and any(
        isinstance(v, Layer) or (isinstance(v, (list, tuple, dict)) and _holds_layer(v, depth + 1))
        for v in items)


def _visit_container(container, path, out, seen, containers, naming):
    """Keras's ``_save_container_state``: items named by class (``dense``, ``dense_1``), nested
    containers ``container``, ``container_1``."""
    if id(container) in containers:
        return
    containers.add(id(container))
    used = {}
    items = container.values() if isinstance(container, dict) else container
    for item in items:
        if isinstance(item, Layer):
            _visit(item, _join(path, _unique(naming(type(item).__name__), used)), out, seen,
                   naming)
        elif isinstance(item, (list, tuple, dict)):
            _visit_container(item, _join(path, _unique("container", used)), out, seen,
                             containers, naming)


def _unique(name, used):
    """Keras's ``_get_unique_name``: ``name``, then ``name_1``, ``name_2``, ..."""
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


class LayerWeights:
    """One layer's variables and what the file holds for them (``None``: nothing): each
    stored array known by its header (``shape``, ``dtype``) until ``read()``, so the whole
    file is compared with the model before any of its data is read."""

    def __init__(self, where, layer_name, variables, stored, missing=(), labels=None):
        self.where, self.layer_name, self.variables, self.stored = \
            where, layer_name, variables, stored
        self.missing = list(missing)  # keys of a keyed file that it lacks
        self.labels = labels or [f"{where}/{i}" for i in range(len(variables))]

    def problem(self):
        """Why the file's arrays cannot be assigned to this layer's variables, or None."""
        if self.missing:
            return f"the model's {self.missing} are not in the file"
        stored = self.stored or []
        if len(stored) != len(self.variables):
            return (f"layer '{self.layer_name}' ({self.where}) expected {len(self.variables)} "
                    f"variables, but received {len(stored)} variables during loading. "
                    f"Expected: {[v.name for v in self.variables]}")
        for i, (v, value) in enumerate(zip(self.variables, stored)):
            if tuple(value.shape) != tuple(v.shape):
                return (f"{self.labels[i]} ('{v.path}'): the shapes must match, but the model "
                        f"expects {tuple(v.shape)} and the file holds {tuple(value.shape)}")
            wanted = np.dtype(v._value.dtype)
            # float64 into float32 is Keras's cast (bfloat16 into float16 too, which numpy
            # does not call the same kind); complex into float would drop a part
            if not (np.can_cast(value.dtype, wanted, "same_kind")
                    or is_float_dtype(value.dtype) and is_float_dtype(wanted)):
                return (f"{self.labels[i]} ('{v.path}'): the model's variable is "
                        f"{wanted.name} and the file holds {value.dtype.name}, not the same "
                        f"kind of number")
        return None

    def read(self):
        """``[(variable, its array from the file), ...]``: the data read now."""
        return [(v, value.read()) for v, value in zip(self.variables, self.stored)]


def hard_linked_entries(group, path, where):
    """``(name, its path, the object)`` for each entry of the h5py ``group`` (at ``path`` in the
    file ``where``), each reached through a hard link: a soft or external link is a LoadError,
    raised before what it points to is opened (a weights file never holds one)."""
    import h5py
    for name in group:
        entry_path = f"{path}/{name}" if path else name
        if not isinstance(group.get(name, getlink=True), h5py.HardLink):
            raise LoadError(f"{where}: {entry_path} is a link to elsewhere, which a weights file "
                            f"never holds")
        yield name, entry_path, group[name]
