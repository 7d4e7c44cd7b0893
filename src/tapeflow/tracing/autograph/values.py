"""Placeholders for a variable that has no value yet in converted code."""

__all__ = ["Undefined", "UndefinedReturnValue", "ld", "ld_state", "retval", "is_undefined"]


class Undefined:
    """The value of variable ``name`` before its first assignment (converted code declares every
    variable a statement assigns up front, so that the statement's functions can share it)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Undefined({self.name!r})"


class UndefinedReturnValue:
    """The return value of a converted function before any ``return`` ran."""

    __slots__ = ()

    def __repr__(self):
        return "UndefinedReturnValue()"


def is_undefined(value):
    return isinstance(value, (Undefined, UndefinedReturnValue))


def ld(value):
    """A read of a variable the converter declared up front: unbound is still an error."""
    if value.__class__ is Undefined:
        raise UnboundLocalError(f"'{value.name}' is used before assignment")
    return value


def ld_state(read, name):
    """``read()`` (a variable of a statement's state), or Undefined if it is unbound."""
    try:
        return read()
    except NameError:   # ``del x`` inside the statement
        return Undefined(name)


def retval(value):
    """A converted function's result: None if it ended without a return."""
    return None if value.__class__ is UndefinedReturnValue else value
