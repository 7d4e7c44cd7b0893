"""Names for tapeflow's objects: one ``Registry`` type and one ``get()`` for every kind.

Each kind of named object declares its table once, in its own module
(``losses.REGISTRY``, ``metrics.REGISTRY``, ``optimizers.REGISTRY``,
``initializers.REGISTRY``, ``regularizers.REGISTRY``, ``constraints.REGISTRY``,
``activations.REGISTRY``),
and that module's ``get``, ``serialize`` and ``deserialize`` are the registry's.
User code (``compile(loss="mse")``, ``Dense(kernel_initializer="he_normal")``)
and config or checkpoint loading go through the same ``get``.

``get(identifier, custom_objects=None)``, for every kind:

- **a name** (str) is looked up as written first, in this order: ``custom_objects``,
  the kind's built-in names, names given to ``register_<kind>``, then objects of the
  kind registered with ``@register_serializable`` as "package>Name" and as "Name".
  Failing that it is compared *folded*: case and underscores ignored, so
  "mean_squared_error", "MeanSquaredError" and "MEANSQUAREDERROR" are one name, and so
  are "he_normal" and "HeNormal".  A folded name that fits two different objects is
  ambiguous and refused (for losses "Mean_Squared_Error" could be the function
  ``mean_squared_error`` or the class ``MeanSquaredError``): write it as ``known()`` does.
  "package>Name" not registered is tried as "Name".  A kind may fall back on another
  kind's names when its own give nothing (metrics read loss functions' names).
  A name of a class gives an instance made with no arguments; of a function, the
  function (as given under "a function" below).
- **an unknown name** raises one ValueError naming the kind, the name, the closest
  known names (``suggest``), every known name (``known``) and how to register one.
- **an instance** of the kind's base class is returned as is.
- **a class** of the kind (a subclass of its base class) gives an instance made with
  no arguments; the base class and classes that need arguments (``config_only``:
  LossFunctionWrapper, MeanMetricWrapper) are refused, though a config dict builds them.
- **a config dict** ``{"class_name": ..., "config": {...}}`` (Keras's "module",
  "registered_name", "build_config" and "compile_config" keys may be there, no others;
  "registered_name" is the name looked up when given, the rest are ignored) builds
  ``cls.from_config(config)``, where ``cls`` is a class of the kind found by the name
  rules above among the kind's classes only (so
  {"class_name": "huber"} is the loss class Huber, where the name "huber" alone is the
  function).  A name only a function has is refused: a config dict names a class.
  Nothing is ever imported: "os.system" is an unknown name like any other.
- **a function** (any callable that is not a class), per kind: returned as is, refused,
  or wrapped (the ``functions`` option).
- **None**, per kind (the ``none`` option): a value, or refused.
- anything else raises "Could not interpret <kind> identifier ...".

The kinds differ only in these options (as Keras's do)::

    kind         base class    None gives      a function
    loss         Loss          None            the function
    metric       Metric        None            MeanMetricWrapper(fn)
    optimizer    Optimizer     an error        an error
    initializer  Initializer   None            the function
    regularizer  Regularizer   None            the function
    constraint   Constraint    None            the function
    activation   (none)        linear          the function  (no classes, so no config dicts)

``serialize(obj)`` writes an object of the kind as ``{"class_name", "config"}`` and a
function or class as its name (``name_of``); ``deserialize`` takes either back.
``known()`` lists the names a kind accepts, ``suggest(name)`` the closest of them.

Registering: ``@register_serializable()`` (``tf.keras.saving.register_keras_serializable``)
makes a class or function of any kind loadable as "package>Name"; ``losses.register_loss``
and ``metrics.register_metric`` register under a plain name.  A user's name may not fold
to a built-in name; a user name registered again (folded) replaces the earlier object,
so re-running a notebook cell redefines the class.
"""
import difflib
import inspect
import re
import threading

__all__ = ["register_serializable", "get_registered_object", "get_registered_name",
           "custom_object_scope", "CustomObjectScope", "serialize", "deserialize", "Registry",
           "REFUSE", "fold", "could_not_locate"]

_REGISTERED = {}  # "package>Name" -> class or function, from @register_serializable
_KERAS_KEYS = ["build_config", "compile_config", "module", "registered_name"]  # read past
_REGISTER_HINT = ("@tapeflow.serialization.register_serializable() "
                  "(tf.keras.saving.register_keras_serializable)")


