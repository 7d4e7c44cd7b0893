"""``Functional``: the model ``tf.keras.Model(inputs, outputs)`` makes, a graph of layer calls.

The graph is the ``Node`` each layer call on symbolic tensors recorded
(``layers.symbolic``), walked back from the outputs to the inputs once, when
the model is made, into one list in topological order (iteratively, parents
in argument order: the same order on every run).  Calling the model replays
that list on data; a layer called twice (shared) runs twice with the same
weights; a model called on symbolic tensors is one layer of the outer graph.

Inputs may be one ``Input``, a list or a dict of them, and so may outputs; a
call takes the inputs as the model was made with them, as a list in
``model.inputs`` order, or as a dict keyed by the Inputs' names (or by the
model's dict keys).

The config is Keras's: ``layers`` (each layer's config with its name and
``inbound_nodes``: the arguments of its calls in this model, symbolic tensors
written as ``{"class_name": "__keras_tensor__", "config": {"keras_history":
[layer name, node index, output index]}}``), ``input_layers`` and
``output_layers`` (the same triples, in the inputs' and outputs' structure).
``from_config`` makes the layers from their configs (classes resolved through
tapeflow's layers and ``custom_objects``; nothing is imported or evaluated)
and calls them again on symbolic tensors in an order their arguments allow.
"""
import inspect

from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..layers.core import InputLayer
from ..layers.symbolic import KerasTensor, keras_tensors
from ..ops.shape import cast
from ..serialization import deserialize, serialize
from .call_arguments import SPECIAL, decoded_argument, encode_argument
from .auto_config import auto_config
from . import model_classes
from .model import Model
from ..dtypes import is_float_dtype

__all__ = ["Functional", "replay_config", "model_from_config", "inject_functional",
           "functional_like_constructor"]

_TENSOR = "__keras_tensor__"


