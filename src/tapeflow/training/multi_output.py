"""A functional model of several named inputs and outputs on named data (named_sources.py):
the names checked against the model, and ``compile``'s per-output arguments as Keras takes
them (``loss={output: ...}``, ``loss_weights``, ``metrics={output: [...]}``).

In a config, ``loss`` is one loss for every output (a name, or ``{name: Huber, delta: 1}``) or
a mapping ``{output name: loss}``; ``metrics`` a list for every output or ``{output: [...]}``;
``loss_weights`` a list in the outputs' order or ``{output: weight}``.  Keras logs
``<output>_loss`` and ``<output>_<metric>`` beside the total ``loss``.
"""
import types

from .errors import ConfigError

__all__ = ["check_names", "per_output", "compile_specs", "output_view", "logged_names"]


def check_names(model, dataset, where, key):
    """Refuse data whose ``inputs``/``targets`` names are not the model's own, naming the
    config key of the first name that is unknown or missing."""
    for part, data_names, model_names in (("inputs", dataset.feature_names, model.input_names),
                                          ("targets", dataset.target_names, model.output_names)):
        kind = "input" if part == "inputs" else "output"
        for name in data_names:
            if name not in model_names:
                raise ConfigError(f"{where}: data.{part}.{name}: the model has no {kind} "
                                  f"'{name}'; its {kind}s ({key}) are {', '.join(model_names)}")
        for name in model_names:
            if name not in data_names:
                raise ConfigError(f"{where}: data.{part}: gives nothing for the model's {kind} "
                                  f"'{name}' ({key}); it maps {', '.join(data_names)}")


def per_output(spec, outputs, key, where, is_one=lambda value: not isinstance(value, dict)):
    """``{output: value}`` from a config value that is one value for every output or a
    mapping by output name (each name checked; every output given one)."""
    if is_one(spec):
        return {name: spec for name in outputs}
    for name in spec:
        if name not in outputs:
            raise ConfigError(f"{where}: {key}.{name}: the model has no output '{name}'; its "
                              f"outputs are {', '.join(outputs)}")
    for name in outputs:
        if name not in spec:
            raise ConfigError(f"{where}: {key}: gives nothing for the output '{name}'; give "
                              f"one for each of {', '.join(outputs)}")
    return {name: spec[name] for name in outputs}


def _one_loss(spec):
    """A loss's name, or its class config (``{name: Huber, ...}``), as opposed to a mapping by
    output."""
    return not isinstance(spec, dict) or isinstance(spec.get("name"), str)


def compile_specs(config, outputs, where):
    """``compile``'s loss (config specs), loss_weights and metrics (names) by output, for a
    model whose outputs are ``outputs`` (names, in order), from a RunConfig."""
    loss = per_output(config.loss, outputs, "loss", where, _one_loss)
    metrics = per_output(config.metrics, outputs, "metrics", where,
                         lambda value: isinstance(value, list))
    weights = config.loss_weights
    if isinstance(weights, list):
        if len(weights) != len(outputs):
            raise ConfigError(f"{where}: loss_weights: {len(weights)} weights for the "
                              f"{len(outputs)} outputs ({', '.join(outputs)})")
        weights = dict(zip(outputs, weights))
    elif weights is not None:
        weights = per_output(weights, outputs, "loss_weights", where)
    return {"loss": loss, "loss_weights": weights,
            "metrics": {name: list(names) for name, names in metrics.items()}}


def output_view(dataset, name):
    """``dataset`` as the one-output checks in build.py see it: the targets of ``name``."""
    def targets(y):  # one output's targets are an array (named_sources)
        return y[name] if isinstance(y, dict) else y
    return types.SimpleNamespace(n_classes=None, y_train=targets(dataset.y_train),
                                 y_test=targets(dataset.y_test), target_names=(name,))


def logged_names(outputs, metrics):
    """What a run of these outputs logs per epoch (without ``val_``), as Keras names it."""
    if len(outputs) == 1:  # Keras names one output's logs without its name
        return ["loss"] + list(metrics if isinstance(metrics, list) else metrics[outputs[0]])
    names = ["loss"] + [f"{name}_loss" for name in outputs]
    for name in outputs:
        listed = metrics if isinstance(metrics, list) else metrics.get(name, [])
        names += [f"{name}_{metric}" for metric in listed]
    return names
