"""One battery for every kind's ``get``: losses, metrics, optimizers, initializers,
regularizers and activations all obey the rules in ``tapeflow.serialization``'s docstring.

Each kind is described once (``KINDS``); every test runs over all six.  What differs
between kinds on purpose (None, functions, activations having no classes) is in that
description, not in the tests.
"""
import builtins
import importlib
import inspect
from dataclasses import dataclass, field

import pytest

import tapeflow as tf
from tapeflow import activations, initializers, losses, metrics, optimizers, regularizers
from tapeflow import serialization
from tapeflow.serialization import REFUSE, fold

nn = tf.nn


def user_function(*args, **kwargs):
    """Stands for a user's loss, metric, initializer, regularizer or activation function."""
    return 0.0


@dataclass
class Kind:
    module: object
    spellings: dict                # a name as written -> the class or function it must give
    instance: object = None        # a configured object of the kind (None: the kind has no classes)
    none: object = None            # what get(None) gives; REFUSE: an error
    function: str = "itself"       # what a function gives: "itself", "wrapped" or "refused"
    typo: tuple = ()               # (a misspelt name, the name it must suggest)
    function_name: str = None      # a built-in function's name, which a config dict may not name
    config_only: tuple = field(default_factory=tuple)

    @property
    def registry(self):
        return self.module.REGISTRY

    @property
    def cls(self):
        return None if self.instance is None else type(self.instance)


KINDS = {
    "loss": Kind(
        losses,
        {"mse": losses.mean_squared_error, "MSE": losses.mean_squared_error,
         "Mse": losses.mean_squared_error, "mean_squared_error": losses.mean_squared_error,
         "MeanSquaredError": losses.MeanSquaredError, "huber": losses.huber, "Huber": losses.Huber,
         "bce": losses.binary_crossentropy, "sparse_categorical_crossentropy":
         losses.sparse_categorical_crossentropy, "LossFunctionWrapper": losses.LossFunctionWrapper},
        instance=losses.Huber(delta=0.25, reduction="sum"),
        typo=("mean_sqared_error", "mean_squared_error"), function_name="mse",
        config_only=(losses.Loss, losses.LossFunctionWrapper)),
    "metric": Kind(
        metrics,
        {"mse": metrics.MeanSquaredError, "MSE": metrics.MeanSquaredError,
         "mean_squared_error": metrics.MeanSquaredError,
         "MeanSquaredError": metrics.MeanSquaredError,
         "Mean_Squared_Error": metrics.MeanSquaredError, "acc": metrics.Accuracy,
         "binary_accuracy": metrics.BinaryAccuracy, "BinaryAccuracy": metrics.BinaryAccuracy,
         "binaryaccuracy": metrics.BinaryAccuracy, "RMSE": metrics.RootMeanSquaredError,
         "binary_crossentropy": losses.binary_crossentropy,  # a loss function's name: its mean
         "Binary_Crossentropy": losses.binary_crossentropy},
        instance=metrics.BinaryAccuracy(threshold=0.3, name="ba"), function="wrapped",
        typo=("acuracy", "accuracy"), function_name="binary_crossentropy",
        config_only=(metrics.Metric, metrics.MeanMetricWrapper)),
    "optimizer": Kind(
        optimizers,
        {"adam": optimizers.Adam, "Adam": optimizers.Adam, "ADAM": optimizers.Adam,
         "rmsprop": optimizers.RMSprop, "RMSprop": optimizers.RMSprop,
         "RMS_prop": optimizers.RMSprop,
         "sgd": optimizers.SGD, "SGD": optimizers.SGD, "Nadam": optimizers.Nadam,
         "adagrad": optimizers.Adagrad, "newton": optimizers.Newton},
        instance=optimizers.SGD(0.3, momentum=0.2), none=REFUSE, function="refused",
        typo=("adamm", "adam"), config_only=(optimizers.Optimizer,)),
    "initializer": Kind(
        initializers,
        {"he_normal": initializers.HeNormal, "HeNormal": initializers.HeNormal,
         "HENORMAL": initializers.HeNormal, "henormal": initializers.HeNormal,
         "glorot_uniform": initializers.GlorotUniform, "GlorotUniform": initializers.GlorotUniform,
         "zeros": initializers.Zeros, "Zeros": initializers.Zeros,
         "TruncatedNormal": initializers.TruncatedNormal},
        instance=initializers.HeNormal(seed=3), typo=("he_normall", "he_normal"),
        config_only=(initializers.Initializer,)),
    "regularizer": Kind(
        regularizers,
        {"l1": regularizers.L1, "L1": regularizers.L1, "l2": regularizers.L2,
         "l1_l2": regularizers.L1L2, "L1L2": regularizers.L1L2, "l1l2": regularizers.L1L2},
        instance=regularizers.L1L2(l1=0.1, l2=0.2), typo=("l1_l3", "l1_l2"),
        config_only=(regularizers.Regularizer,)),
    "activation": Kind(
        activations,
        {"relu": nn.relu, "ReLU": nn.relu, "RELU": nn.relu, "leaky_relu": nn.leaky_relu,
         "LeakyReLU": nn.leaky_relu, "LogSoftmax": nn.log_softmax, "swish": nn.silu,
         "exponential": tf.exp, "linear": activations.linear},
        none=activations.linear, typo=("rellu", "relu"), function_name="relu"),
}
kinds = pytest.mark.parametrize("kind", sorted(KINDS))


