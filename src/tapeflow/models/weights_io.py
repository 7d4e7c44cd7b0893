"""``save_weights`` / ``load_weights``: Keras 3's ``.weights.h5`` files.

The file is laid out as Keras 3 writes it (``models.weights_tree`` says where
each layer goes): ``layers/dense/vars/0`` is the first variable of a
Sequential's first Dense layer, whatever this process's counters named it
(``dense_7``), so a twin of the model built in this process or another loads
it.  Each ``vars`` group carries its layer's ``name`` attribute, as Keras's
does.  A compiled model's optimizer state is ``optimizer/vars/<i>`` in
``optimizer.variables`` order; each of those datasets also names its
``get_state()`` key in a ``name`` attribute and the group its optimizer's
``class_name``, so the state is read into a model compiled with an optimizer of
that class (skipped with a warning for another class, ignored for a model not
compiled).  Every dataset is written with a checksum and read back with the
saved format's checks (``saving.format.dataset_header``); a file Keras 3 wrote carries no
checksums (a checksum that is there is checked) and names neither its optimizer's variables
nor its class: they are read by position into this optimizer, built for the model's trainable
variables as Keras builds it, where their count and shapes fit (else Keras's warning).

``load_weights`` also reads the files tapeflow wrote before (a ``weights``
group keyed by ``weight_keys``) and whole-model files (``model.save``,
``ModelCheckpoint``).  The file's whole layout (paths, shapes, dtypes: HDF5
metadata, no data) is compared with the model before any array is read, and
every array is read before anything is assigned; a mismatch raises one
ValueError naming the first one (where, and the shapes, dtypes or counts
expected and found), or with ``skip_mismatch=True`` (Keras 3's argument) the
layers that do not match keep their values, unread, and a warning names them.  ``by_name`` is refused as Keras 3 refuses it for these files.
"""
import contextlib
import math
import os
import re
import warnings

import numpy as np

from ..saving import format as fmt
from ..saving.atomic import write_atomically
from ..saving.damaged import reading
from ..saving.h5_attributes import read_attribute, text
from ..serialization import snake_case
from . import weights_legacy
from .weights_tree import LayerWeights, hard_linked_entries, layer_tree, own_variables

__all__ = ["save_weights", "load_weights", "weight_keys", "stored_weight_shapes"]

_MAX_GROUP_DEPTH = 64


def _free(name, taken):
    key, n = name, 0
    while key in taken:
        n += 1
        key = f"{name}_{n}"
    taken.add(key)
    return key


def _component(layer):
    """A layer's name in a key: its own name if the user chose it, else its class's."""
    base = snake_case(type(layer).__name__)
    return base if re.fullmatch(re.escape(base) + r"(_\d+)?", layer.name) else layer.name


def weight_keys(model):
    """``[(key, variable), ...]`` in ``model.weights`` order (a shared variable once): each
    variable's path as a fresh process names it (``sequential/dense_1/kernel``).  The keys of
    optimizer slots, of whole-model saves and of the weights files tapeflow wrote before."""
    out, seen = [], set()

    def walk(layer, prefix):
        taken = set()
        for v in layer._own_weights:
            key = prefix + "/" + _free(v.path.rsplit("/", 1)[-1], taken)
            if id(v) not in seen:
                seen.add(id(v))
                out.append((key, v))
        for child in layer._tracked_layers:
            walk(child, prefix + "/" + _free(_component(child), taken))
    walk(model, _component(model))
    return out


def _optimizer_with_state(model):
    optimizer = getattr(model, "optimizer", None)
    return optimizer if optimizer is not None and optimizer.built else None


def _not_built(model, what):
    return ValueError(f"{what}: model '{model.name}' has no weights yet; build it first (call it "
                      f"on a batch, or start a Sequential with Input(shape=...))")


# --- saving ------------------------------------------------------------------------------------
def save_weights(model, filepath, overwrite=True):
    import h5py  # imported when a file is written or read, not with the package
    filepath = os.fspath(filepath)
    if not model.weights:
        raise _not_built(model, "save_weights")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"save_weights: {filepath} exists and overwrite=False")

    def write(tmp):
        with h5py.File(tmp, "w") as f:
            for path, layer in layer_tree(model):
                group = _new_vars_group(f, path, layer.name)
                for i, v in enumerate(own_variables(layer)):
                    fmt.create_checked_dataset(group, str(i), v._value)
            optimizer = _optimizer_with_state(model)
            if optimizer is not None:
                group = _new_vars_group(f, "optimizer", optimizer.name)
                group.attrs["class_name"] = _fixed(type(optimizer).__name__)
                for i, (key, value) in enumerate(optimizer.get_state().items()):
                    fmt.create_checked_dataset(group, str(i), value)
                    group[str(i)].attrs["name"] = _fixed(key)
    write_atomically(filepath, write)


def _new_vars_group(f, path, name):
    group = f.create_group(f"{path}/vars" if path else "vars")
    group.attrs["name"] = _fixed(name)  # Keras 3's metadata
    return group