def snake_case(name):
    """Keras's default object names: "BatchNormalization" -> "batch_normalization"."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def fold(name):
    """A name as folded lookups compare it: "Mean_Squared_Error" -> "meansquarederror"."""
    return name.lower().replace("_", "")


class _Scopes(threading.local):
    def __init__(self):
        self.tables = []  # the open custom_object_scope dicts of this thread, innermost last


_SCOPES = _Scopes()


class CustomObjectScope:
    """Keras's ``custom_object_scope(objects)``: inside the ``with``, every ``get``,
    ``deserialize`` and ``load_model`` of this thread also finds these names (a dict of name ->
    class or function), as if each call were given them in ``custom_objects``."""

    def __init__(self, custom_objects):
        if not isinstance(custom_objects, dict):
            raise TypeError(f"custom_object_scope takes a dict of name -> class or function, "
                            f"got {type(custom_objects).__name__}")
        self.custom_objects = dict(custom_objects)

    def __enter__(self):
        _SCOPES.tables.append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        tables = _SCOPES.tables
        del tables[max(i for i, t in enumerate(tables) if t is self.custom_objects)]
        return False


custom_object_scope = CustomObjectScope


def could_not_locate(name, config, kind="class"):
    """Keras's error for a saved name that nothing registered or given in custom_objects has."""
    return TypeError(f"Could not locate {kind} '{name}'. Make sure custom classes are decorated "
                     f"with `@keras.saving.register_keras_serializable()`. Full object config: "
                     f"{config}")


def register_serializable(package="Custom", name=None):
    """Decorator: make a class or function loadable by name ("package>Name") from a saved config."""
    def decorate(obj):
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        key = f"{package}>{name or obj.__name__}"
        existing = _REGISTERED.get(key)
        if existing is not None and existing.__qualname__ != obj.__qualname__:
            raise ValueError(f"'{key}' is already registered to {existing!r}")
        _REGISTERED[key] = obj
        obj._registered_name = key
        return obj
    return decorate


