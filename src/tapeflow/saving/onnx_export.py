"""``model.export(path, format="onnx")``: the model's traced inference graph as an ONNX file
(opset ``onnx_ops.OPSET``), written with the ``onnx`` package (the ``[onnx]`` extra).

The model is traced called with ``training=False`` on its input signature with the batch
dimension ``None``; that dimension stays dynamic in the file (``dim_param "batch"``).  Variables
are read once, when exported, into initializers named by their paths.  Every equation is
written by its converter in ``onnx_ops``; an op without one refuses the export naming it and
where the model made it.  A custom gradient (``IdentityN``) exports its forward.  The written
model passes ``onnx.checker.check_model`` before it is saved.
"""
import os

import numpy as np

from ..backend import to_host
from ..layers.recurrent_cells import elementwise_steps
from ..tracing.function import function
from ..tracing.ir import CUSTOM_GRADIENT, READ, describe_source
from .format import SaveError
from .onnx_ops import CONVERTERS, OPSET

__all__ = ["export_onnx", "graph_to_onnx", "OPSET"]


def _onnx():
    try:
        import onnx
    except ImportError as error:
        raise ImportError("model.export(format='onnx') needs the onnx package: pip install "
                          "'tapeflow[onnx]' (or pip install onnx)") from error
    return onnx


def export_onnx(model, filepath, input_signature, verbose=True):
    onnx = _onnx()

    def serve(inputs):
        return model(inputs, training=False)

    with elementwise_steps():  # recurrent layers as the ops the converters know
        concrete = function(serve, input_signature=list(input_signature)).get_concrete_function()
    proto = graph_to_onnx(concrete.graph, name=model.name)
    onnx.checker.check_model(proto, full_check=True)
    os.makedirs(os.path.dirname(os.path.abspath(os.fspath(filepath))), exist_ok=True)
    onnx.save(proto, os.fspath(filepath))
    if verbose:
        print(f"Saved ONNX model (opset {OPSET}) at '{os.fspath(filepath)}'; inputs "
              f"{[i.name for i in proto.graph.input]}, outputs "
              f"{[o.name for o in proto.graph.output]}")
    return proto


class _Emitter:
    """Names values, adds nodes and constants; what a converter writes with."""

    def __init__(self, graph):
        self.graph = graph
        self.names = {}         # traced value id -> ONNX value name
        self.nodes = []
        self.initializers = {}  # name -> array
        self._count = 0

    def fresh(self, stem):
        self._count += 1
        return f"{stem}_{self._count}"

    def node(self, op_type, inputs, outputs=None, **attributes):
        """Add a node; its output's name (``outputs=n``: a list of its n outputs' names)."""
        from onnx import helper
        name = self.fresh(op_type)
        names = [name] if outputs is None else [f"{name}:{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=name,
                                           **attributes))
        return name if outputs is None else names

    def constant(self, array, stem="const"):
        name = self.fresh(stem)
        self.initializers[name] = np.asarray(array)
        return name

    def shape_of(self, vid):
        return self.graph.types[vid][0]

    def dtype_of(self, vid):
        return self.graph.types[vid][1]

    def refuse(self, eqn, why):
        return SaveError(f"model.export(format='onnx'): {describe_source(eqn)} has no ONNX "
                         f"form: {why}")


def graph_to_onnx(graph, name="tapeflow"):
    """The ONNX ModelProto that computes ``graph`` (a traced ir.Graph)."""
    onnx = _onnx()
    from onnx import helper
    emit = _Emitter(graph)
    inputs = []
    for i, vid in enumerate(graph.inputs):
        emit.names[vid] = f"input_{i}"
        inputs.append(_value_info(helper, emit.names[vid], *graph.types[vid]))
    for vid, array in graph.consts.items():
        emit.names[vid] = emit.constant(np.asarray(to_host(array)))  # consts may be on a GPU
    read = {}  # variable index -> its initializer, once however often the graph reads it
    for eqn in graph.eqns:
        if eqn.op is READ:
            index = eqn.attrs["variable"]
            if index not in read:
                variable = graph.variables[index]
                path = getattr(variable, "path", None) or variable.name  # loaded: a name
                stem = path.replace("/", "_").replace(":", "_")
                read[index] = emit.constant(np.asarray(variable.numpy()), stem=stem)
            emit.names[eqn.outputs[0]] = read[index]
            continue
        operands = [emit.names[v] for v in eqn.inputs]
        if eqn.op is CUSTOM_GRADIENT:  # the forward passes its last operands through
            outputs = operands[eqn.attrs["n_inputs"]:]
        else:
            convert = CONVERTERS.get(eqn.op.name)
            if convert is None:
                raise emit.refuse(eqn, f"tapeflow writes no ONNX for {eqn.op.name} (it exports "
                                       f"{', '.join(sorted(CONVERTERS))})")
            outputs = convert(emit, eqn, operands)
        for vid, output in zip(eqn.outputs, outputs):
            emit.names[vid] = output
    outputs = []
    for i, vid in enumerate(graph.outputs):
        outputs.append(_value_info(helper, f"output_{i}", *graph.types[vid]))
        emit.nodes.append(helper.make_node("Identity", [emit.names[vid]], [f"output_{i}"],
                                           name=f"output_{i}"))
    initializers = [onnx.numpy_helper.from_array(array, name)
                    for name, array in emit.initializers.items()]
    onnx_graph = helper.make_graph(emit.nodes, name, inputs, outputs, initializers)
    return helper.make_model(onnx_graph, producer_name="tapeflow",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def _value_info(helper, name, shape, dtype):
    """A typed value; a ``None`` dimension (the batch) named, so it stays dynamic."""
    dims = ["batch" if d is None and i == 0 else (f"dim_{i}" if d is None else d)
            for i, d in enumerate(shape)]
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), dims)
