"""How each traced op is written in ONNX (opset ``OPSET``): one named function per op that
needs more than a rename, and a table of the ops that are a rename.

A converter gets the ``_Emitter`` (which adds nodes and constants), the equation and its
operand names, and returns its output names.  An op not in ``CONVERTERS`` has no ONNX form
here, and the export is refused naming it (never a file that computes something else).
"""
import numpy as np

from .onnx_array_ops import ARRAY_CONVERTERS

__all__ = ["OPSET", "CONVERTERS"]

# 17: Softmax on one axis (13+), ReduceMean's axes still an attribute (an input from 18),
# LayerNormalization with its mean and inverse deviation (17+).  onnxruntime runs it.
OPSET = 17

# Ops whose ONNX node is the same computation under another name, attributes copied as given.
_RENAMED = {
    "AddV2": "Add", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Neg": "Neg",
    "Maximum": "Max", "Minimum": "Min", "Relu": "Relu", "Tanh": "Tanh", "Sigmoid": "Sigmoid",
    "Erf": "Erf", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Abs": "Abs", "Softplus": "Softplus",
    "Selu": "Selu", "Elu": "Elu", "Floor": "Floor", "Ceil": "Ceil", "Sign": "Sign",
    "Reciprocal": "Reciprocal", "Identity": "Identity", "StopGradient": "Identity",
    "Pow": "Pow", "Greater": "Greater", "Less": "Less", "GreaterEqual": "GreaterOrEqual",
    "LessEqual": "LessOrEqual", "Equal": "Equal", "SelectV2": "Where", "Select": "Where",
    "LogicalAnd": "And", "LogicalOr": "Or", "LogicalNot": "Not",
}
_NHWC_TO_NCHW, _NCHW_TO_NHWC, _HWIO_TO_OIHW = [0, 3, 1, 2], [0, 2, 3, 1], [3, 2, 0, 1]


def _renamed(onnx_op):
    def convert(emit, eqn, inputs):
        return [emit.node(onnx_op, inputs)]
    convert.__name__ = f"convert_to_{onnx_op}"
    return convert


def convert_not_equal(emit, eqn, inputs):
    return [emit.node("Not", [emit.node("Equal", inputs)])]


def convert_rsqrt(emit, eqn, inputs):
    return [emit.node("Reciprocal", [emit.node("Sqrt", inputs)])]


def convert_square(emit, eqn, inputs):
    return [emit.node("Mul", [inputs[0], inputs[0]])]


def convert_leaky_relu(emit, eqn, inputs):
    return [emit.node("LeakyRelu", inputs, alpha=float(eqn.attrs["alpha"]))]


def convert_softmax(emit, eqn, inputs):
    return [emit.node("Softmax", inputs, axis=int(eqn.attrs.get("axis", -1)))]


def convert_layer_norm(emit, eqn, inputs):
    """tapeflow's LayerNorm is ONNX's LayerNormalization: the same three outputs (the statistics
    with the normalized axes kept as 1s)."""
    return emit.node("LayerNormalization", inputs, outputs=3,
                     axis=-int(eqn.attrs["axes_count"]), epsilon=float(eqn.attrs["epsilon"]))


def convert_bias_activation(emit, eqn, inputs):
    """BiasActivation (Dense's and Conv's bias and activation, one op): Add, then the
    activation's own node."""
    added = emit.node("Add", inputs)
    activation = eqn.attrs["activation"]
    if activation == "linear":
        return [added]
    return [emit.node({"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh"}[activation],
                      [added])]


def convert_matmul(emit, eqn, inputs):
    """BatchMatMulV2 (Dense's kernel product): ONNX MatMul broadcasts batch axes the same way;
    an operand flagged transposed is transposed on its last two axes first."""
    a, b = inputs
    for flag, k in (("transpose_a", 0), ("transpose_b", 1)):
        if eqn.attrs.get(flag) or eqn.attrs.get(flag.replace("transpose", "adj")):
            rank = len(emit.shape_of(eqn.inputs[k]))
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            transposed = emit.node("Transpose", [inputs[k]], perm=perm)
            a, b = (transposed, b) if k == 0 else (a, transposed)
    return [emit.node("MatMul", [a, b])]


def _reduce(onnx_op):
    def convert(emit, eqn, inputs):
        axes = [int(a) for a in eqn.attrs["axes"]]
        keepdims = int(bool(eqn.attrs.get("keepdims", False)))
        if onnx_op == "ReduceSum":  # axes an input from opset 13, the others' from 18
            return [emit.node(onnx_op, [inputs[0], emit.constant(np.array(axes, np.int64))],
                              keepdims=keepdims)]
        return [emit.node(onnx_op, inputs, axes=axes, keepdims=keepdims)]
    convert.__name__ = f"convert_to_{onnx_op}"
    return convert


