"""The saved format: traced graphs as JSON, arrays in HDF5, read back without trusting either.

One mechanism for SavedModels, Keras model files and (later) checkpoints.  A
save is a *document* (plain JSON: graphs, variables' metadata, whatever the
caller adds) and a list of *arrays* (constants, attribute arrays, variable
values).  It is written either as a directory::

    path/graph.json      the document, UTF-8 JSON
    path/arrays.h5       arrays/<i> datasets (fletcher32 checksums); attributes
                         format, format_version, json_sha256 (of graph.json)

or, for a path ending in ``.h5`` / ``.keras``, as one HDF5 file holding the
same datasets and the document as a checksummed ``graph.json`` byte dataset.
Writes go to a temporary name in the same directory, are fsynced, then
renamed into place.

A graph in the document (format version 1)::

    {"name": str, "inputs": [id], "outputs": [id | null],
     "types": [[id, [dim | null, ...], dtype name], ...],
     "consts": [[id, {"$array": i}], ...], "variables": [index into the variable table],
     "eqns": [{"op": registered name, "inputs": [id], "outputs": [id], "attrs": {name: value}}]}

Attribute values follow a declared schema of plain types: JSON's int, float,
bool, str and null; lists; and tagged objects (one key starting with ``$``)
for the rest: ``$tuple``, ``$slice``, ``$ellipsis``, ``$dtype`` (a numpy dtype
by name), ``$scalar`` (a numpy scalar), ``$float`` (nan/inf), ``$dict``,
``$array`` (a reference to an HDF5 dataset by number) and ``$graph`` (a nested
graph: CUSTOM_GRADIENT's ``grad``, the branches and bodies of ``If``, ``While``
and ``MapFn``).  Anything else is refused at save time,
naming the op and the attribute.  (A CUSTOM_GRADIENT saved without its
gradient graph carries ``gradient_id``, a string that only the process that
saved it can resolve, as TensorFlow's gradient registry does.)

The loader (``read``, ``decode_graph``) trusts nothing in the files: op names
resolve only through the op registry (plus the two graph-level ops); nothing
is imported, unpickled or evaluated; sizes, counts, ranks, shapes and dtypes
are checked against ``LIMITS`` before anything is allocated; a decoded graph's
declared types and attributes are checked against what its ops make and accept
(``graph_checks``: size rules, then a dry run on zeros); HDF5 datasets
must be plain, checksummed, in-file arrays; the document's sha256 must match.
Every problem is one ``LoadError`` (a ValueError) saying what is wrong.
"""
import hashlib
import io
import json
import math
import os
import re
import uuid
import weakref

import numpy as np

from .. import backend
from ..core.registry import lookup_primitive
from ..tracing.ir import ASSIGN, CUSTOM_GRADIENT, READ, Eqn, Graph
from . import graph_checks
from .atomic import make_directory, write_atomically
from .errors import LoadError, SaveError
from .extension_dtypes import EXTENSION_DTYPES, extension_dtype, is_extension, stored_dtype
from .extension_dtypes import create_dataset as create_extension_dataset
from .h5_attributes import read_attribute, text

__all__ = ["FORMAT", "FORMAT_VERSION", "LIMITS", "LoadError", "SaveError", "ArrayWriter",
           "encode_graph", "decode_graph", "write", "read", "check_name", "DTYPES",
           "create_checked_dataset", "read_checked_dataset", "dataset_header", "StoredArray",
           "IF_PRESENT"]

FORMAT = "tapeflow.saved"
FORMAT_VERSION = 1
JSON_NAME = "graph.json"
ARRAYS_NAME = "arrays.h5"

LIMITS = {
    "json_bytes": 64 * 2 ** 20,     # the document
    "equations": 1_000_000,         # over all graphs together
    "values": 4_000_000,            # typed values over all graphs
    "rank": 32,
    "elements": 2 ** 31,            # in one array, and in all arrays together
    "arrays": 1_000_000,
    "graph_depth": 16,              # graphs nested in attributes
    "attr_depth": 32,               # lists/tuples nested in one attribute
    "name_chars": 512,
}

# The only dtypes a file may name (np.dtype is never handed a string from a file otherwise),
# and bfloat16 (``EXTENSION_DTYPES``: ml_dtypes', when installed; see ``extension_dtypes``).
DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}

# Graph-level ops are not in the registry (the executor runs them): resolved by this table.
_GRAPH_OPS = {READ.name: READ, ASSIGN.name: ASSIGN}

_NAME = re.compile(r"[^\x00-\x1f\x7f\\]+")       # printable, no backslashes


