"""``tapeflow export PATH --format onnx``: a run directory's trained model (or a checkpoint,
or a directory ``tf.saved_model.save`` / ``model.export`` wrote) as an ONNX file."""
import os

from ..saving import format as fmt
from ..saving.export import _input_spec
from ..saving.format import LoadError, SaveError
from .checkpoint import resolve_checkpoint
from .errors import UserError
from .inference import check_output, load_checkpoint_model

__all__ = ["export_to_onnx"]


def export_to_onnx(path, output, overwrite=False):
    """Write ``output`` (ONNX) from ``path``; its ModelProto.  Mistakes (no model there, an op
    with no ONNX form, the onnx package missing) are ``UserError``s naming what is wrong."""
    from ..saving.onnx_export import export_onnx, graph_to_onnx
    check_output(output, keep={}, overwrite=overwrite)
    try:
        if _is_saved_model(path):
            from ..saving.saved_model import load
            signatures = load(path).signatures
            if "serving_default" not in signatures:
                raise UserError(f"{path}: the SavedModel has no serving_default signature to "
                                f"export (its signatures: {sorted(signatures)})")
            import onnx
            proto = graph_to_onnx(signatures["serving_default"].graph,
                                  name=os.path.basename(os.path.normpath(path)))
            onnx.checker.check_model(proto, full_check=True)
            onnx.save(proto, os.fspath(output))
            return proto
        model = load_checkpoint_model(resolve_checkpoint(path))
        return export_onnx(model, output, [_input_spec(model)], verbose=False)
    except (SaveError, LoadError, ImportError) as error:
        raise UserError(str(error)) from None


def _is_saved_model(path):
    if not os.path.isfile(os.path.join(os.fspath(path), fmt.JSON_NAME)):
        return False
    document, arrays = fmt.read(path)
    arrays.close()
    return document.get("kind") == "saved_model"
