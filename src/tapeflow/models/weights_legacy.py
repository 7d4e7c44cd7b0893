"""Weights that ``load_weights`` reads besides Keras 3's layout: the files tapeflow wrote before
(a ``weights`` group of datasets keyed by ``weight_keys``, an ``optimizer`` group keyed by
``get_state()``) and whole-model files (``model.save``, ``ModelCheckpoint``), both keyed by
``weight_keys``.  Each becomes ``LayerWeights`` per layer, checked like the new layout's."""
import contextlib

from ..saving import format as fmt
from ..saving.h5_attributes import read_attribute, text
from .weights_tree import LayerWeights, hard_linked_entries

__all__ = ["read_keyed_file", "read_whole_model"]

_MAX_DEPTH = 64


def read_keyed_file(f, keyed, where):
    """``(units, keys in the file not in the model, optimizer state, its class name)`` of an
    open file in the layout tapeflow wrote before; arrays as headers, read later."""
    stored = _datasets(f["weights"], where)
    state, class_name = None, None
    if "optimizer" in f:
        class_name = text(read_attribute(f["optimizer"], "class_name", where))
        if class_name is not None:
            state = _datasets(f["optimizer"], where)
    return _units(keyed, stored) + (state, class_name)


@contextlib.contextmanager
def read_whole_model(filepath, keyed):
    """The same for a whole-model save, read through the saved format's checked loader (open
    while the caller reads the arrays it needs)."""
    document, arrays = fmt.read(filepath)
    try:
        stored, class_name, state = _from_saved_model(document, arrays, filepath)
        yield _units(keyed, stored) + (state, class_name)
    finally:
        arrays.close()


def _units(keyed, stored):
    """One ``LayerWeights`` per layer (the key's prefix), and the file's keys no layer has."""
    layers = {}
    for key, v in keyed:
        layers.setdefault(key.rpartition("/")[0], []).append((key, v))
    units = []
    for prefix, pairs in layers.items():
        keys = [k for k, _ in pairs]
        missing = [k for k in keys if k not in stored]
        if len(missing) == len(keys):  # the whole layer is absent: "received 0 variables"
            missing = []
        units.append(LayerWeights(prefix, prefix.rpartition("/")[2], [v for _, v in pairs],
                                  [stored[k] for k in keys if k in stored], missing, keys))
    known = {key for key, _ in keyed}
    return units, sorted(k for k in stored if k not in known)


def _datasets(group, where, prefix="", depth=0):
    """``{path under group: StoredArray}``, through hard links only, each dataset's header
    checked (these files were written without checksums, so only those are not required)."""
    import h5py
    if depth > _MAX_DEPTH:
        raise fmt.LoadError(f"{where}: groups nested over {_MAX_DEPTH} deep")
    found = {}
    for name, path, child in hard_linked_entries(group, prefix, where):
        if isinstance(child, h5py.Group):
            found.update(_datasets(child, where, path, depth + 1))
        else:
            found[path] = fmt.dataset_header(group, name, where, path, checksummed=False)
    return found


def _from_saved_model(document, arrays, filepath):
    """``(weights by key, optimizer class name, optimizer state)`` of a whole-model save, each
    array a header (``format.StoredArray``) until read."""
    from ..saving.saved_model import stored_variables
    if document.get("kind") != "keras_model":
        raise ValueError(f"load_weights: {filepath} is not a saved Keras model")
    variables = stored_variables(document, arrays, filepath)
    n = document.get("tracked_variables")
    if type(n) is not int or not 0 <= n <= len(variables):
        raise ValueError(f"load_weights: {filepath}: tracked_variables is not a count")
    stored = {name: value for name, _, value in variables[:n]}
    optimizer = document.get("optimizer") or {}
    config = optimizer.get("config") or {}
    class_name = config.get("class_name") if isinstance(config, dict) else None
    state = {}
    for pair in optimizer.get("state") or []:
        key = fmt.check_name(pair[0], f"{filepath}: optimizer state")
        state[key] = arrays.header(pair[1]["$array"], f"optimizer state '{key}'")
    return stored, class_name, (state if class_name is not None and state else None)
