"""Writing a file so that a kill, a full disk or a planted link never leaves it half written or
redirects it: every file tapeflow writes goes through ``write_atomically``.

The data go to a new temporary file beside the final one, made by ``mkstemp`` (``O_CREAT |
O_EXCL``: it never opens an existing path, so a symlink planted under a predictable temporary
name cannot send the write elsewhere), synced, then renamed over the final name, and the
directory synced. ``clean_temporaries`` removes what a kill left behind (``.tmp-*.part``).
"""
import glob
import os
import tempfile

__all__ = ["write_atomically", "write_text_atomically", "clean_temporaries"]

PATTERN = ".tmp-*.part"


def write_atomically(final, write_fn):
    """``write_fn(tmp_path)`` writes the whole file; then it replaces ``final``."""
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
        if os.path.exists(tmp):
            os.remove(tmp)
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