def check_name(name, what):
    """A name from a file (a variable's, a function's): a short plain string, no path tricks."""
    if not isinstance(name, str) or not name or len(name) > LIMITS["name_chars"] \
            or not _NAME.fullmatch(name) or name.startswith("/") \
            or ".." in name.split("/") or "." == name:
        raise LoadError(f"{what} {_short(name)} is not a valid name (a printable string of at "
                        f"most {LIMITS['name_chars']} characters, no backslash, no '..' "
                        f"component, no leading '/')")
    return name


# --- saving ----------------------------------------------------------------------------------
class ArrayWriter:
    """Collects the arrays of a save; each gets a number that the document refers to."""

    def __init__(self):
        self.arrays = []

    def add(self, array):
        array = np.asarray(backend.to_host(array))
        if array.dtype.name not in DTYPES and not is_extension(array.dtype):
            raise SaveError(f"arrays of dtype {array.dtype} cannot be saved "
                            f"(known: {', '.join((*DTYPES, *EXTENSION_DTYPES))})")
        self.arrays.append(np.array(array, order="C"))  # (ascontiguousarray makes 0-d 1-d)
        return len(self.arrays) - 1


def encode_graph(graph, arrays, variable_index, *, custom_gradients=True, where=None):
    """The JSON-ready dict of ``graph``.

    ``variable_index(variable) -> int`` places each captured Variable in the
    save's variable table.  With ``custom_gradients=False`` a CUSTOM_GRADIENT
    equation keeps only what its forward needs (its gradient graph is dropped).
    """
    where = where or graph.name
    used = set(graph.inputs) | set(graph.consts) | {o for o in graph.outputs if o is not None}
    eqns = []
    for e in graph.eqns:
        used.update(e.inputs)
        used.update(e.outputs)
        eqns.append({"op": e.op.name, "inputs": list(e.inputs), "outputs": list(e.outputs),
                     "attrs": _encode_attrs(e, arrays, variable_index, custom_gradients, where)})
    return {
        "name": graph.name,
        "inputs": list(graph.inputs),
        "outputs": list(graph.outputs),
        "types": [[vid, [None if d is None else int(d) for d in graph.types[vid][0]],
                   _dtype_name(graph.types[vid][1], where)] for vid in sorted(used)],
        "consts": [[vid, {"$array": arrays.add(arr)}] for vid, arr in graph.consts.items()],
        "variables": [variable_index(v) for v in graph.variables],
        "eqns": eqns,
    }


def _dtype_name(dtype, where):
    dtype = np.dtype(dtype)
    name = dtype.name
    if name not in DTYPES and not is_extension(dtype):
        raise SaveError(f"{where}: values of dtype {name} cannot be saved")
    return name


def _encode_attrs(eqn, arrays, variable_index, custom_gradients, where):
    attrs = dict(eqn.attrs)
    if eqn.op is CUSTOM_GRADIENT:
        if custom_gradients:
            if attrs.get("grad") is None:
                raise SaveError(
                    f"{where}: the gradient of a custom_gradient function could not be traced, so "
                    f"it cannot be saved with SaveOptions(experimental_custom_gradients=True): "
                    f"{attrs.get('grad_error', 'no gradient graph')}. Make the gradient function "
                    f"traceable, or save with experimental_custom_gradients=False.")
            attrs.pop("grad_error", None)
        else:
            # Saved without its gradient graph.  As in TensorFlow, this process still knows the
            # gradient (its registry keeps it): a load here finds it by an id, a fresh process
            # does not (and a gradient through the op then raises LookupError).
            grad = attrs.get("grad")
            attrs = {"n_inputs": attrs["n_inputs"]}
            if grad is not None:
                attrs["gradient_id"] = _remember_gradient(grad, eqn.attrs["n_differentiable"])
    out = {}
    for name, value in attrs.items():
        if not isinstance(name, str):
            raise SaveError(f"{where}: op {eqn.op.name} has a non-string attribute name {name!r}")
        out[name] = _encode_value(value, arrays, variable_index, custom_gradients,
                                  f"{where}: attribute '{name}' of op {eqn.op.name}", 0)
    return out


_PROCESS_GRADIENTS = weakref.WeakValueDictionary()  # gradient id -> gradient Graph, this process


def _remember_gradient(graph, n_differentiable):
    graph._saved_n_differentiable = n_differentiable
    for gid, known in _PROCESS_GRADIENTS.items():
        if known is graph:
            return gid
    gid = f"process-gradient-{uuid.uuid4().hex}"
    _PROCESS_GRADIENTS[gid] = graph
    return gid


