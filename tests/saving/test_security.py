"""A damaged or hostile save gives one clear LoadError, runs nothing, allocates nothing big.

Each attack rewrites a good save the way an attacker could (recomputing the
document's sha256 where the attack is on the document's content, so the
content checks themselves are what stops it) and checks that a marker file
a successful attack would create is not there.
"""
import hashlib
import json
import os
import pickle

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving.format import LIMITS, LoadError


class Small(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(1, 257, dtype=np.float32) / 7.0, name="w")

    @tf.function(input_signature=[tf.TensorSpec([None, 256])])
    def f(self, x):
        return tf.reduce_sum(x * self.w + np.linspace(0.0, 1.0, 256, dtype=np.float32), axis=-1)


class _Payload:
    """What a pickle-based loader would run: it creates the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model"
    tf.saved_model.save(Small(), path)
    return path


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "the attack ran code"


def _load_fails(path, match):
    with pytest.raises(LoadError, match=match):
        tf.saved_model.load(path)


def _rewrite_document(path, mutate):
    """Change graph.json and, as a deliberate attacker would, its recorded sha256."""
    doc = json.loads((path / "graph.json").read_text())
    mutate(doc)
    _replace_document_bytes(path, json.dumps(doc).encode())


def _replace_document_bytes(path, data):
    (path / "graph.json").write_bytes(data)
    with h5py.File(path / "arrays.h5", "r+") as f:
        f.attrs["json_sha256"] = hashlib.sha256(data).hexdigest()


def _first_eqn(doc):
    return doc["functions"]["f"][0]["graph"]["eqns"]


def test_the_good_save_loads(saved):
    x = np.ones((2, 256), np.float32)
    original = Small()
    np.testing.assert_allclose(tf.saved_model.load(saved).f(x).numpy(), original.f(x).numpy())


# --- damage ----------------------------------------------------------------------------------
def test_truncated_arrays_file(saved):
    data = (saved / "arrays.h5").read_bytes()
    (saved / "arrays.h5").write_bytes(data[:len(data) // 2])
    _load_fails(saved, "not a readable HDF5 file|damaged")


def test_truncated_document(saved):
    data = (saved / "graph.json").read_bytes()
    (saved / "graph.json").write_bytes(data[:len(data) // 2])
    _load_fails(saved, "sha256")


def test_missing_document(saved):
    (saved / "graph.json").unlink()
    _load_fails(saved, "graph.json is missing")


def test_a_flipped_byte_in_an_array_fails_its_checksum(saved):
    raw = (saved / "arrays.h5").read_bytes()
    weights = (np.arange(1, 257, dtype=np.float32) / 7.0).tobytes()
    at = raw.find(weights)
    assert at > 0
    flipped = bytearray(raw)
    flipped[at + 100] ^= 0x01
    (saved / "arrays.h5").write_bytes(bytes(flipped))
    _load_fails(saved, "damaged|checksum")


def test_a_flipped_byte_in_a_single_file_save(tmp_path):
    path = tmp_path / "model.h5"
    tf.saved_model.save(Small(), path)
    raw = bytearray(path.read_bytes())
    at = raw.find(b'"eqns"')
    assert at > 0
    raw[at + 2] ^= 0x20
    path.write_bytes(bytes(raw))
    _load_fails(path, "damaged|checksum|sha256")


def test_a_flipped_byte_in_the_document(saved):
    raw = bytearray((saved / "graph.json").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (saved / "graph.json").write_bytes(bytes(raw))
    _load_fails(saved, "sha256")


def test_an_array_rewritten_consistently_but_without_a_checksum(saved):
    with h5py.File(saved / "arrays.h5", "r+") as f:
        value = f["arrays/0"][()]
        del f["arrays/0"]
        f.create_dataset("arrays/0", data=value + 1.0, chunks=True)  # no fletcher32
    _load_fails(saved, "no checksum filter")


# --- code and names in the files ---------------------------------------------------------------
def test_an_op_named_os_system_is_an_unknown_op_and_runs_nothing(saved, marker):
    def mutate(doc):
        eqn = _first_eqn(doc)[0]
        eqn["op"] = "os.system"
        eqn["attrs"] = {"command": f"touch {marker}"}
    _rewrite_document(saved, mutate)
    _load_fails(saved, r"op 'os.system', which is not a registered tapeflow primitive")


def test_an_attribute_that_names_a_python_object_is_not_in_the_schema(saved, marker):
    def mutate(doc):
        _first_eqn(doc)[-1]["attrs"]["axes"] = {"$class": "os.system", "args": [f"touch {marker}"]}
    _rewrite_document(saved, mutate)
    _load_fails(saved, "not a value of the saved format's schema")


def test_a_pickle_where_the_document_belongs(saved, marker):
    _replace_document_bytes(saved, pickle.dumps(_Payload(marker)))
    _load_fails(saved, "not valid JSON")


def test_a_pickle_where_the_arrays_file_belongs(saved, marker):
    (saved / "arrays.h5").write_bytes(pickle.dumps(_Payload(marker)))
    _load_fails(saved, "not a readable HDF5 file")


def test_a_pickle_inside_an_array_dataset(saved, marker):
    blob = np.frombuffer(pickle.dumps(_Payload(marker)), dtype=np.uint8)
    with h5py.File(saved / "arrays.h5", "r+") as f:
        del f["arrays/0"]
        f.create_dataset("arrays/0", data=np.void(blob.tobytes()))
    _load_fails(saved, "dtype .* which a save never holds")


@pytest.mark.parametrize("where", ["variable name", "array reference", "function name",
                                   "signature name"])
def test_path_traversal_in_a_name(saved, where):
    def mutate(doc):
        if where == "variable name":
            doc["variables"][0]["name"] = "../../../etc/passwd"
        elif where == "array reference":
            doc["variables"][0]["value"] = {"$array": "../../../etc/passwd"}
        elif where == "function name":
            doc["functions"]["../../evil"] = doc["functions"].pop("f")
        else:
            doc["signatures"]["/etc/passwd"] = doc["functions"]["f"][0]
    _rewrite_document(saved, mutate)
    _load_fails(saved, "not a valid name|not a valid function name|refers to array")


def test_an_array_linked_to_another_file(saved, tmp_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.create_dataset("x", data=np.zeros(256, np.float32), chunks=True, fletcher32=True)
    with h5py.File(saved / "arrays.h5", "r+") as f:
        del f["arrays/0"]
        f["arrays/0"] = h5py.ExternalLink(str(other), "x")
    _load_fails(saved, "link to elsewhere")


def test_an_array_stored_in_an_external_raw_file(saved, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x01" * 1024)
    with h5py.File(saved / "arrays.h5", "r+") as f:
        del f["arrays/0"]
        f.create_dataset("arrays/0", shape=(256,), dtype=np.float32,
                         external=[(str(secret), 0, 1024)])
    _load_fails(saved, "outside the file")


# --- sizes ---------------------------------------------------------------------------------------
def test_a_declared_shape_of_2_to_the_40_elements(saved):
    def mutate(doc):
        doc["variables"][0]["shape"] = [2 ** 20, 2 ** 20]
    _rewrite_document(saved, mutate)
    _load_fails(saved, "more than 2147483648 elements")


def test_an_array_dataset_of_2_to_the_40_elements_is_not_read(saved):
    with h5py.File(saved / "arrays.h5", "r+") as f:
        del f["arrays/0"]
        f.create_dataset("arrays/0", shape=(2 ** 40,), dtype=np.float32, chunks=(1024,),
                         fletcher32=True)  # nothing written: the file stays small
    _load_fails(saved, r"float32\[1099511627776\] in the arrays but float32\[256\]")
    _rewrite_document(saved, lambda doc: doc["variables"][0].update(shape=[2 ** 40]))
    _load_fails(saved, "more than 2147483648 elements")


def test_a_rank_of_100(saved):
    def mutate(doc):
        graph = doc["functions"]["f"][0]["graph"]
        graph["types"][0][1] = [1] * 100
    _rewrite_document(saved, mutate)
    _load_fails(saved, "at most 32 dimensions")


def test_an_absurd_number_of_equations(saved):
    def mutate(doc):
        doc["functions"]["f"][0]["graph"]["eqns"] = [0] * (LIMITS["equations"] + 1)
    _rewrite_document(saved, mutate)
    _load_fails(saved, "more than 1000000 equations")


def test_an_oversized_document_is_not_read(saved):
    with open(saved / "graph.json", "r+b") as f:
        f.truncate(LIMITS["json_bytes"] + 1)  # sparse: no disk used
    _load_fails(saved, "over the limit")


def test_deeply_nested_json(saved):
    _replace_document_bytes(saved, b"[" * 100_000 + b"]" * 100_000)
    _load_fails(saved, "not valid JSON|not a JSON object")


def test_deeply_nested_graphs(saved):
    def mutate(doc):
        graph = doc["functions"]["f"][0]["graph"]
        inner = json.loads(json.dumps(graph))
        for _ in range(LIMITS["graph_depth"] + 2):
            inner = {"name": "g", "inputs": [], "outputs": [], "types": [], "consts": [],
                     "variables": [], "eqns": [{"op": "Abs", "inputs": [], "outputs": [],
                                                "attrs": {"x": {"$graph": inner}}}]}
        graph["eqns"][0]["attrs"]["nested"] = {"$graph": inner}
    _rewrite_document(saved, mutate)
    _load_fails(saved, "nested more than")


def test_a_value_used_before_it_is_defined(saved):
    def mutate(doc):
        eqns = _first_eqn(doc)
        eqns[0]["inputs"] = [max(v for e in eqns for v in e["outputs"])]
    _rewrite_document(saved, mutate)
    _load_fails(saved, "before it is defined")


def test_a_variable_whose_array_does_not_match_its_declared_shape(saved):
    def mutate(doc):
        doc["variables"][0]["shape"] = [128, 2]
    _rewrite_document(saved, mutate)
    _load_fails(saved, "in the arrays but float32")


def test_a_future_format_version(saved):
    with h5py.File(saved / "arrays.h5", "r+") as f:
        f.attrs["format_version"] = 99
    _load_fails(saved, "format version 99")


def test_load_errors_are_value_errors():
    assert issubclass(LoadError, ValueError)
    assert tf.saved_model.LoadError is LoadError


def test_a_gradient_id_from_elsewhere_is_only_a_string_and_resolves_to_nothing(tmp_path):
    @tf.custom_gradient
    def ident(y):
        return y, lambda dy: dy * 3.0

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def f(self, x):
            return ident(x)

    path = tmp_path / "m"
    tf.saved_model.save(M(), path,
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))

    def forged(doc):
        _first_eqn(doc)[0]["attrs"]["gradient_id"] = "process-gradient-from-another-process"
    _rewrite_document(path, forged)
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = tf.saved_model.load(path).f(v * 1.0)
    with pytest.raises(LookupError, match="IdentityN"):
        tape.gradient(y, v)

    def not_a_string(doc):
        _first_eqn(doc)[0]["attrs"]["gradient_id"] = {"$dtype": "float32"}
    _rewrite_document(path, not_a_string)
    _load_fails(path, "gradient_id comes alone, as a string")


def test_an_array_declaring_more_data_than_the_file_stores_is_not_read(saved):
    """2**28 float32 elements (1 GiB) under every cap, but never written: the file is small, so
    reading it would allocate far more than the file holds."""
    with h5py.File(saved / "arrays.h5", "r+") as f:
        del f["arrays/0"]
        f.create_dataset("arrays/0", shape=(2 ** 28,), dtype=np.float32, chunks=(2 ** 16,),
                         fletcher32=True)
    assert os.path.getsize(saved / "arrays.h5") < 2 ** 20
    _rewrite_document(saved, lambda doc: doc["variables"][0].update(shape=[2 ** 28]))
    _load_fails(saved, "declares 1073741824 bytes but the file stores 0")


def test_a_compressed_array_is_refused(saved):
    with h5py.File(saved / "arrays.h5", "r+") as f:
        value = f["arrays/0"][()]
        del f["arrays/0"]
        f.create_dataset("arrays/0", data=value, chunks=True, fletcher32=True,
                         compression="gzip")
    _load_fails(saved, "compressed or filtered")


@pytest.mark.parametrize("attack, match", [
    (lambda d: d["objects"][0]["children"].append(["w2", 999]), "does not hold"),
    (lambda d: d["objects"][0]["children"].append(["__class__", 1]), "not \\[attribute name"),
    (lambda d: d["objects"].append({"kind": "tuple", "items": [len(d["objects"])]}) or
        d["objects"][0]["children"].append(["t", len(d["objects"]) - 1]), "contain themselves"),
    (lambda d: d["objects"].append({"kind": "import", "module": "os"}), "not a node"),
    (lambda d: d["objects"][0].update(type="<lambda>"), "type name"),
    (lambda d: d["signatures"]["serving_default"].update(function="nope"), "names no saved"),
    (lambda d: d["signatures"]["serving_default"].update(inputs=["x; rm"]), "distinct names"),
    (lambda d: d["functions"]["f"][0].update(arguments={"$tensor": 5}), "not a saved argument"),
    (lambda d: d["functions"]["f"][0]["parameters"].append(
        {"name": "__import__('os')", "kind": "KEYWORD_ONLY"}), "not a saved parameter"),
    (lambda d: d["functions"]["f"][0]["parameters"].append(
        {"name": "y", "kind": "KEYWORD_ONLY", "default": {"$pickle": "..."}}), "does not hold"),
])
def test_a_hostile_object_graph_is_refused(saved, attack, match):
    """The object graph, the traced calls and the signatures are checked as the graphs are."""
    _rewrite_document(saved, attack)
    _load_fails(saved, match)