def _fixed(text):
    """A string attribute as fixed-length bytes: variable-length ones live in the HDF5 global
    heap, where one damaged byte makes libhdf5 loop or crash on reading (issue 21 item 4)."""
    return np.bytes_(text.encode("utf-8"))


# --- loading -----------------------------------------------------------------------------------
def load_weights(model, filepath, skip_mismatch=False, **kwargs):
    filepath = os.fspath(filepath)
    by_name = kwargs.pop("by_name", None)
    if kwargs:
        raise ValueError(f"load_weights: Invalid keyword arguments: {sorted(kwargs)}")
    if by_name is not None:
        raise ValueError(f"load_weights: `by_name` only supports loading legacy '.h5' or "
                         f"'.hdf5' files (Keras 2's layout), as in Keras 3; {filepath} is "
                         f"loaded by the position of each layer in the model")
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_weights: no file at {filepath}")
    if not model.weights:
        raise _not_built(model, "load_weights")
    # the file's whole layout (paths, shapes, dtypes: HDF5 metadata) is compared with the model
    # first; then the arrays that fit are read; then, all read, they are assigned
    with reading(filepath), _layout(model, filepath) as layout:
        units, extra, optimizer_state, optimizer_class = layout
        problems = [p for p in (u.problem() for u in units) if p is not None]
        problems += [f"the file's {path} is not a layer of the model" for path in extra]
        if problems and not skip_mismatch:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ValueError(f"load_weights: {filepath} does not match model '{model.name}': "
                             f"{problems[0]}{more}")
        if problems:
            warnings.warn(f"load_weights: {len(problems)} parts of {filepath} were not loaded "
                          f"into model '{model.name}' (skip_mismatch=True): {problems}",
                          stacklevel=3)
        plan = [pair for u in units if u.problem() is None for pair in u.read()]
        optimizer_plan = _optimizer_plan(model, optimizer_state, optimizer_class, filepath,
                                         skip_mismatch)
    for v, value in plan:  # each array is fresh from the file: cast, not copied, if it fits
        v.assign(value.astype(v._value.dtype, copy=False))
    for target, value in optimizer_plan:
        target._replace_value(value)


@contextlib.contextmanager
def _layout(model, filepath):
    """``(units, paths in the file not in the model, optimizer state, its class name)``, every
    array a ``format.StoredArray`` (its header checked, its data unread), the file open."""
    import h5py
    try:
        f = h5py.File(filepath, "r")
    except OSError as e:
        raise ValueError(f"load_weights: {filepath} is not a readable HDF5 file: {e}") from None
    with f:
        if "weights" in f:  # the layout tapeflow wrote before
            yield weights_legacy.read_keyed_file(f, weight_keys(model), filepath)
            return
        whole_model = "format" in f.attrs
        if not whole_model:
            groups = _groups(f, filepath)
            if "vars" in f or "layers" in f or _vars_groups(groups):
                yield _read_tree(f, groups, model, filepath)
                return
            raise ValueError(f"load_weights: {filepath} holds no tapeflow weights")
    # a model.save / ModelCheckpoint file (read by the saved format's own checked reader)
    with weights_legacy.read_whole_model(filepath, weight_keys(model)) as layout:
        yield layout


def _read_tree(f, groups, model, where):
    units, paths = [], set()
    # tapeflow named a class "conv2_d" where Keras names it "conv2d" before: both are read
    for (path, layer), (old_path, _) in zip(layer_tree(model),
                                            layer_tree(model, naming=snake_case)):
        vars_path = f"{path}/vars" if path else "vars"
        paths.add(vars_path)
        variables = own_variables(layer)
        group = _group_at(f, vars_path, where, groups)
        if group is None and old_path != path:
            paths.add(f"{old_path}/vars")
            group = _group_at(f, f"{old_path}/vars", where, groups)
        stored = None if group is None else _numbered(group, vars_path, where)
        if variables or stored:
            units.append(LayerWeights(vars_path, layer.name, variables, stored))
    extra = [p for p in _vars_groups(groups) if p not in paths and p != "optimizer/vars"]
    state, class_name = None, None
    group = _group_at(f, "optimizer/vars", where, groups)
    if group is not None and len(group):
        class_name = text(read_attribute(group, "class_name", where))
        values = _numbered(group, "optimizer/vars", where)
        names = [text(value.attribute("name")) for value in values]
        if all(isinstance(n, str) for n in names):
            state = {fmt.check_name(n, f"{where}: optimizer state"): value
                     for n, value in zip(names, values)}
        else:  # Keras 3 wrote it: its variables by position, in optimizer.variables order
            state = values
    return units, extra, state, class_name


def stored_weight_shapes(filepath):
    """``[(shape, dtype), ...]`` of every layer variable in a weights file of Keras 3's layout
    (HDF5 metadata only, no data read; the optimizer's left out): what a config rebuilt
    beside it may make (``layers.weight_budget``)."""
    import h5py
    with reading(filepath), h5py.File(filepath, "r") as f:
        groups = _groups(f, filepath)
        return [(tuple(stored.shape), stored.dtype)
                for path in _vars_groups(groups) if path != "optimizer/vars"
                for stored in _numbered(groups[path], path, filepath)]