def _encode_value(value, arrays, variable_index, custom_gradients, where, depth):
    if depth > LIMITS["attr_depth"]:
        raise SaveError(f"{where} is nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if value is Ellipsis:
        return {"$ellipsis": True}
    if isinstance(value, np.dtype):
        return {"$dtype": _dtype_name(value, where)}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"$dtype": _dtype_name(value, where)}
    if isinstance(value, np.generic):
        return {"$scalar": [_dtype_name(value.dtype, where),
                            _encode_value(value.item(), arrays, variable_index, custom_gradients,
                                          where, depth + 1)]}
    if isinstance(value, np.ndarray) or backend.is_array(value):
        return {"$array": arrays.add(value)}
    if isinstance(value, slice):
        return {"$slice": [_encode_value(p, arrays, variable_index, custom_gradients, where,
                                         depth + 1) for p in (value.start, value.stop, value.step)]}
    if type(value) is list or type(value) is tuple:
        items = [_encode_value(v, arrays, variable_index, custom_gradients, where, depth + 1)
                 for v in value]
        return items if type(value) is list else {"$tuple": items}
    if type(value) is dict:
        pairs = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise SaveError(f"{where}: a dict with the non-string key {k!r} cannot be saved")
            pairs.append([k, _encode_value(v, arrays, variable_index, custom_gradients, where,
                                           depth + 1)])
        return {"$dict": pairs}
    if isinstance(value, Graph):
        return {"$graph": encode_graph(value, arrays, variable_index,
                                       custom_gradients=custom_gradients, where=where)}
    raise SaveError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which the "
                    f"saved format cannot hold (it holds int, float, bool, str, None, lists, "
                    f"tuples, dicts, slices, Ellipsis, numpy dtypes, scalars and arrays, and "
                    f"nested graphs)")


# --- writing and reading the files -----------------------------------------------------------
def _single_file(path):
    return path.endswith((".h5", ".keras", ".hdf5"))


