"""Errors of AutoGraph: a form that cannot be converted, named by its line."""

__all__ = ["ConversionError", "located"]


class ConversionError(Exception):
    """Raised while transforming: re-raised by the converter as ``kind`` with the file and line
    of ``node`` in the user's source."""

    def __init__(self, node, message, kind=ValueError):
        super().__init__(message)
        self.lineno = getattr(node, "lineno", None)
        self.message = message
        self.kind = kind


def located(where, message, kind=ValueError):
    """``kind`` whose message starts with ``where`` ("file.py, line 12, `if`")."""
    return kind(f"{where}: {message}")