def origin(obj):
    """The class or function a ``get`` result was made from."""
    if type(obj) is metrics.MeanMetricWrapper:
        return obj._fn
    return obj if callable(obj) and not hasattr(obj, "get_config") else type(obj)


@pytest.fixture
def clean_registries():
    """Registrations made by a test are undone after it."""
    saved = {k: dict(spec.registry.custom) for k, spec in KINDS.items()}
    registered = dict(serialization._REGISTERED)
    yield
    for k, spec in KINDS.items():
        spec.registry.custom.clear()
        spec.registry.custom.update(saved[k])
    serialization._REGISTERED.clear()
    serialization._REGISTERED.update(registered)


def _user_class(spec):
    return type(f"User{spec.cls.__name__}", (spec.cls,), {})


def _user_object(spec):
    """A new class of the kind, or a new function where the kind has no classes."""
    if spec.cls is not None:
        return _user_class(spec)

    def user_activation(x):
        return x
    return user_activation


# --- one registry behind each kind ---------------------------------------------------------------
@kinds
def test_the_module_functions_are_its_registrys(kind):
    spec = KINDS[kind]
    assert isinstance(spec.registry, serialization.Registry) and spec.registry.kind == kind
    for name in ("get", "serialize", "deserialize"):
        assert getattr(spec.module, name) == getattr(spec.registry, name), name


@kinds
def test_every_builtin_is_of_its_kind(kind):
    registry = KINDS[kind].registry
    assert [name for name, obj in registry.builtins.items() if not registry.fits(obj)] == []


# --- names -------------------------------------------------------------------------------------
@kinds
def test_each_accepted_spelling(kind):
    spec = KINDS[kind]
    for name, expected in spec.spellings.items():
        assert spec.registry.lookup(name) is expected, name
        if expected in spec.config_only:
            continue
        made, again = spec.module.get(name), spec.module.get(name)
        assert origin(made) is expected, name
        if inspect.isclass(expected):
            assert made is not again, f"{name}: a name of a class gives a new instance each time"


@kinds
def test_every_known_name_works_in_any_case_and_without_underscores(kind):
    registry = KINDS[kind].registry
    known = registry.known()
    assert known == sorted(known, key=lambda k: (k.lower(), k)) and known
    by_fold = {}
    for name in known:
        by_fold.setdefault(fold(name), set()).add(id(registry.lookup(name)))
    for name in known:
        obj = registry.lookup(name)
        assert not any(obj is c for c in KINDS[kind].config_only)
        if len(by_fold[fold(name)]) == 1:
            for variant in (name.upper(), name.lower(), name.replace("_", "")):
                assert registry.lookup(variant) is obj, variant
        origin_of = origin(registry.get(name))
        assert origin_of is obj, name