def write(path, document, arrays):
    """Write ``document`` (a JSON-ready dict) and ``arrays`` (an ArrayWriter) at ``path``."""
    import h5py
    path = os.fspath(path)
    document = dict(document, format=FORMAT, format_version=FORMAT_VERSION)
    text = json.dumps(document, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(text) > LIMITS["json_bytes"]:
        raise SaveError(f"the graph document is {len(text)} bytes, over the format's limit of "
                        f"{LIMITS['json_bytes']}")
    digest = hashlib.sha256(text).hexdigest()

    def write_h5(target, with_json):
        # HDF5 builds the file in memory and Python writes its bytes: a disk that fails
        # (full, the file-size limit) then fails a plain write, and never an HDF5 close,
        # which would leave the file open for HDF5 to crash on at interpreter exit
        image = io.BytesIO()
        with h5py.File(image, "w") as f:
            # fixed-length strings: variable-length ones live in the HDF5 global heap, which one
            # damaged byte can send libhdf5 into an endless loop on reading (issue 21 item 4)
            f.attrs["format"] = np.bytes_(FORMAT)
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["json_sha256"] = np.bytes_(digest)
            group = f.create_group("arrays")
            for i, arr in enumerate(arrays.arrays):
                _create(group, str(i), arr)
            if with_json:
                _create(f, JSON_NAME, np.frombuffer(text, np.uint8))
        with open(target, "wb") as out:
            out.write(image.getbuffer())

    if _single_file(path):
        make_directory(os.path.dirname(os.path.abspath(path)))
        write_atomically(path, lambda tmp: write_h5(tmp, True))
        return
    make_directory(path)
    # the arrays first: a reader that finds a new graph.json finds its arrays
    write_atomically(os.path.join(path, ARRAYS_NAME), lambda tmp: write_h5(tmp, False))
    write_atomically(os.path.join(path, JSON_NAME), lambda tmp: _write_bytes(tmp, text))


def _create(group, name, arr):
    unchunked = arr.ndim == 0 or arr.size == 0  # no chunks, so no filter: checked by sha
    chunking = {} if unchunked else {"chunks": True, "fletcher32": True}
    if is_extension(arr.dtype):
        create_extension_dataset(group, name, arr, **chunking)
    else:
        group.create_dataset(name, data=arr, **chunking)
    if unchunked:
        group[name].attrs["checksum"] = np.bytes_(hashlib.sha256(arr.tobytes()).hexdigest())


def _write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    """``(document, ArrayReader)`` of a save at ``path``, the document checked against its hash.

    The document is plain JSON (nothing in it is imported or run); the arrays
    are read one at a time by ``ArrayReader.get`` once the caller knows which
    it needs, each checked against the document's declared shape and dtype.
    """
    import h5py
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No saved model at {path}")
    single = os.path.isfile(path)
    h5_path = path if single else os.path.join(path, ARRAYS_NAME)
    if not single:
        json_path = os.path.join(path, JSON_NAME)
        for p in (json_path, h5_path):
            if not os.path.isfile(p) or os.path.islink(p):
                raise LoadError(f"{path} is not a tapeflow save: {os.path.basename(p)} is missing "
                                f"or not a regular file")
        size = os.path.getsize(json_path)
        if size > LIMITS["json_bytes"]:
            raise LoadError(f"{json_path} is {size} bytes, over the limit of "
                            f"{LIMITS['json_bytes']}")
    try:
        f = h5py.File(h5_path, "r")
    except Exception as e:  # noqa: BLE001 - not HDF5, truncated, unreadable: one error
        raise LoadError(f"{h5_path} is not a readable HDF5 file (damaged or not a tapeflow "
                        f"save): {e}") from None
    try:
        found = _string_attr(f, "format", h5_path)
        if found != FORMAT:
            raise LoadError(f"{h5_path} is not a tapeflow save (format {found!r})")
        version = read_attribute(f, "format_version", h5_path)
        if isinstance(version, np.integer):
            version = int(version)
        if type(version) is not int or version != FORMAT_VERSION:
            raise LoadError(f"{h5_path} has format version {version!r}; this tapeflow reads "
                            f"version {FORMAT_VERSION}")
        if single:
            text = _read_json_dataset(f, h5_path)
        else:
            with open(json_path, "rb") as jf:  # its checked size: no 64 MiB buffer for 1 kB
                text = jf.read(size + 1)
        digest = _string_attr(f, "json_sha256", h5_path)
        if not isinstance(digest, str) or hashlib.sha256(text).hexdigest() != digest:
            raise LoadError(f"{path}: the graph document does not match its sha256 checksum; "
                            f"the save is damaged or was altered")
        document = _parse_json(text, path)
        reader = ArrayReader(f, h5_path)
    except BaseException:
        f.close()
        raise
    return document, reader


def _string_attr(obj, name, where):
    """A string attribute as tapeflow writes it (fixed-length bytes) or wrote it before
    (variable-length str, its global heap checked first); None if absent or another kind."""
    return text(read_attribute(obj, name, where))


def _read_json_dataset(f, where):
    ds = _plain_dataset(f, JSON_NAME, where)
    if ds.dtype != np.uint8 or ds.ndim != 1 or ds.shape[0] > LIMITS["json_bytes"]:
        raise LoadError(f"{where}: graph.json is not a byte string within "
                        f"{LIMITS['json_bytes']} bytes")
    return _read_checked(ds, where, JSON_NAME).tobytes()


def _parse_json(text, where):
    def no_constants(name):
        raise LoadError(f"{where}: the graph document holds {name}, which is not plain JSON")
    try:
        document = json.loads(text.decode("utf-8"), parse_constant=no_constants)
    except LoadError:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise LoadError(f"{where}: the graph document is not valid JSON: {e}") from None
    if not isinstance(document, dict):
        raise LoadError(f"{where}: the graph document is not a JSON object")
    if document.get("format") != FORMAT or document.get("format_version") != FORMAT_VERSION:
        raise LoadError(f"{where}: the graph document has format {document.get('format')!r} "
                        f"version {document.get('format_version')!r}; this tapeflow reads "
                        f"{FORMAT} version {FORMAT_VERSION}")
    return document


def _plain_dataset(f, name, where):
    import h5py
    link = f.get(name, getlink=True)
    if link is None:
        raise LoadError(f"{where}: dataset {name!r} is missing")
    if not isinstance(link, h5py.HardLink):
        raise LoadError(f"{where}: {name!r} is a link to elsewhere, which a save never holds")
    ds = f[name]
    if not isinstance(ds, h5py.Dataset):
        raise LoadError(f"{where}: {name!r} is not a dataset")
    if ds.external or ds.is_virtual:
        raise LoadError(f"{where}: dataset {name!r} keeps its data outside the file, which a "
                        f"save never does")
    return ds


# ``checksummed=IF_PRESENT``: a checksum the dataset carries is checked, none is required (a
# file Keras 3 wrote has none; the checksum guards against damage, not against a crafted file)
IF_PRESENT = "if present"


def _read_checked(ds, where, name, checksummed=True):
    """The data of ``ds``, read only once it is known to be a plain stored array: checksummed
    (``checksummed``: True, False or ``IF_PRESENT``), not compressed, and with every byte it
    declares present in the file (a sparse or compressed dataset could make a small file
    allocate gigabytes)."""
    if checksummed is True and ds.chunks is not None and not ds.fletcher32:
        raise LoadError(f"{where}: dataset {name!r} has no checksum filter (a save always has)")
    if ds.compression is not None or ds.shuffle or ds.scaleoffset is not None:
        raise LoadError(f"{where}: dataset {name!r} is compressed or filtered, which a save "
                        f"never is")
    declared = int(ds.size) * ds.dtype.itemsize
    try:
        stored_bytes = ds.id.get_storage_size()
    except Exception:  # noqa: BLE001 - a damaged header
        stored_bytes = -1
    if stored_bytes < declared:
        raise LoadError(f"{where}: dataset {name!r} declares {declared} bytes but the file "
                        f"stores {max(stored_bytes, 0)}: it is damaged or was altered")
    try:
        data = ds[()]
    except Exception as e:  # noqa: BLE001 - a checksum failure or a damaged chunk
        raise LoadError(f"{where}: dataset {name!r} is damaged (its checksum failed or it "
                        f"cannot be read): {e}") from None
    if checksummed and ds.chunks is None:
        stored = _string_attr(ds, "checksum", where)
        if stored is None and checksummed == IF_PRESENT:
            return np.asarray(data)
        if stored is None or \
                hashlib.sha256(np.array(data, order="C").tobytes()).hexdigest() != stored:
            raise LoadError(f"{where}: dataset {name!r} does not match its checksum")
    return np.asarray(data)


class ArrayReader:
    """The arrays of a save, read on demand and checked."""

    def __init__(self, h5file, where):
        self._f = h5file
        self._where = where
        self._total = 0
        group = h5file.get("arrays", getlink=True)
        import h5py
        if group is None or not isinstance(group, h5py.HardLink) or \
                not isinstance(h5file["arrays"], h5py.Group):
            raise LoadError(f"{where}: the arrays group is missing")
        self.count = len(h5file["arrays"])
        if self.count > LIMITS["arrays"]:
            raise LoadError(f"{where}: {self.count} arrays, over the limit of {LIMITS['arrays']}")

    def close(self):
        self._f.close()

    def get(self, ref, what, expect=None):
        """Array number ``ref`` (from the document), checked: a plain numeric dataset, of
        ``expect`` = (shape, dtype) if given (checked before anything is read)."""
        return self.header(ref, what, expect).read()

    def header(self, ref, what, expect=None):
        """Array number ``ref`` as a ``StoredArray``: checked as ``get`` checks it, its data
        not read until ``read()`` (so a caller can compare its shape with its use first)."""
        if type(ref) is not int or not 0 <= ref < self.count:
            raise LoadError(f"{self._where}: {what} refers to array {ref!r}, which the save does "
                            f"not hold")
        name = f"arrays/{ref}"
        ds = _plain_dataset(self._f, name, self._where)
        dtype = _check_array_header(ds, f"{what} (array {ref})", self._where)
        if expect is not None and (tuple(ds.shape) != tuple(expect[0]) or dtype != expect[1]):
            raise LoadError(f"{self._where}: {what} is {dtype.name}{list(ds.shape)} in the "
                            f"arrays but {np.dtype(expect[1]).name}{list(expect[0])} in the "
                            f"document")
        elements = _elements(ds.shape, f"{what} (array {ref})", self._where)
        return StoredArray(ds, self._where, name, dtype=dtype,
                           before_read=lambda: self._count(elements))

    def _count(self, elements):
        self._total += elements
        if self._total > LIMITS["elements"]:
            raise LoadError(f"{self._where}: the arrays hold more than {LIMITS['elements']} "
                            f"elements together")


class StoredArray:
    """A dataset whose header (hard link, in-file, dtype, rank, size) is checked and whose
    data is not read yet: its ``shape`` and ``dtype`` come from the HDF5 metadata (``dtype``
    the checked one: bfloat16 for a marked opaque dataset), and ``read()`` reads it with the
    format's checks (checksum, no filters, every byte stored)."""

    def __init__(self, ds, where, name, dtype, checksummed=True, before_read=None):
        self._ds, self._where, self._name = ds, where, name
        self._checksummed, self._before_read = checksummed, before_read
        self.shape, self.dtype = tuple(map(int, ds.shape)), dtype

    def attribute(self, name):
        """The dataset's attribute ``name``, read as ``h5_attributes.read_attribute`` reads
        one (the dataset stays open: no second lookup by path)."""
        return read_attribute(self._ds, name, self._where)

    def read(self):
        if self._before_read is not None:
            self._before_read()
        data = _read_checked(self._ds, self._where, self._name, self._checksummed)
        return data if data.dtype == self.dtype else data.view(self.dtype)  # opaque -> bfloat16


def _check_array_header(ds, what, where):
    """A dataset's dtype and rank are ones a save holds (checked before its data is read);
    its dtype."""
    dtype = stored_dtype(ds, where)
    if not (dtype.name in DTYPES or is_extension(dtype)) or dtype.byteorder == ">":
        raise LoadError(f"{where}: {what} has dtype {ds.dtype}, which a save never holds")
    if ds.shape is None or len(ds.shape) > LIMITS["rank"]:
        raise LoadError(f"{where}: {what} has rank over {LIMITS['rank']}")
    return dtype


def create_checked_dataset(group, name, array):
    """Write ``array`` as ``group[name]`` with a checksum (``read_checked_dataset`` requires one)."""
    # asarray: a C-ordered host array is written as it is, not copied first (HDF5 copies it)
    _create(group, name, np.asarray(backend.to_host(array), order="C"))


def read_checked_dataset(group, name, where, what=None, checksummed=True):
    """``group[name]`` as a numpy array, read the way a save's arrays are: a hard-linked,
    in-file, checksummed, uncompressed dataset of a known dtype, within the size limits,
    all checked before its data is read.  ``checksummed=False`` only for files written
    before tapeflow checksummed them, ``IF_PRESENT`` for Keras 3's weights files (the other
    checks stay)."""
    return dataset_header(group, name, where, what, checksummed).read()


def dataset_header(group, name, where, what=None, checksummed=True):
    """``group[name]`` as a ``StoredArray``: what ``read_checked_dataset`` checks before
    reading, checked; the data read by its ``read()``."""
    what = what or f"dataset {name!r}"
    ds = _plain_dataset(group, name, where)
    dtype = _check_array_header(ds, what, where)
    _elements(ds.shape, what, where)
    return StoredArray(ds, where, name, dtype, checksummed)


def _elements(shape, what, where):
    n = 1
    for d in shape:
        if type(d) is not int and not isinstance(d, np.integer):
            raise LoadError(f"{where}: {what} has a dimension {d!r} that is not an integer")
        if d < 0:
            raise LoadError(f"{where}: {what} has a negative dimension {d}")
        if d > LIMITS["elements"]:
            raise LoadError(f"{where}: {what} has more than {LIMITS['elements']} elements "
                            f"(a dimension of {d})")
        n *= int(d)
        if n > LIMITS["elements"]:
            raise LoadError(f"{where}: {what} has more than {LIMITS['elements']} elements")
    return n


# --- decoding a graph ------------------------------------------------------------------------
class _Budget:
    def __init__(self):
        self.equations = 0
        self.values = 0


def decode_graph(doc, arrays, variables, *, where="graph", _depth=0, _budget=None):
    """A ``Graph`` from its dict, everything checked; ``variables`` is the loaded variable table."""
    budget = _budget or _Budget()
    if _depth > LIMITS["graph_depth"]:
        raise LoadError(f"{where}: graphs nested more than {LIMITS['graph_depth']} deep")
    _require(doc, dict, where, "a graph")
    for key in ("name", "inputs", "outputs", "types", "consts", "variables", "eqns"):
        if key not in doc:
            raise LoadError(f"{where}: the graph has no '{key}'")
    name = doc["name"]
    if not isinstance(name, str) or len(name) > LIMITS["name_chars"]:
        raise LoadError(f"{where}: the graph's name is not a short string")
    graph = Graph(name)
    where = f"{where} ({name})"
    for key in ("inputs", "outputs", "types", "consts", "variables", "eqns"):
        _require(doc[key], list, where, f"'{key}', a list")
    budget.equations += len(doc["eqns"])
    budget.values += len(doc["types"])
    if budget.equations > LIMITS["equations"]:
        raise LoadError(f"{where}: more than {LIMITS['equations']} equations")
    if budget.values > LIMITS["values"]:
        raise LoadError(f"{where}: more than {LIMITS['values']} values")

    for entry in doc["types"]:
        if not (isinstance(entry, list) and len(entry) == 3):
            raise LoadError(f"{where}: a type entry is not [id, shape, dtype]: {_short(entry)}")
        vid, shape, dtype = entry
        vid = _vid(vid, where)
        if vid in graph.types:
            raise LoadError(f"{where}: value {vid} is typed twice")
        graph.types[vid] = (_shape(shape, where, f"value {vid}"), _dtype(dtype, where))
    graph._next = max(graph.types, default=-1) + 1

    defined = set()

    def define(vid, what):
        vid = _vid(vid, where)
        if vid not in graph.types:
            raise LoadError(f"{where}: {what} {vid} has no type")
        if vid in defined:
            raise LoadError(f"{where}: value {vid} is defined twice")
        defined.add(vid)
        return vid

    def use(vid, what):
        vid = _vid(vid, where)
        if vid not in defined:
            raise LoadError(f"{where}: {what} uses value {vid} before it is defined")
        return vid

    for vid in doc["inputs"]:
        graph.inputs.append(define(vid, "input"))
    for entry in doc["consts"]:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)
                and set(entry[1]) == {"$array"}):
            raise LoadError(f"{where}: a constant entry is not [id, {{'$array': n}}]: "
                            f"{_short(entry)}")
        vid = define(entry[0], "constant")
        shape, dtype = graph.types[vid]
        arr = arrays.get(entry[1]["$array"], f"{where}: constant {vid}", expect=(shape, dtype))
        if arr.dtype != dtype or arr.shape != shape:
            raise LoadError(f"{where}: constant {vid} is {arr.dtype.name}{list(arr.shape)} in the "
                            f"arrays but {dtype.name}{list(shape)} in the graph")
        graph.consts[vid] = backend.to_device(arr)  # the graph runs on the current device
    for index in doc["variables"]:
        if type(index) is not int or not 0 <= index < len(variables):
            raise LoadError(f"{where}: variable {index!r} is not in the save's variable table")
        graph.variables.append(variables[index])

    for k, e in enumerate(doc["eqns"]):
        if not (isinstance(e, dict) and set(e) == {"op", "inputs", "outputs", "attrs"}):
            raise LoadError(f"{where}: equation {k} is not {{op, inputs, outputs, attrs}}")
        op = _op(e["op"], where, k)
        _require(e["inputs"], list, where, f"equation {k}'s inputs, a list")
        _require(e["outputs"], list, where, f"equation {k}'s outputs, a list")
        _require(e["attrs"], dict, where, f"equation {k}'s attrs, an object")
        ins = tuple(use(i, f"equation {k} ({op.name})") for i in e["inputs"])
        attrs = {}
        for aname, value in e["attrs"].items():
            attrs[aname] = _decode_value(value, arrays, variables, f"{where}: attribute '{aname}' "
                                         f"of equation {k} ({op.name})", _depth, budget, 0)
        _check_eqn(op, attrs, ins, e["outputs"], graph, where, k)
        _declared(graph_checks.check_attribute_kinds, op.name, attrs,
                  f"{where}: equation {k} ({op.name})")
        outs = tuple(define(o, f"output of equation {k}") for o in e["outputs"])
        graph.eqns.append(Eqn(op, attrs, ins, outs))
    for o in doc["outputs"]:
        graph.outputs.append(None if o is None else use(o, "the graph's result"))
    if _depth == 0:  # a nested graph's operands are its owner's: checked where it runs
        _declared(graph_checks.check_declarations, graph, where)
    return graph


