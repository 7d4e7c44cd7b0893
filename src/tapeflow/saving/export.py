"""Keras 3's ``model.export(path)``: a SavedModel for serving, whose endpoint is ``serve``
(``format="onnx"``: an ONNX file instead, see ``onnx_export``).

The artifact holds the model's variables and one traced function, ``serve``
(the model called with ``training=False`` on its input signature, any batch
size), which is also its ``serving_default`` signature, as Keras 3's
``ExportArchive`` writes it::

    model.export("artifact")
    reloaded = tf.saved_model.load("artifact")
    reloaded.serve(x)                                   # as model(x)
    reloaded.signatures["serving_default"](inputs=x)    # {"output_0": ...}
"""
from ..core import nest
from ..module import Module
from ..tracing.function import TensorSpec, function
from .format import SaveError
from .saved_model import save

__all__ = ["export_model"]


class _ExportArchive(Module):
    """What the artifact's root is made from: the variables and the endpoint."""


def export_model(model, filepath, format="tf_saved_model", verbose=True, input_signature=None):
    if format not in ("tf_saved_model", "onnx"):
        raise ValueError(f"model.export: format {format!r} is not supported; tapeflow exports "
                         f"format='tf_saved_model' and format='onnx'")
    if input_signature is None:
        input_signature = [_input_spec(model)]
    if format == "onnx":
        from .onnx_export import export_onnx
        export_onnx(model, filepath, input_signature, verbose=verbose)
        return
    archive = _ExportArchive(name="export_archive")
    # tracked as plain lists: the artifact keeps the weights, not the Python model
    archive._variables = list(model.variables)
    archive._trainable_variables = list(model.trainable_variables)

    def serve(inputs):
        return model(inputs, training=False)

    archive.serve = function(serve, input_signature=list(input_signature))
    save(archive, filepath, signatures={"serving_default": archive.serve})
    if verbose:
        print(f"Saved artifact at '{filepath}'. Its endpoint: serve ({input_signature})")


def _input_spec(model):
    inputs = getattr(model, "_inputs_struct", None)
    if inputs is not None:
        return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), inputs)
    shape = getattr(model, "_input_shape", None) or getattr(model, "_build_input_shape", None)
    if shape is None or not isinstance(shape, tuple):
        raise SaveError(f"model.export: the input shape of model '{model.name}' is not known; "
                        f"call or build the model first, or pass input_signature=")
    return TensorSpec((None,) + tuple(shape[1:]), model.dtype)
