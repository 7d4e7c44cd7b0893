"""A compiled model's loss and metrics as a Keras save writes them, and back (Keras's
``compile_config``).

The metrics are written as ``compile`` was given them (lists and dicts kept): a name as
itself, a Metric object as its ``{"class_name", "config"}``, a function as Keras writes one,
``{"class_name": "function", "config": its __name__, "registered_name": ...}``.  Reading
them back resolves every name through the registries and ``custom_objects`` (nothing is
imported); a name that nothing has is Keras's "Could not locate ..." TypeError, so a
reloaded model never evaluates with a metric or loss silently missing.
"""
import inspect

from .. import losses, metrics
from ..serialization import get_registered_name

__all__ = ["encode_metrics", "decode_metrics", "decode_loss"]

_CHOSEN_LATER = ("accuracy", "acc")  # compile picks the accuracy that fits the data


def encode_metrics(spec):
    """compile's ``metrics`` (or ``weighted_metrics``) as JSON-ready values."""
    if isinstance(spec, dict):
        return {str(k): encode_metrics(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [encode_metrics(v) for v in spec]
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, metrics.Metric):
        return metrics.serialize(spec)
    if inspect.isclass(spec):
        return metrics.REGISTRY.name_of(spec)
    if callable(spec) and hasattr(spec, "__name__"):
        return {"class_name": "function", "config": spec.__name__,
                "registered_name": get_registered_name(spec)}
    raise TypeError(f"compile's metric {spec!r} is not a name, a Metric or a function")


def decode_metrics(spec):
    """What ``encode_metrics`` wrote, as compile takes it (names stay names, so that the
    logs keep them); an unknown name raises Keras's TypeError."""
    if isinstance(spec, list):
        return [decode_metrics(v) for v in spec]
    if spec is None:
        return None
    if isinstance(spec, dict) and "class_name" not in spec:  # metrics per output
        return {k: decode_metrics(v) for k, v in spec.items()}
    if isinstance(spec, str):
        if spec not in _CHOSEN_LATER:
            metrics.REGISTRY.from_saved(spec)  # raises if nothing has the name
        return spec
    return metrics.REGISTRY.from_saved(spec)


def decode_loss(config):
    """A saved loss (a name, a config dict, or one per output of a functional model) and its
    loss weights, as compile takes them; an unknown name raises Keras's TypeError."""
    if isinstance(config, dict) and isinstance(config.get("output_losses"), list):
        # losses paired in order with the predictions of a model's own compute_loss
        return ([None if c is None else losses.REGISTRY.from_saved(c)
                 for c in config["output_losses"]], list(config.get("loss_weights") or []) or None)
    if isinstance(config, dict) and "output_losses" in config:
        per_output = {name: None if c is None else losses.REGISTRY.from_saved(c)
                      for name, c in dict(config["output_losses"]).items()}
        return per_output, dict(config.get("loss_weights") or {})
    return losses.REGISTRY.from_saved(config), None