def _declared(check, *args):
    """Run one of ``graph_checks``' checks, its refusal a LoadError."""
    try:
        check(*args)
    except graph_checks.DeclarationError as e:
        raise LoadError(str(e)) from None


def _check_eqn(op, attrs, ins, outs, graph, where, k):
    what = f"{where}: equation {k} ({op.name})"
    if op is READ or op is ASSIGN:
        index = attrs.get("variable")
        if set(attrs) != {"variable"} or type(index) is not int or \
                not 0 <= index < len(graph.variables):
            raise LoadError(f"{what} names no variable of the graph")
        n_in, n_out = (0, 1) if op is READ else (1, 0)
        if len(ins) != n_in or len(outs) != n_out:
            raise LoadError(f"{what} has {len(ins)} inputs and {len(outs)} outputs")
        return
    if op is CUSTOM_GRADIENT:
        n_pass = attrs.get("n_inputs")
        if type(n_pass) is not int or not 0 <= n_pass <= len(ins) or \
                len(outs) != len(ins) - n_pass:
            raise LoadError(f"{what}: n_inputs does not fit its {len(ins)} operands and "
                            f"{len(outs)} results")
        unknown = set(attrs) - {"n_inputs", "n_differentiable", "grad", "gradient_id"}
        if unknown:
            raise LoadError(f"{what}: unknown attributes {sorted(unknown)}")
        if "gradient_id" in attrs:
            if set(attrs) != {"n_inputs", "gradient_id"} or not isinstance(attrs["gradient_id"],
                                                                            str):
                raise LoadError(f"{what}: gradient_id comes alone, as a string")
            known = _PROCESS_GRADIENTS.get(attrs.pop("gradient_id"))
            if known is not None:  # saved by this process: its gradient is known here
                attrs["grad"] = known
                attrs["n_differentiable"] = known._saved_n_differentiable
        grad = attrs.get("grad")
        if grad is not None:
            n_diff = attrs.get("n_differentiable")
            if not isinstance(grad, Graph) or type(n_diff) is not int or \
                    not 0 <= n_diff <= n_pass or \
                    len(grad.inputs) != (n_pass - n_diff) + len(outs) or \
                    len(grad.outputs) != n_diff:
                raise LoadError(f"{what}: its gradient graph does not fit its operands")
        return
    if op.num_outputs is not None and len(outs) != op.num_outputs:  # None: variadic (If, While)
        raise LoadError(f"{what} has {len(outs)} outputs; the op makes {op.num_outputs}")


