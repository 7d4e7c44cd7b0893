"""Writing a file so that a kill, a full disk or a planted link never leaves it half written or
redirects it: every file tapeflow writes goes through ``write_atomically``.

The data go to a new temporary file beside the final one, made by ``mkstemp`` (``O_CREAT |
O_EXCL``: it never opens an existing path, so a symlink planted under a predictable temporary
name cannot send the write elsewhere), synced, then renamed over the final name, and the
directory synced. ``clean_temporaries`` removes what a kill left behind (``.tmp-*.part``).

A write that fails (a read-only directory, a full disk, the file-size limit) raises one
``WriteError`` naming the final path and the OS error; the old file, if any, is untouched.
"""
import errno
import glob
import os
import tempfile

__all__ = ["write_atomically", "write_text_atomically", "clean_temporaries", "WriteError",
           "make_directory"]


class WriteError(OSError):
    """A file could not be written (or its directory made): ``str()`` names the path and the
    OS error, in one line."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror, path)
        code = errno.errorcode.get(error.errno)
        reason = f"{error.strerror} ({code})" if error.strerror and code else str(error)
        self.message = f"cannot write {path}: {reason}"

    def __str__(self):
        return self.message


def make_directory(path):
    """``os.makedirs(path, exist_ok=True)``, failing with a ``WriteError``."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise WriteError(path, e) from None

PATTERN = ".tmp-*.part"


def write_atomically(final, write_fn):
    """``write_fn(tmp_path)`` writes the whole file; then it replaces ``final``.  An OSError
    on the way is raised as a ``WriteError`` naming ``final``."""
    try:
        _write_atomically(final, write_fn)
    except WriteError:
        raise
    except OSError as e:
        raise WriteError(final, e) from None


def _write_atomically(final, write_fn):
    directory = os.path.dirname(os.path.abspath(final))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's file is private; a save is an ordinary file
    try:
        write_fn(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
        try:
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def write_text_atomically(final, text, newline=None):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8", newline=newline) as f:
            f.write(text)
    write_atomically(final, write)


def clean_temporaries(directory):
    """Remove the temporary files a killed write left in ``directory``."""
    for path in glob.glob(os.path.join(glob.escape(directory), PATTERN)):
        try:
            os.remove(path)
        except OSError:
            pass