@model_classes.register
class Functional(Model):
    """A model whose call is a graph of layer calls, from ``Input``s to outputs."""

    _autocast = False  # each input is cast to its own Input's dtype instead

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._inputs_struct = _checked_inputs(inputs)
        self._outputs_struct = _checked_outputs(outputs)
        self.inputs = nest.flatten(self._inputs_struct)
        self.outputs = nest.flatten(self._outputs_struct)
        self._nodes = _topological_nodes(self.inputs, self.outputs)
        self._track(_model_layers(self.inputs, self._nodes))
        names = [layer.name for layer in self._tracked_layers]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"Model '{self.name}': layer names must be unique in a model, and "
                             f"{repeated} name more than one layer; give the layers name=...")
        self._input_keys = list(self._inputs_struct) if isinstance(self._inputs_struct, dict) \
            else [t._keras_history[0].name for t in self.inputs]
        self._input_shape = tuple(self.inputs[0].shape) if len(self.inputs) == 1 else None
        self.built = True

    # --- what the model is ---------------------------------------------------------------------
    @property
    def input(self):
        return self._inputs_struct

    @property
    def output(self):
        return self._outputs_struct

    @property
    def input_names(self):
        return list(self._input_keys)

    @property
    def output_names(self):
        """Keras's: the dict keys of dict outputs, else the names of the layers giving them."""
        if isinstance(self._outputs_struct, dict):
            return list(nest.flatten({k: k for k in self._outputs_struct}))
        return [t._keras_history[0].name for t in self.outputs]

    @property
    def input_shape(self):
        return _shapes_as(self._inputs_struct, self.inputs)

    @property
    def output_shape(self):
        return _shapes_as(self._outputs_struct, self.outputs)

    def build(self, input_shape):
        self.built = True  # made built: its layers were built by the calls that made the graph

    def compute_output_shape(self, input_shape):
        return self.output_shape

    # --- calling ---------------------------------------------------------------------------------
    def call(self, inputs, training=None):
        values = {id(t): x for t, x in zip(self.inputs, self._standardized(inputs))}

        def value_of(x):
            return values[id(x)] if isinstance(x, KerasTensor) else x
        for node in self._nodes:
            if node.kwargs or len(node.args) != 1 or node.args[0].__class__ is not KerasTensor:
                args = nest.map_structure(value_of, node.args)
                kwargs = {k: nest.map_structure(value_of, v) for k, v in node.kwargs.items()}
                kwargs.setdefault("training", training)
                outputs = node.layer(*args, **kwargs)
            else:  # the common call: one tensor in
                outputs = node.layer(values[id(node.args[0])], training=training)
            if outputs.__class__ is Tensor and len(node.output_tensors) == 1:
                values[id(node.output_tensors[0])] = outputs  # the common result: one tensor
                continue
            flat = nest.flatten(outputs)
            if len(flat) != len(node.output_tensors):
                raise ValueError(f"{node.layer.name} returned {len(flat)} tensor(s) here but "
                                 f"{len(node.output_tensors)} when the model was made")
            for t, v in zip(node.output_tensors, flat):
                values[id(t)] = v
        return nest.pack_sequence_as(self._outputs_struct, [values[id(t)] for t in self.outputs])

    def _standardized(self, inputs):
        """The call's inputs as one tensor per ``self.inputs``, converted and checked."""
        n = len(self.inputs)
        if isinstance(inputs, dict):
            missing = [k for k in self._input_keys if k not in inputs]
            unexpected = sorted(str(k) for k in inputs if k not in self._input_keys)
            if missing or unexpected:
                raise ValueError(f"Model '{self.name}' takes inputs named {self._input_keys}; "
                                 f"the dict given lacks {missing} and has unexpected keys "
                                 f"{unexpected}")
            flat = [inputs[k] for k in self._input_keys]
        elif isinstance(inputs, (list, tuple)) and not _plain_numbers(inputs) and \
                (n > 1 or len(inputs) == 1):
            flat = nest.flatten(inputs) if n > 1 else list(inputs)
            if len(flat) != n:
                raise ValueError(f"Model '{self.name}' takes {n} input(s) {self._input_keys}, "
                                 f"got a {type(inputs).__name__} of {len(flat)}")
        elif n == 1:
            flat = [inputs]
        else:
            raise ValueError(f"Model '{self.name}' takes {n} inputs {self._input_keys}: pass a "
                             f"list in that order or a dict keyed by those names, not one "
                             f"{type(inputs).__name__}")
        return [_checked_value(x, t, key, self.name)
                for x, t, key in zip(flat, self.inputs, self._input_keys)]

    # --- summary and config ----------------------------------------------------------------------
    def _node_numbering(self):
        """``{id(node): index}``: each node's place among this model's calls of its layer (a
        layer may also have been called outside the model)."""
        numbering = {}
        model_nodes = {id(t.node) for t in self.inputs} | {id(n) for n in self._nodes}
        for layer in self._tracked_layers:
            mine = [node for node in layer._inbound_nodes if id(node) in model_nodes]
            numbering.update((id(node), i) for i, node in enumerate(mine))
        return numbering

    def summary_rows(self):
        """``summary()``'s rows: each layer, its output shape ("multiple" for a layer called
        on several shapes), its parameters and the calls it takes its inputs from."""
        numbering = self._node_numbering()
        rows = []
        for layer in self._tracked_layers:
            nodes = [n for n in layer._inbound_nodes if id(n) in numbering]
            shapes = {str(tuple(t.shape)) if len(n.output_tensors) == 1 else
                      str([tuple(o.shape) for o in n.output_tensors])
                      for n in nodes for t in n.output_tensors[:1]}
            inbound = [f"{t._keras_history[0].name}[{numbering[id(t.node)]}]"
                       f"[{t._keras_history[2]}]" for n in nodes for t in n.input_tensors]
            rows.append((f"{layer.name} ({type(layer).__name__})",
                         shapes.pop() if len(shapes) == 1 else "multiple",
                         f"{layer.count_params():,}", ", ".join(inbound) or "-"))
        return rows

    def get_config(self):
        if not functional_like_constructor(type(self)):
            # a subclass with its own constructor (Keras 3's rule): its arguments, or the base
            # keys its own get_config adds to
            if type(self).get_config is Functional.get_config:
                return auto_config(self, super(Model, self).get_config())
            return super(Model, self).get_config()
        numbering = self._node_numbering()

        def history(t):
            layer, _, index = t._keras_history
            return [layer.name, numbering[id(t.node)], index]

        def encode(value):
            if isinstance(value, KerasTensor):
                return {"class_name": _TENSOR, "config": {
                    "shape": list(value.shape), "dtype": value.dtype.name,
                    "keras_history": history(value)}}
            if isinstance(value, dict):
                return {k: encode(v) for k, v in value.items()}
            if isinstance(value, list):
                return [encode(v) for v in value]
            return encode_argument(value, encode)  # tuples, slices, constants ...
        layers = []
        for layer in self._tracked_layers:
            nodes = sorted((n for n in layer._inbound_nodes
                            if id(n) in numbering and not n.is_input), key=lambda n: n.index)
            layers.append({**serialize(layer), "name": layer.name, "inbound_nodes": [
                {"args": encode(list(n.args)), "kwargs": encode(n.kwargs)} for n in nodes]})
        triples = nest.map_structure(history, self._inputs_struct), \
            nest.map_structure(history, self._outputs_struct)
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": triples[0], "output_layers": triples[1]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return model_from_config(cls, config, custom_objects)

    # Model's own __init__ and from_config reach these through the registered class
    # (models.model_classes): model.py cannot import this module, which imports it.
    @staticmethod
    def become(model, *args, **kwargs):
        """Make ``model``, of a subclass whose ``__init__`` hands ``super().__init__`` a graph,
        a functional model (its class's bases get Functional in Model's place)."""
        inject_functional(type(model))
        Functional.__init__(model, *args, **kwargs)

    @staticmethod
    def revive(cls, config, custom_objects=None):
        """``cls.from_config(config)`` for any model class (``model_from_config``)."""
        return model_from_config(cls, config, custom_objects)


