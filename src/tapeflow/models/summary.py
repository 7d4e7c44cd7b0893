"""``model.summary()``: layers, output shapes and parameter counts, as Keras prints them."""
__all__ = ["summary_lines"]


def _fmt_shape(shape):
    return "?" if shape is None else str(tuple(shape))


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
    for layer in model.layers:
        out = None
        if shape is not None:
            try:
                out = layer.compute_output_shape(shape)
            except Exception:  # a layer that cannot say without data
                out = None
        rows.append((f"{layer.name} ({type(layer).__name__})", _fmt_shape(out),
                     f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"))
        shape = out
    return rows