def _reduce_bool(onnx_op):
    """Any / All: ONNX reduces no booleans, so as 0/1 integers (max: any, min: all)."""
    reduce = _reduce(onnx_op)

    def convert(emit, eqn, inputs):
        from onnx import TensorProto
        as_int = emit.node("Cast", inputs, to=TensorProto.INT32)
        return [emit.node("Cast", reduce(emit, eqn, [as_int]), to=TensorProto.BOOL)]
    convert.__name__ = f"convert_bool_{onnx_op}"
    return convert


def convert_cast(emit, eqn, inputs):
    from onnx import helper
    dtype = emit.dtype_of(eqn.outputs[0])
    return [emit.node("Cast", inputs, to=helper.np_dtype_to_tensor_dtype(dtype))]


def _spatial(pads):
    """TensorFlow-style ((top, bottom), (left, right)) as ONNX's [top, left, bottom, right]."""
    (top, bottom), (left, right) = pads
    return [int(top), int(left), int(bottom), int(right)]


def _channels_first(emit, eqn, x, make):
    """NHWC in and out, NCHW for ONNX's node between (ONNX's Conv and pools are NCHW)."""
    if len(emit.shape_of(eqn.inputs[0])) != 4:
        raise emit.refuse(eqn, "only 4-d (batch, height, width, channels) inputs are exported")
    return [emit.node("Transpose", [make(emit.node("Transpose", [x], perm=_NHWC_TO_NCHW))],
                      perm=_NCHW_TO_NHWC)]


def convert_conv2d(emit, eqn, inputs):
    x, w = inputs
    kernel = emit.node("Transpose", [w], perm=_HWIO_TO_OIHW)
    kh, kw = emit.shape_of(eqn.inputs[1])[:2]
    return _channels_first(emit, eqn, x, lambda nchw: emit.node(
        "Conv", [nchw, kernel], kernel_shape=[kh, kw], strides=list(eqn.attrs["strides"]),
        dilations=list(eqn.attrs["dilations"]), pads=_spatial(eqn.attrs["pads"])))


def convert_conv2d_backprop_input(emit, eqn, inputs):
    """Conv2DTranspose's op (the input gradient of Conv2D): ONNX ConvTranspose, whose kernel
    is (C_in, C_out, kh, kw) with C_in dy's channels, the forward kernel's OIHW; the output
    size ``input_hw`` given by output_padding."""
    dy, w = inputs
    kh, kw = emit.shape_of(eqn.inputs[1])[:2]
    strides, dilations = list(eqn.attrs["strides"]), list(eqn.attrs["dilations"])
    pads = eqn.attrs["pads"]
    output_padding = []
    for size, n, k, s, d, (before, after) in zip(
            eqn.attrs["input_hw"], emit.shape_of(eqn.inputs[0])[1:3], (kh, kw), strides,
            dilations, pads):
        output_padding.append(int(size - (s * (n - 1) + (k - 1) * d + 1 - before - after)))
    kernel = emit.node("Transpose", [w], perm=_HWIO_TO_OIHW)
    return _channels_first(emit, eqn, dy, lambda nchw: emit.node(
        "ConvTranspose", [nchw, kernel], kernel_shape=[kh, kw], strides=strides,
        dilations=dilations, pads=_spatial(pads), output_padding=output_padding))


def _pool(onnx_op):
    def convert(emit, eqn, inputs):
        # AveragePool's count_include_pad=0 (its default) divides by the inputs a window
        # holds, as TensorFlow's 'same' padding does; MaxPool's pads never win a max.
        return _channels_first(emit, eqn, inputs[0], lambda nchw: emit.node(
            onnx_op, [nchw], kernel_shape=list(eqn.attrs["ksize"]),
            strides=list(eqn.attrs["strides"]), pads=_spatial(eqn.attrs["pads"])))
    convert.__name__ = f"convert_to_{onnx_op}"
    return convert


CONVERTERS = {name: _renamed(onnx_op) for name, onnx_op in _RENAMED.items()}
CONVERTERS.update({
    "Rsqrt": convert_rsqrt, "Square": convert_square, "LeakyRelu": convert_leaky_relu,
    "Softmax": convert_softmax, "BatchMatMulV2": convert_matmul, "MatMul": convert_matmul,
    "Mean": _reduce("ReduceMean"), "Sum": _reduce("ReduceSum"), "Max": _reduce("ReduceMax"),
    "Min": _reduce("ReduceMin"), "Prod": _reduce("ReduceProd"), "Any": _reduce_bool("ReduceMax"),
    "All": _reduce_bool("ReduceMin"), "NotEqual": convert_not_equal,
    "Cast": convert_cast, "Conv2D": convert_conv2d,
    "Conv2DBackpropInput": convert_conv2d_backprop_input, "MaxPool": _pool("MaxPool"),
    "AvgPool": _pool("AveragePool"), "LayerNorm": convert_layer_norm,
    "BiasActivation": convert_bias_activation,
})
CONVERTERS.update(ARRAY_CONVERTERS)
