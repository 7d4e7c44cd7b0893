"""Placeholders for a variable that has no value yet in converted code."""

__all__ = ["Undefined", "UndefinedReturnValue", "ld", "ld_state", "ld_composite", "set_attr",
           "set_item", "retval", "is_undefined"]


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


def ld_composite(read, name):
    """``read()`` (an attribute or item of a statement's state, ``name`` as ``d['k']``), or
    Undefined if the object has none yet (TensorFlow's ``ldu``)."""
    try:
        return read()
    except (NameError, AttributeError, KeyError, IndexError, TypeError):
        return Undefined(name)


def set_attr(obj, name, value):
    """``obj.name = value``; an Undefined value removes the attribute again (it had none)."""
    if value.__class__ is Undefined:
        if hasattr(obj, name):
            delattr(obj, name)
    else:
        setattr(obj, name, value)


def set_item(obj, key, value):
    """``obj[key] = value``; an Undefined value removes the item again (it had none)."""
    if value.__class__ is Undefined:
        if isinstance(obj, dict):
            obj.pop(key, None)
    else:
        obj[key] = value


def retval(value):
    """A converted function's result: None if it ended without a return."""
    return None if value.__class__ is UndefinedReturnValue else value
