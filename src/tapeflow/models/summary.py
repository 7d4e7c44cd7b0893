"""``model.summary()``: layers, output shapes and parameter counts, as Keras prints them.

A Sequential's output shapes follow from its input shape layer by layer; a subclassed
model's are read from one inference call once the model has been called."""
import numpy as np

from ..ops import random as random_ops

__all__ = ["summary_lines"]


def _fmt_shape(shape):
    return "?" if shape is None else str(tuple(shape))


def _called_output_shapes(model):
    """``{id(layer): output shape}`` of a subclassed model's layers, from one inference call on
    zeros of the shape the model was first called with (its layers need not be a chain whose
    shapes follow one from another); the batch axis shows as None.  Empty when the model has
    not been called, or the call fails."""
    input_shape = getattr(model, "_build_input_shape", None)
    if getattr(model, "_input_shape", None) is not None or not isinstance(input_shape, tuple) \
            or not all(d is None or isinstance(d, int) for d in input_shape):
        return {}
    shapes = {}

    def recording(layer, call):
        def call_and_record(*args, **kwargs):
            out = call(*args, **kwargs)
            if hasattr(out, "shape"):
                shapes[id(layer)] = (None,) + tuple(out.shape)[1:]
            return out
        return call_and_record
    layers = model.layers
    for layer in layers:  # an instance attribute is found before the class's call
        object.__setattr__(layer, "call", recording(layer, layer.call))
    state = random_ops.snapshot_state()
    try:
        model(np.zeros([1 if d is None else d for d in input_shape], model.dtype), training=False)
    except Exception:  # noqa: BLE001 - a summary shows "?" rather than fail
        return {}
    finally:
        for layer in layers:
            object.__delattr__(layer, "call")
        random_ops.restore_state(state)
    return shapes


def summary_lines(model, width=72):
    if hasattr(model, "summary_rows"):  # a functional model: its graph's connections too
        rows = model.summary_rows()
        headers = ("Layer (type)", "Output Shape", "Param #", "Connected to")
    else:
        rows = _chain_rows(model)
        headers = ("Layer (type)", "Output Shape", "Param #")
    trainable = sum(int(v._value.size) for v in model.trainable_variables)
    total = sum(int(v._value.size) for v in model.variables)
    # columns wide enough for their longest entry, with a space between them; counts right
    widths = [max([minimum] + [len(r[i]) + 2 for r in rows])
              for i, minimum in zip(range(len(headers)), (32, 24, 16, 24))]
    width = max(width, sum(widths))

    def line(cells):
        return "".join((f"{c:>{w}}" if i == len(cells) - 1 else f"{c:>{w - 2}}  ")
                       if i == 2 else f"{c:<{w}}"
                       for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    lines = [f'Model: "{model.name}"', "=" * width, line(headers), "-" * width]
    lines += [line(r) for r in rows]
    lines += ["=" * width, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
              f"Non-trainable params: {total - trainable:,}", "-" * width]
    return lines


def _chain_rows(model):
    """A Sequential's or subclassed model's rows: (layer (type), output shape, params)."""
    rows = []
    shape = getattr(model, "_input_shape", None)
    called = _called_output_shapes(model)
    for layer in model.layers:
        out = called.get(id(layer))
        if shape is not None:
            try:
                out = layer.compute_output_shape(shape)
            except Exception:  # a layer that cannot say without data
                out = None
        rows.append((f"{layer.name} ({type(layer).__name__})", _fmt_shape(out),
                     f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"))
        shape = out
    return rows