# --- subclassed functional models (Keras 3's) ----------------------------------------------------
_GRAPH_KEYS = ("name", "layers", "input_layers", "output_layers")


def inject_functional(cls):
    """Put Functional in Model's place among ``cls``'s bases (and its bases'), as Keras 3's
    ``inject_functional_model_class``: a subclass whose ``__init__`` hands a graph to
    ``super().__init__`` is then a Functional, and so is every later instance."""
    if cls is Model:
        return Functional
    if cls is object or not issubclass(cls, Model) or issubclass(cls, Functional):
        return cls
    cls.__bases__ = tuple(inject_functional(base) for base in cls.__bases__)
    return cls


def functional_like_constructor(cls):
    """Whether ``cls(inputs, outputs, name=...)`` makes one: Functional's own parameters, or
    ``*args, **kwargs`` passed on (Keras's rule).  Such a class saves and loads its graph;
    any other constructor its own arguments."""
    spec = inspect.getfullargspec(cls.__init__)
    if spec.varargs is not None and spec.varkw is not None:
        return True
    return spec.args[1:3] == ["inputs", "outputs"] and set(spec.args[3:]) <= {"name", "trainable"}


def model_from_config(cls, config, custom_objects=None):
    """A model of class ``cls`` from its config: a graph config (Keras's keys) replayed when
    ``cls`` is Model or Functional or takes inputs and outputs, the config's other keys
    (a subclass's own) passed on with them; else ``cls(**config)``, as Keras 3's
    ``Model.from_config``."""
    graph = all(key in config for key in _GRAPH_KEYS)
    if not (graph and (cls in (Model, Functional) or functional_like_constructor(cls))):
        try:
            return cls(**config)
        except TypeError as e:
            raise TypeError(f"Unable to revive model from config: {cls.__name__}'s constructor "
                            f"does not take the config's keys {sorted(config)} ({e}); write "
                            f"get_config returning its arguments, or a from_config") from None
    known = model_classes.layer_classes()

    def make_layer(entry):
        layer = deserialize({"class_name": entry.get("class_name"),
                             "config": entry.get("config")}, known, custom_objects,
                            kind="layer")
        if entry.get("name", layer.name) != layer.name:
            raise ValueError(f"layer entry '{entry.get('name')}' is not one layer of its own "
                             f"name (its config names '{layer.name}')")
        return layer
    inputs, outputs = replay_config(config, make_layer)
    rest = {k: v for k, v in config.items() if k not in _GRAPH_KEYS and k != "trainable"}
    return (Functional if cls is Model else cls)(
        inputs=inputs, outputs=outputs, name=config.get("name"),
        trainable=config.get("trainable", True), **rest)


def _call_layer(layer, *args, **kwargs):
    return layer(*args, **kwargs)