@kinds
def test_a_folded_name_of_two_objects_is_ambiguous(kind):
    registry = KINDS[kind].registry
    groups = {}
    for name in registry.known():
        groups.setdefault(fold(name), {})[id(registry.lookup(name))] = name
    for folded, names in groups.items():
        if len(names) > 1:
            with pytest.raises(ValueError, match=f"Ambiguous {kind} name") as e:
                registry.get(folded.upper())
            for name in names.values():
                assert repr(name) in str(e.value)


def test_the_ambiguous_loss_names():
    with pytest.raises(ValueError, match=r"'mean_squared_error' \(function\) or "
                                         r"'MeanSquaredError' \(class\)"):
        losses.get("Mean_Squared_Error")


@kinds
def test_an_unknown_name_names_the_kind_the_closest_names_and_the_fix(kind):
    spec = KINDS[kind]
    typo, closest = spec.typo
    assert spec.registry.suggest(typo)[0] == closest
    with pytest.raises(ValueError) as e:
        spec.module.get(typo)
    message = str(e.value)
    assert message.startswith(f"Unknown {kind} '{typo}' (did you mean '{closest}'"), message
    assert f"known {spec.registry.plural}: " in message and "register your own with" in message
    assert e.value.__cause__ is None and e.value.__context__ is None


# --- classes, instances, functions, None, anything else ----------------------------------------
@kinds
def test_a_class_gives_an_instance_made_with_no_arguments(kind):
    spec = KINDS[kind]
    if spec.cls is None:
        with pytest.raises(ValueError, match=f"Could not interpret {kind} identifier"):
            spec.module.get(type("SomeClass", (), {"__call__": user_function}))
        return
    made = spec.module.get(spec.cls)
    assert type(made) is spec.cls and made.get_config() == spec.cls().get_config()
    assert spec.module.get(spec.cls) is not made
    for base in spec.config_only:
        with pytest.raises(ValueError, match="base class"):
            spec.module.get(base)


@kinds
def test_an_instance_is_returned_as_is(kind):
    spec = KINDS[kind]
    obj = spec.instance if spec.instance is not None else nn.relu
    assert spec.module.get(obj) is obj


@kinds
def test_a_function(kind):
    spec = KINDS[kind]
    if spec.function == "refused":
        with pytest.raises(ValueError, match=f"Could not interpret {kind} identifier"):
            spec.module.get(user_function)
        return
    made = spec.module.get(user_function)
    if spec.function == "itself":
        assert made is user_function
    else:
        assert type(made) is metrics.MeanMetricWrapper and made._fn is user_function


@kinds
def test_none(kind):
    spec = KINDS[kind]
    if spec.none is REFUSE:
        with pytest.raises(ValueError, match=f"None is not an? {kind}"):
            spec.module.get(None)
    else:
        assert spec.module.get(None) is spec.none


@kinds
@pytest.mark.parametrize("identifier", [42, 2.5, ["relu"], b"relu"], ids=repr)
def test_anything_else_is_not_interpreted(kind, identifier):
    with pytest.raises(ValueError, match=f"Could not interpret {kind} identifier"):
        KINDS[kind].module.get(identifier)


# --- config dicts ------------------------------------------------------------------------------
@kinds
def test_a_config_dict_round_trips(kind):
    spec = KINDS[kind]
    if spec.instance is None:  # activations are named, not configured
        assert spec.module.serialize(tf.exp) == "exponential"
        with pytest.raises(ValueError, match="names a function, not an activation class"):
            spec.module.get({"class_name": "relu", "config": {}})
        return
    config = spec.module.serialize(spec.instance)
    assert config == {"class_name": spec.cls.__name__, "config": spec.instance.get_config()}
    for identifier in (config, dict(config, class_name=config["class_name"].lower()),
                       dict(config, class_name=config["class_name"].upper()),
                       dict(config, module="keras.whatever", registered_name=config["class_name"])):
        made = spec.module.get(identifier)
        assert type(made) is spec.cls and made.get_config() == spec.instance.get_config()
        assert type(spec.module.deserialize(identifier)) is spec.cls
    with pytest.raises(ValueError, match="has the keys 'class_name' and 'config'"):
        spec.module.get(dict(config, confg={}))


