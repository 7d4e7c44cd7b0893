"""Editing a real save as an attacker would: change its JSON document and recompute both
checksums (the dataset's fletcher32 and the file's json_sha256), so only the loader's own
checks stand between the edit and the process."""
import hashlib
import json

import h5py
import numpy as np

from tapeflow.saving import format as fmt


def edit_document(path, change):
    """Rewrite the document of the single-file save at ``path`` as ``change(document)``
    (which edits it in place) leaves it."""
    with h5py.File(path, "r+") as f:
        document = json.loads(bytes(f[fmt.JSON_NAME][()]))
        change(document)
        text = json.dumps(document).encode("utf-8")
        del f[fmt.JSON_NAME]
        f.create_dataset(fmt.JSON_NAME, data=np.frombuffer(text, np.uint8), chunks=True,
                         fletcher32=True)
        f.attrs["json_sha256"] = hashlib.sha256(text).hexdigest()


def call_graph(document):
    """The saved ``__call__`` graph of a Keras save's document."""
    return document["functions"]["__call__"][0]["graph"]


def edit_saved_model(path, change):
    """Rewrite the document of the SavedModel directory at ``path`` as ``change(document)``
    leaves it, with its recorded sha256."""
    json_path = f"{path}/{fmt.JSON_NAME}"
    with open(json_path) as f:
        document = json.load(f)
    change(document)
    text = json.dumps(document).encode("utf-8")
    with open(json_path, "wb") as f:
        f.write(text)
    with h5py.File(f"{path}/{fmt.ARRAYS_NAME}", "r+") as f:
        f.attrs["json_sha256"] = hashlib.sha256(text).hexdigest()