def _op(name, where, k):
    if not isinstance(name, str) or len(name) > LIMITS["name_chars"]:
        raise LoadError(f"{where}: equation {k} names no op")
    op = _GRAPH_OPS.get(name) or lookup_primitive(name)
    if op is None:
        raise LoadError(f"{where}: equation {k} uses op {name!r}, which is not a registered "
                        f"tapeflow primitive (a save names ops only by their registered names; "
                        f"register the op before loading if it is your own)")
    return op


def _decode_value(value, arrays, variables, where, graph_depth, budget, depth):
    if depth > LIMITS["attr_depth"]:
        raise LoadError(f"{where} is nested too deeply")
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list):
        return [_decode_value(v, arrays, variables, where, graph_depth, budget, depth + 1)
                for v in value]
    if not (isinstance(value, dict) and len(value) == 1):
        raise LoadError(f"{where}: {_short(value)} is not a value of the saved format's schema")
    (tag, body), = value.items()
    if tag == "$tuple" and isinstance(body, list):
        return tuple(_decode_value(v, arrays, variables, where, graph_depth, budget, depth + 1)
                     for v in body)
    if tag == "$slice" and isinstance(body, list) and len(body) == 3 and \
            all(p is None or type(p) is int for p in body):
        return slice(*body)
    if tag == "$ellipsis" and body is True:
        return Ellipsis
    if tag == "$dtype":
        return _dtype(body, where)
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$scalar" and isinstance(body, list) and len(body) == 2:
        dtype = _dtype(body[0], where)
        raw = _decode_value(body[1], arrays, variables, where, graph_depth, budget, depth + 1)
        if not isinstance(raw, (bool, int, float)) or isinstance(raw, complex):
            raise LoadError(f"{where}: a numpy scalar holds {_short(raw)}")
        try:
            return dtype.type(raw)
        except (OverflowError, ValueError, TypeError) as e:
            raise LoadError(f"{where}: {e}") from None
    if tag == "$dict" and isinstance(body, list):
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise LoadError(f"{where}: a dict entry is not [str, value]")
            out[pair[0]] = _decode_value(pair[1], arrays, variables, where, graph_depth, budget,
                                         depth + 1)
        return out
    if tag == "$array":  # an op's array attr (an index, segment ids): beside the op's data,
        return backend.to_device(arrays.get(body, where))  # on the current device, as consts
    if tag == "$graph":
        return decode_graph(body, arrays, variables, where=where, _depth=graph_depth + 1,
                            _budget=budget)
    raise LoadError(f"{where}: {_short(value)} is not a value of the saved format's schema")


def _require(value, kind, where, what):
    if not isinstance(value, kind):
        raise LoadError(f"{where}: {what} was expected, found {_short(value)}")


def _vid(vid, where):
    if type(vid) is not int or not 0 <= vid < 2 ** 31:
        raise LoadError(f"{where}: value id {_short(vid)} is not a non-negative integer")
    return vid


def _shape(shape, where, what):
    if not isinstance(shape, list) or len(shape) > LIMITS["rank"]:
        raise LoadError(f"{where}: {what} has shape {_short(shape)}, not a list of at most "
                        f"{LIMITS['rank']} dimensions")
    _elements([1 if d is None else d for d in shape], what, where)
    return tuple(shape)


def _dtype(name, where):
    if isinstance(name, str) and name in EXTENSION_DTYPES:
        return extension_dtype(name, where)
    dtype = DTYPES.get(name) if isinstance(name, str) else None
    if dtype is None:
        raise LoadError(f"{where}: dtype {_short(name)} is not one a save may hold "
                        f"({', '.join((*DTYPES, *EXTENSION_DTYPES))})")
    return dtype


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