def _group_at(f, path, where, groups):
    """The group at ``path`` reached through hard links only, or None if there is none
    (``groups``, from ``_groups``, holds the ones already opened and their links checked)."""
    import h5py
    group, reached = f, ""
    for part in path.split("/"):
        reached = f"{reached}/{part}" if reached else part
        if reached in groups:
            group = groups[reached]
            continue
        link = group.get(part, getlink=True)
        if link is None:
            return None
        if not isinstance(link, h5py.HardLink):
            raise fmt.LoadError(f"{where}: {path} goes through a link to elsewhere, which a "
                                f"weights file never holds")
        group = group[part]
        if not isinstance(group, h5py.Group):
            raise fmt.LoadError(f"{where}: {path} is not a group")
    return group


def _numbered(group, path, where):
    """The arrays ``0, 1, ...`` of a ``vars`` group, each one's header checked (read later)."""
    names = list(group.keys())
    if not all(isinstance(n, str) for n in names):  # h5py gives bytes for a name not UTF-8
        raise fmt.LoadError(f"{where}: {path} holds an entry whose name is not text; the file "
                            f"is damaged")
    names.sort(key=lambda n: (len(n), n))
    if names != [str(i) for i in range(len(names))]:
        raise fmt.LoadError(f"{where}: {path} holds {names[:8]}, not datasets numbered 0, 1, ...")
    return [fmt.dataset_header(group, n, where, f"{path}/{n}", checksummed=fmt.IF_PRESENT)
            for n in names]


def _groups(f, where):
    """``{path: group}`` of the file's groups, each opened once, the ``vars`` groups' contents
    left for ``_numbered``; every link met is checked to be a hard link (the file's whole
    layout is walked once: ``_group_at`` and ``_vars_groups`` reuse what it opened)."""
    import h5py
    found = {}

    def walk(group, path, depth):
        if depth > _MAX_GROUP_DEPTH:
            raise fmt.LoadError(f"{where}: groups nested over {_MAX_GROUP_DEPTH} deep")
        for name, child_path, child in hard_linked_entries(group, path, where):
            if not isinstance(child, h5py.Group):
                continue
            found[child_path] = child
            if name != "vars":
                walk(child, child_path, depth + 1)
    walk(f, "", 0)
    return found


def _vars_groups(groups):
    """Paths of the non-empty ``vars`` groups among ``groups`` (from ``_groups``)."""
    return [path for path, group in groups.items()
            if path.rpartition("/")[2] == "vars" and len(group)]


def _optimizer_plan(model, state, class_name, filepath, skip_mismatch):
    """What loading the file's optimizer state assigns, checked, for a compiled model."""
    optimizer = getattr(model, "optimizer", None)
    if state is None or optimizer is None:
        return []
    if isinstance(state, list):
        state = _by_position(model, optimizer, state, filepath)
        if state is None:
            return []
    elif class_name != type(optimizer).__name__:
        warnings.warn(f"load_weights: {filepath} holds optimizer state of class {class_name}, "
                      f"but model '{model.name}' is compiled with {type(optimizer).__name__}: "
                      f"only the weights were loaded.", stacklevel=4)
        return []
    try:
        return optimizer._checked_state(_read_state(model, state))
    except ValueError as err:
        if skip_mismatch:
            warnings.warn(f"load_weights: the optimizer state in {filepath} was not loaded "
                          f"(skip_mismatch=True): {err}", stacklevel=4)
            return []
        raise ValueError(f"load_weights: {filepath} does not match model '{model.name}': "
                         f"{err}") from None


def _by_position(model, optimizer, stored, filepath):
    """A Keras 3 file's optimizer variables (unnamed, in Keras's ``optimizer.variables``
    order: iterations, learning rate, each trainable variable's slots in turn, as tapeflow's
    order is) keyed by this optimizer's names, built for the model's trainable variables as
    Keras builds it; None, with Keras's warning, where the counts or shapes differ."""
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    state = optimizer.get_state()
    shapes = [tuple(np.shape(v)) for v in state.values()]
    if len(stored) != len(state):
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer.name}', because it "
                      f"has {len(state)} variables whereas the saved optimizer ({filepath}) "
                      f"has {len(stored)} variables.", stacklevel=5)
        return None
    if shapes != [tuple(s.shape) for s in stored]:
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer.name}': the shapes "
                      f"of its variables {shapes} are not those in {filepath} "
                      f"{[tuple(s.shape) for s in stored]}.", stacklevel=5)
        return None
    return dict(zip(state, stored))


def _read_state(model, state):
    """The optimizer state's arrays, read once each is known to be no larger than a variable
    of the model (its slots are shaped as the variables; its counters are scalars), so a
    huge dataset is refused unread (its exact shape is the optimizer's check)."""
    largest = max(math.prod(v.shape) for v in model.weights)
    for key, stored in state.items():
        if math.prod(stored.shape) > max(largest, 1):
            raise ValueError(f"optimizer state '{key}' is {stored.dtype.name}"
                             f"{list(stored.shape)}, larger than any variable of the model "
                             f"(the largest holds {largest} values)")
    return {key: stored.read() for key, stored in state.items()}