def get_registered_name(obj):
    """The name a class (or an instance's class) or function is saved under."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        obj = type(obj)
    return vars(obj).get("_registered_name", obj.__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    """Keras's lookup: what ``name`` names in ``custom_objects``, ``module_objects`` or the
    ``register_serializable`` table, by the name rules of this module; None if nothing does."""
    return Registry("object", module_objects or {}, base=object).find(name, custom_objects)


def serialize(obj):
    """{"class_name": ..., "config": ...} for an object with get_config."""
    return {"class_name": get_registered_name(obj), "config": obj.get_config()}


def deserialize(config, module_objects, custom_objects=None, kind="object"):
    """The object a ``serialize`` dict describes, its class found among ``module_objects``
    (a kind without a registry of its own: layers), ``custom_objects`` and the registered."""
    registry = Registry(kind, module_objects, base=object,
                        register_hint=_REGISTER_HINT + " or pass custom_objects")
    return registry.deserialize(config, custom_objects)


class _Refuse:
    def __repr__(self):
        return "REFUSE"


REFUSE = _Refuse()  # Registry(none=REFUSE): get(None) is an error


def _article(word):
    return f"an {word}" if word[0].lower() in "aeiou" else f"a {word}"


class Registry:
    """The names of one kind of object, and its ``get`` / ``serialize`` / ``deserialize``.

    ``builtins`` maps names to classes and functions; ``base`` is the kind's base class
    (None: the kind has no classes); ``functions`` says what a function gives: True
    itself, False an error, or a callable ``wrap(fn, name=...)``; ``none`` is what None
    gives (``REFUSE``: an error); ``config_only`` are classes only a config dict builds;
    ``fallback`` are registries whose names are read when this one's give nothing.
    """

    def __init__(self, kind, builtins, *, base=None, functions=True, none=None, config_only=(),
                 fallback=(), register_hint=_REGISTER_HINT):
        self.kind = kind
        self.plural = kind + ("es" if kind.endswith("s") else "s")
        self.base = base
        self.functions = functions
        self.none = none
        self.config_only = tuple(config_only) + ((base,) if base is not None else ())
        self.fallback = tuple(fallback)
        self.register_hint = register_hint
        self.builtins = dict(builtins)
        self.custom = {}  # the user's names, from register()

    # --- what belongs to the kind ------------------------------------------------------------
    def fits(self, obj):
        """Whether ``obj`` is a class or function of this kind."""
        if inspect.isclass(obj):
            return self.base is not None and issubclass(obj, self.base)
        return self.functions is not False and callable(obj)

    def _is_class(self, obj):
        return inspect.isclass(obj) and self.fits(obj)

    def _entries(self, custom_objects, fits):
        """(name, object) pairs of this kind, in the order exact names are looked up."""
        scoped = tuple(reversed(_SCOPES.tables))
        for table in (custom_objects or {},) + scoped + (self.builtins, self.custom, _REGISTERED):
            yield from ((k, o) for k, o in table.items() if fits(o))
        yield from ((k.rpartition(">")[2], o) for k, o in _REGISTERED.items() if fits(o))

    def _named(self, fits):
        """Every (name, object) get() can reach: this kind's, then its fallbacks'."""
        pairs = list(self._entries(None, fits))
        for registry in self.fallback:
            pairs += registry._named(fits)
        return pairs

    def _candidates(self, name, custom_objects=None, fits=None):
        """[(name, object)] for ``name``: one exact match, or each object a folded match gives."""
        fits = fits or self.fits
        entries = list(self._entries(custom_objects, fits))
        spellings = list(dict.fromkeys((name, name.rpartition(">")[2])))
        for spelling in spellings:
            for key, obj in entries:
                if key == spelling:
                    return [(key, obj)]
        for spelling in spellings:
            found = {}
            for key, obj in entries:
                if fold(key) == fold(spelling):
                    found.setdefault(id(obj), (key, obj))
            if found:
                return list(found.values())
        for registry in self.fallback:
            found = registry._candidates(name, None, fits)
            if found:
                return found
        return []

    # --- names ---------------------------------------------------------------------------------
    def find(self, name, custom_objects=None, fits=None):
        """The class or function ``name`` gives, or None when it is unknown or ambiguous."""
        found = self._candidates(name, custom_objects, fits)
        return found[0][1] if len(found) == 1 else None

    def lookup(self, name, custom_objects=None, fits=None):
        """The class or function ``name`` gives (of those ``fits`` accepts, by default all of
        the kind); a ValueError that says the fix when none does."""
        found = self._candidates(name, custom_objects, fits)
        if len(found) == 1:
            return found[0][1]
        if found:
            options = " or ".join(f"{key!r} ({'class' if inspect.isclass(obj) else 'function'})"
                                  for key, obj in found)
            raise ValueError(f"Ambiguous {self.kind} name {name!r}: it could be {options}; "
                             f"write one of them as it is spelled here")
        close = self.suggest(name)
        did_you_mean = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"Unknown {self.kind} {name!r}{did_you_mean}; known {self.plural}: "
                         f"{', '.join(self.known())}; register your own with {self.register_hint}")

    def known(self):
        """The names get() accepts, one spelling per folded name and object, sorted."""
        spelled = {}
        for key, obj in self._named(self.fits):
            if not any(obj is c for c in self.config_only):
                spelled.setdefault((fold(key), id(obj)), key)
        return sorted(set(spelled.values()), key=lambda key: (key.lower(), key))

    def suggest(self, name, n=3):
        """The known names closest to ``name`` (compared folded), closest first."""
        by_fold = {}
        for key in self.known():
            by_fold.setdefault(fold(key), key)
        return [by_fold[f] for f in difflib.get_close_matches(fold(name), list(by_fold), n=n)]

    def name_of(self, obj):
        """The name ``serialize`` writes for a class or function: the user's registered name,
        the "package>Name" of register_serializable, its __name__ (where that finds it back),
        else its built-in name; an unregistered object gets its __name__ (loading it fails)."""
        for key, o in self.custom.items():
            if o is obj:
                return key
        registered = getattr(obj, "__dict__", {}).get("_registered_name")
        if registered:
            return registered
        name = getattr(obj, "__name__", None)
        if name and self.find(name) is obj:
            return name
        for key, o in self.builtins.items():
            if o is obj:
                return key
        return name or type(obj).__name__

    def register(self, obj=None, *, name=None):
        """Register ``obj`` (a class or function of the kind) under ``name`` or its __name__;
        usable as ``@register`` and ``@register(name=...)``."""
        def register(o):
            if not self.fits(o):
                raise ValueError(f"Cannot register {o!r} as {_article(self.kind)}: "
                                 f"expected {self._accepted(names=False)}")
            key = name or getattr(o, "__name__", None)
            if not key:
                raise ValueError(f"Registering {o!r} as {_article(self.kind)} needs a name")
            taken = [k for k in self.builtins if fold(k) == fold(key)]
            if taken:
                raise ValueError(f"'{key}' is a built-in {self.kind} name ({taken[0]!r}); "
                                 f"register under another name")
            for k in [k for k in self.custom if fold(k) == fold(key)]:
                del self.custom[k]
            self.custom[key] = o
            return o
        return register if obj is None else register(obj)

    def from_saved(self, config, custom_objects=None):
        """What a saved file names: a class or function by its name (as written, or Keras's
        ``{"class_name": "function", "config": name}``), or an object by its config dict.  A name
        nothing registered, built in or in ``custom_objects`` has is Keras's TypeError "Could not
        locate ...", never skipped."""
        if isinstance(config, dict):
            is_function = config.get("class_name") == "function"
            name = config.get("registered_name")
            if not isinstance(name, str):
                name = config.get("config") if is_function else config.get("class_name")
        else:
            is_function, name = True, config
        if not isinstance(name, str):
            raise ValueError(f"A saved {self.kind} is a name or a config dict, got {config!r}")
        fits = None if is_function else self._is_class
        if not self._candidates(name, custom_objects, fits):
            raise could_not_locate(name, config, "function" if is_function else "class")
        if is_function:
            return self.lookup(name, custom_objects)
        return self.deserialize(config, custom_objects)

    # --- get, serialize, deserialize --------------------------------------------------------------
    def get(self, identifier, custom_objects=None):
        """An object of this kind from a name, a config dict, an object, a class, a function or
        None, by the rules of ``tapeflow.serialization``'s docstring."""
        if identifier is None:
            if self.none is REFUSE:
                raise ValueError(f"None is not {_article(self.kind)}: give {self._accepted()}")
            return self.none
        if self.base is not None and isinstance(identifier, self.base):
            return identifier
        if isinstance(identifier, str):
            return self._build(self.lookup(identifier, custom_objects), identifier)
        if isinstance(identifier, dict):
            return self.deserialize(identifier, custom_objects)
        if callable(identifier) and self.fits(identifier):
            return self._build(identifier, None)
        raise ValueError(f"Could not interpret {self.kind} identifier {identifier!r}: "
                         f"expected {self._accepted()}")

    def _build(self, obj, name):
        if inspect.isclass(obj):
            if any(obj is c for c in self.config_only):
                raise ValueError(f"{obj.__name__} is a base class, not made without arguments: "
                                 f"give an object made with them, a subclass, or a config dict")
            return obj()
        return obj if self.functions is True else self.functions(obj, name=name)

    def _accepted(self, names=True):
        """What get() takes, in words (names=False: what register() takes)."""
        parts = ["a name"] if names else []
        if self.base is not None:
            parts += ["a config dict"] if names else []
            parts.append(f"{_article(self.base.__name__)} object or class")
        if self.functions is not False:
            parts.append("a function")
        if names and self.none is not REFUSE:
            parts.append("None")
        return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]

    def serialize(self, obj):
        """An object of the kind as {"class_name", "config"}; a class or function as its name."""
        if obj is None:
            return None
        if self.base is not None and isinstance(obj, self.base):
            return {"class_name": self.name_of(type(obj)), "config": obj.get_config()}
        return self.name_of(obj)

    def deserialize(self, config, custom_objects=None):
        """What ``serialize`` wrote: a name (as get) or a config dict naming a class of the kind."""
        if isinstance(config, str):
            return self.get(config, custom_objects)
        if not (isinstance(config, dict) and isinstance(config.get("class_name"), str)):
            raise ValueError(f"{_article(self.kind).capitalize()} config is a name or a dict "
                             f"{{'class_name': ..., 'config': {{...}}}}, got {config!r}")
        extra = set(config) - {"class_name", "config", *_KERAS_KEYS}
        inner = config.get("config") or {}
        if extra or not isinstance(inner, dict):
            raise ValueError(f"{_article(self.kind).capitalize()} config has the keys 'class_name' "
                             f"and 'config' (a dict), and Keras's {', '.join(_KERAS_KEYS)}; "
                             f"got {config!r}")
        name = config.get("registered_name")
        name = name if isinstance(name, str) else config["class_name"]
        if not self._candidates(name, custom_objects, self._is_class) \
                and self.find(name, custom_objects) is not None:
            base = self.base.__name__ if self.base is not None else self.kind
            raise ValueError(f"{name!r} names a function, not {_article(base)} class: a config "
                             f"dict names a class (give a function by its name)")
        cls = self.lookup(name, custom_objects, self._is_class)
        from_config = cls.from_config
        if custom_objects is not None and \
                "custom_objects" in inspect.signature(from_config).parameters:
            return from_config(dict(inner), custom_objects=custom_objects)
        return from_config(dict(inner))