def replay_config(config, make_layer, call_function=_call_layer):
    """The inputs and outputs of the graph a functional model's ``config`` describes, each
    layer entry made by ``make_layer(entry)`` (from its config, or ``clone_model``'s clone)
    and called again on symbolic tensors by ``call_function(layer, *args, **kwargs)``.  A
    saved [layer, call index, output index] reads what that replayed call returned, so a
    layer called before (a clone that reuses it) or a call_function that adds layers after
    it gives the graph it should."""
    entries = config.get("layers")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError("a functional model's config has a list 'layers' of layer entries")
    made, queues = {}, []  # made: entry name -> [each replayed call's flat outputs]
    for entry in entries:
        layer = make_layer(entry)
        name = entry.get("name", layer.name)
        if name in made:
            raise ValueError(f"layer entry '{name}' is not one layer of its own name (the "
                             f"config holds two)")
        nodes = entry.get("inbound_nodes", [])
        if not isinstance(nodes, list) or not all(
                isinstance(n, dict) and isinstance(n.get("args", []), list)
                and isinstance(n.get("kwargs", {}), dict) for n in nodes):
            raise ValueError(f"layer '{name}': inbound_nodes is not a list of "
                             f"{{'args': [...], 'kwargs': {{...}}}}")
        made[name] = [[layer.output]] if isinstance(layer, InputLayer) else []
        queues.append((name, layer, list(nodes)))
    _replay_calls(queues, made, call_function)
    inputs = _decode(config.get("input_layers"), made, leaf_is_triple=True)
    outputs = _decode(config.get("output_layers"), made, leaf_is_triple=True)
    if _has_missing((inputs, outputs)):
        raise ValueError("the config's input_layers or output_layers name a layer call "
                         "that its layers do not make")
    return inputs, outputs



# --- making the graph ----------------------------------------------------------------------------
def _checked_inputs(inputs):
    inputs = _as_structure(inputs, "inputs")
    flat = nest.flatten(inputs)
    if not flat:
        raise ValueError("tf.keras.Model(inputs, outputs): inputs is empty")
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise TypeError(f"tf.keras.Model: inputs must be tf.keras.Input(...) tensors, got "
                            f"{type(t).__name__}")
        if not isinstance(t._keras_history[0], InputLayer):
            raise ValueError(f"tf.keras.Model: every input must be a tf.keras.Input(...) itself; "
                             f"{t} is the output of layer '{t._keras_history[0].name}'")
    if len({id(t) for t in flat}) != len(flat):
        raise ValueError("tf.keras.Model: an Input is given twice in inputs")
    return inputs


def _checked_outputs(outputs):
    outputs = _as_structure(outputs, "outputs")
    flat = nest.flatten(outputs)
    if not flat:
        raise ValueError("tf.keras.Model(inputs, outputs): outputs is empty")
    for t in flat:
        if not isinstance(t, KerasTensor):
            what = f"the layer '{t.name}' itself" if hasattr(t, "_inbound_nodes") or \
                hasattr(t, "built") else type(t).__name__
            raise TypeError(f"tf.keras.Model: outputs must be the symbolic tensors layer calls "
                            f"return (y = layer(x)), got {what}")
    return outputs


def _as_structure(value, what):
    if isinstance(value, KerasTensor):
        return value
    if isinstance(value, (list, tuple, dict)):
        if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
            raise TypeError(f"tf.keras.Model: the keys of a dict of {what} must be strings")
        return value
    raise TypeError(f"tf.keras.Model: {what} must be symbolic tensors (tf.keras.Input(...) and "
                    f"what layers return on them), alone or in a list or dict; got "
                    f"{type(value).__name__}")


