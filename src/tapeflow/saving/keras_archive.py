"""Reading a ``.keras`` file as Keras 3 writes it: a zip archive of ``config.json``,
``metadata.json`` and ``model.weights.h5`` (keras-team/keras ``saving/saving_lib.py``).

Only those three members are read, and nothing is ever extracted to a path the archive
names: the two JSON documents are read into memory, the weights are copied into a file of
a temporary directory this process made.  Every member is checked before anything is
read: a name that would leave the archive (``../x``), a name given twice, a member
tapeflow does not read, and a decompression bomb by Keras's rule (declaring over 256 MiB
and over 100 times what it stores) are refused.  Each member has a size cap, checked
against the size the archive declares before reading and against the bytes it
decompresses to while reading (a member decompressing past what it declares is damaged).
Encrypted members and compressions other than stored and deflated are refused.  Every
problem is one ``LoadError`` naming the archive.
"""
import contextlib
import io
import json
import os
import tempfile
import zipfile
import zlib

from .errors import LoadError

__all__ = ["is_keras_archive", "open_keras_archive", "KerasArchive", "MEMBER_CAPS",
           "BOMB_FLOOR_BYTES", "MAX_EXPANSION"]

CONFIG, METADATA, WEIGHTS = "config.json", "metadata.json", "model.weights.h5"

# the most bytes each member may decompress to (settable; a model config is kilobytes)
MEMBER_CAPS = {CONFIG: 16 * 2 ** 20, METADATA: 2 ** 20, WEIGHTS: 16 * 2 ** 30}
# Keras's rule (saving_lib._reject_zip_extract_bomb): a member declaring more than the floor
# and more than MAX_EXPANSION times the bytes it stores is a decompression bomb
BOMB_FLOOR_BYTES = 2 ** 28
MAX_EXPANSION = 100
_MAX_MEMBERS = 64  # Keras writes 3 (and an assets/ folder for layers tapeflow does not have)
_SIGNATURE = b"PK\x03\x04"
_CHUNK = 2 ** 20


def is_keras_archive(path):
    """Whether the file at ``path`` starts as a zip archive does (a directory is not)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(len(_SIGNATURE)) == _SIGNATURE


class KerasArchive:
    """An opened archive: ``config`` and ``metadata`` (parsed JSON objects) and
    ``weights_path``, the weights copied into a temporary file (removed on close)."""

    def __init__(self, where, config, metadata, weights_path):
        self.where, self.config, self.metadata, self.weights_path = \
            where, config, metadata, weights_path


@contextlib.contextmanager
def open_keras_archive(path):
    """The ``KerasArchive`` of the file at ``path``, every member checked; the temporary
    copy of its weights is removed when the block ends."""
    where = os.fspath(path)
    try:
        archive = zipfile.ZipFile(where)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise LoadError(f"{where} is not a readable .keras archive (damaged or truncated): "
                        f"{e}") from None
    with archive, tempfile.TemporaryDirectory(prefix="tapeflow-keras-") as scratch:
        members = _checked_members(archive, where)
        config = _json_member(archive, members[CONFIG], where)
        metadata = _json_member(archive, members[METADATA], where) if METADATA in members \
            else {}
        weights_path = None
        if WEIGHTS in members:
            weights_path = os.path.join(scratch, WEIGHTS)  # a name of ours, not the archive's
            with open(weights_path, "wb") as out:
                _copy_member(archive, members[WEIGHTS], out, where)
        yield KerasArchive(where, config, metadata, weights_path)


def _checked_members(archive, where):
    infos = archive.infolist()
    if len(infos) > _MAX_MEMBERS:
        raise LoadError(f"{where}: the archive holds {len(infos)} members, over the "
                        f"{_MAX_MEMBERS} a .keras archive may hold")
    members = {}
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or ":" in name or "\x00" in name:
            raise LoadError(f"{where}: the archive holds a member named {name!r}, a path that "
                            f"would leave the archive; a .keras archive never does")
        if name in members:
            raise LoadError(f"{where}: the archive holds two members named {name!r}")
        if info.file_size > BOMB_FLOOR_BYTES and \
                info.file_size > MAX_EXPANSION * info.compress_size:
            raise LoadError(f"{where}: archive member {name!r} declares {info.file_size} bytes "
                            f"but stores only {info.compress_size}; refusing a potential "
                            f"decompression bomb")
        if name not in MEMBER_CAPS:
            raise LoadError(f"{where}: the archive holds {name!r}; tapeflow reads only "
                            f"{', '.join(MEMBER_CAPS)} (a model whose layers keep assets "
                            f"cannot be loaded)")
        if info.flag_bits & 0x1:
            raise LoadError(f"{where}: {name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise LoadError(f"{where}: {name} is compressed with method {info.compress_type}; "
                            f"a .keras archive is stored or deflated")
        if info.file_size > MEMBER_CAPS[name]:
            raise LoadError(f"{where}: {name} declares {info.file_size} bytes, over the cap of "
                            f"{MEMBER_CAPS[name]} for it")
        members[name] = info
    if CONFIG not in members:
        raise LoadError(f"{where}: the archive holds no {CONFIG}; it is not a .keras model")
    return members


def _copy_member(archive, info, out, where):
    """Decompress ``info`` into ``out``, refused once past its cap or its declared size."""
    cap = min(MEMBER_CAPS[info.filename], info.file_size)
    written = 0
    try:
        with archive.open(info) as member:
            while True:
                chunk = member.read(_CHUNK)
                if not chunk:
                    break
                written += len(chunk)
                if written > cap:
                    raise LoadError(f"{where}: {info.filename} decompresses past {cap} bytes "
                                    f"(its declared size, within its cap of "
                                    f"{MEMBER_CAPS[info.filename]})")
                out.write(chunk)
    except LoadError:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as e:
        raise LoadError(f"{where}: {info.filename} is damaged: {e}") from None
    if written != info.file_size:
        raise LoadError(f"{where}: {info.filename} holds {written} bytes but declares "
                        f"{info.file_size}: the archive is damaged")


def _json_member(archive, info, where):
    buffer = io.BytesIO()
    _copy_member(archive, info, buffer, where)
    try:
        document = json.loads(buffer.getvalue().decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise LoadError(f"{where}: {info.filename} is not valid JSON: {e}") from None
    if not isinstance(document, dict):
        raise LoadError(f"{where}: {info.filename} is not a JSON object")
    return document