@kinds
def test_a_config_dict_naming_a_function_or_an_unknown_class(kind):
    spec = KINDS[kind]
    with pytest.raises(ValueError, match=f"Unknown {kind} 'NoSuchClass'"):
        spec.module.get({"class_name": "NoSuchClass", "config": {}})
    if spec.function_name:
        with pytest.raises(ValueError, match="names a function, not a"):
            spec.module.get({"class_name": spec.function_name, "config": {}})


PATHS = [{"class_name": "os.system", "config": {"command": "echo owned"}},
         {"class_name": "system", "module": "os", "config": {"command": "echo owned"}},
         {"class_name": "x", "registered_name": "os>system", "config": {}},
         {"class_name": "tapeflow_test_get_never_imported.Thing", "config": {}},
         "os.system", "builtins.eval", "tapeflow_test_get_never_imported.Thing"]


@kinds
@pytest.mark.parametrize("identifier", PATHS, ids=repr)
def test_a_module_path_is_an_unknown_name_and_nothing_is_imported(kind, identifier, monkeypatch):
    imported = []
    real_import = builtins.__import__

    def spy(name, *args, **kwargs):
        imported.append(name)
        return real_import(name, *args, **kwargs)

    error = None
    with monkeypatch.context() as patch:
        patch.setattr(importlib, "import_module", spy)
        patch.setattr(builtins, "__import__", spy)  # last: setattr itself imports
        try:
            KINDS[kind].module.get(identifier)
        except ValueError as e:
            error = e
    assert imported == []
    assert error is not None and str(error).startswith(f"Unknown {kind} "), error


# --- the user's names ---------------------------------------------------------------------------
@kinds
def test_a_registered_user_name(kind, clean_registries):
    spec = KINDS[kind]
    obj = _user_object(spec)
    spec.registry.register(obj, name="my_thing")
    assert spec.registry.lookup("my_thing") is spec.registry.lookup("MyThing") is obj
    assert origin(spec.module.get("MYTHING")) is obj
    assert spec.registry.name_of(obj) == "my_thing" and "my_thing" in spec.registry.known()
    if spec.cls is not None:
        cls = _user_class(spec)
        spec.registry.register(cls)
        config = spec.module.serialize(cls())
        assert config["class_name"] == cls.__name__ and type(spec.module.get(config)) is cls
    with pytest.raises(ValueError, match="built-in"):
        spec.registry.register(_user_object(spec), name=next(iter(spec.spellings)).upper())
    with pytest.raises(ValueError, match="Cannot register"):
        spec.registry.register(42, name="not_callable")


@kinds
def test_register_serializable_works_for_every_kind(kind, clean_registries):
    spec = KINDS[kind]
    obj = serialization.register_serializable(package="TestGet")(_user_object(spec))
    key = f"TestGet>{obj.__name__}"
    assert spec.registry.lookup(key) is spec.registry.lookup(obj.__name__) is obj
    if spec.cls is not None:
        config = spec.module.serialize(obj())
        assert config["class_name"] == key and type(spec.module.get(config)) is obj
    else:
        assert spec.module.serialize(obj) == key and spec.module.get(key) is obj
    # a registered object of another kind is not one of this kind
    others = [other for other in KINDS.values() if other.cls is not None and other.module is not
              spec.module]
    stranger = serialization.register_serializable(package="TestGet")(_user_class(others[0]))
    with pytest.raises(ValueError, match="Unknown"):
        spec.registry.lookup(f"TestGet>{stranger.__name__}")
