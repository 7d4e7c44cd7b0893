"""The saved format's two errors, apart from ``format`` so that the modules it uses can raise
them without importing it."""

__all__ = ["LoadError", "SaveError"]


class LoadError(ValueError):
    """A saved file that is damaged, altered, too large, or not a tapeflow save."""


class SaveError(ValueError):
    """Something that the format cannot hold (an attribute of an unknown type, ...)."""