def _topological_nodes(inputs, outputs):
    """The nodes from ``inputs`` to ``outputs``, each after the nodes that make its arguments
    (an iterative depth-first walk from the outputs, parents in argument order)."""
    wanted = {id(t.node) for t in inputs}
    order, done, on_path = [], set(), set()
    for t in outputs:
        stack = [(t.node, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if expanded:
                on_path.discard(id(node))
                done.add(id(node))
                order.append(node)
                continue
            if node.is_input and id(node) not in wanted:
                raise ValueError(
                    f"Graph disconnected: the outputs depend on the Input '{node.layer.name}' "
                    f"{tuple(node.output_tensors[0].shape)}, which is not among the model's "
                    f"inputs {[x._keras_history[0].name for x in inputs]}; add it to inputs")
            on_path.add(id(node))
            stack.append((node, True))
            for parent in reversed(node.parent_nodes):
                if id(parent) not in done:
                    stack.append((parent, False))
    return [node for node in order if not node.is_input]


def _model_layers(inputs, nodes):
    """The InputLayers in input order, then each other layer at its first call."""
    layers, seen = [], set()
    for layer in [t._keras_history[0] for t in inputs] + [node.layer for node in nodes]:
        if id(layer) not in seen:
            seen.add(id(layer))
            layers.append(layer)
    return layers


def _shapes_as(structure, flat):
    shapes = [tuple(t.shape) for t in flat]
    if not isinstance(structure, (list, tuple, dict)):
        return shapes[0]
    it = iter(shapes)
    return _pack_shapes(structure, it)


def _pack_shapes(structure, it):  # shapes are tuples, which nest would take for structure
    if isinstance(structure, dict):
        packed = {k: _pack_shapes(structure[k], it) for k in sorted(structure)}
        return {k: packed[k] for k in structure}
    if isinstance(structure, (list, tuple)):
        return [_pack_shapes(x, it) for x in structure]
    return next(it)


# --- calling ----------------------------------------------------------------------------------
def _plain_numbers(value):
    """A nested list of Python numbers: one input written out, not a list of inputs."""
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (int, float))


def _checked_value(x, spec, key, model_name):
    """``x`` as a tensor of the Input's dtype (floats cast), refused when its shape does not fit."""
    want = spec.dtype._np
    if not isinstance(x, Tensor):
        try:
            x = convert_to_tensor(x, dtype_hint=want)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Model '{model_name}': input '{key}' is not a tensor or array "
                            f"({e})") from None
    have = x._value.dtype  # an array's, or a traced tensor's abstract value's
    if have != want and is_float_dtype(have) and is_float_dtype(want):
        x = cast(x, want)
    shape = tuple(x._value.shape)
    # the batch axis is not checked: Keras's input specs leave out an Input's batch_size
    if len(shape) != len(spec.shape) or any(
            s is not None and d is not None and s != d
            for s, d in zip(spec.shape[1:], shape[1:])):
        raise ValueError(f"Model '{model_name}': input '{key}' expects shape "
                         f"{tuple(spec.shape)}, got {shape}")
    return x


# --- from_config ------------------------------------------------------------------------------
_MISSING = object()  # a layer call's output that has not been made yet


def _has_missing(structure):
    return any(x is _MISSING for x in nest.flatten(structure))  # `is`: arrays compare by value


def _replay_calls(queues, made, call_function):
    """Call each layer on its saved arguments, a call as soon as the calls making its
    arguments have been made, each layer's calls in their saved order."""
    while any(queue for _, _, queue in queues):
        progressed = False
        for name, layer, queue in queues:
            while queue:
                args = _decode(queue[0].get("args", []), made)
                kwargs = _decode(queue[0].get("kwargs", {}), made)
                if _has_missing((args, kwargs)):
                    break
                if not keras_tensors((args, kwargs)):
                    raise ValueError(f"layer '{name}': a saved call has no symbolic "
                                     f"tensor among its arguments")
                made[name].append(nest.flatten(call_function(layer, *args, **kwargs)))
                queue.pop(0)
                progressed = True
        if not progressed:
            stuck = [name for name, _, queue in queues if queue]
            raise ValueError(f"the config's layer calls cannot be replayed: the calls of "
                             f"{stuck} wait on each other or on layers the config lacks")


def _decode(value, made, leaf_is_triple=False, depth=0):
    """A saved structure with its symbolic tensors made again (``_MISSING`` where a tensor's
    layer call has not been replayed yet)."""
    if depth > 64:
        raise ValueError("a functional model's config is nested too deeply")
    if leaf_is_triple and _is_triple(value):
        return _tensor(value, made)
    if isinstance(value, dict):
        if value.get("class_name") == _TENSOR:
            history = (value.get("config") or {}).get("keras_history")
            if not _is_triple(history):
                raise ValueError(f"a saved symbolic tensor has keras_history {history!r}, not "
                                 f"[layer name, node index, output index]")
            return _tensor(history, made)
        if value.get("class_name") in SPECIAL and not leaf_is_triple:
            return decoded_argument(value, lambda v: _decode(v, made, False, depth + 1))
        return {k: _decode(v, made, leaf_is_triple, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, made, leaf_is_triple, depth + 1) for v in value]
    if leaf_is_triple:
        raise ValueError(f"input_layers / output_layers hold [layer name, node index, output "
                         f"index] triples, not {value!r}")
    return value


def _is_triple(value):
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and \
        all(type(i) is int and i >= 0 for i in value[1:])


def _tensor(history, made):
    name, node_index, index = history
    if name not in made:
        raise ValueError(f"the config refers to a layer '{name}' that it does not hold")
    if node_index >= len(made[name]):
        return _MISSING
    outputs = made[name][node_index]
    if index >= len(outputs):
        raise ValueError(f"layer '{name}' call {node_index} has {len(outputs)} output(s), not "
                         f"{index + 1}")
    return outputs[index]
