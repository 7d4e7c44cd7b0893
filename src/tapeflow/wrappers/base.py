"""What the three scikit-learn wrappers share: parameters, the model's making, seeding, pickling.

As Keras 3's ``keras.wrappers``: ``model`` is a tapeflow model or a function building one
(called as ``model(X=X, y=y, **model_kwargs)``), ``fit_kwargs`` go to ``model.fit``.  A model
instance is cloned from its config at every ``fit`` (fresh weights, compiled as it was),
never trained in place, so ``clone`` and grid searches see the same starting point.  With an
int ``random_state`` a fit draws every random number (initial weights, shuffling, dropout)
from that seed and then puts the caller's random state back: the same seed, bitwise the
same weights.
"""
import contextlib

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..models import Model
from ..ops.random import restore_state, set_seed, snapshot_state
from .model_io import (model_bytes, model_from_bytes, model_from_pickled_spec, model_from_spec,
                       model_spec, weight_list)

__all__ = ["SKLBase", "seeded"]

DICT_PARAMS = ("model_kwargs", "fit_kwargs")
FLOATS = [np.float32, np.float64]  # ints become float32; float64 stays (a float64 model)
_SAVED = "tapeflow_keras_save"    # a pickled wrapper's models, as data
_SPEC = "tapeflow_model_spec"
_WEIGHTS = "weights"               # beside the spec: the weights it makes ([shape, dtype])


@contextlib.contextmanager
def seeded(seed):
    """Draw from ``seed`` inside, then give the caller's random state back (None: the
    caller's random state is used, and moves on, as Keras's fit)."""
    if seed is None:
        yield
        return
    saved = snapshot_state()
    set_seed(seed)
    try:
        yield
    finally:
        restore_state(saved)


class SKLBase(BaseEstimator):
    """The shared half of SKLearnRegressor / SKLearnClassifier / SKLearnTransformer."""

    def __init__(self, model, model_kwargs=None, fit_kwargs=None, random_state=None):
        self.model = model
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs
        self.random_state = random_state

    # --- parameters: the dicts' entries are parameters too (fit_kwargs__epochs) ---------------
    def get_params(self, deep=True):
        params = super().get_params(deep=deep)
        if deep:
            for name in DICT_PARAMS:
                if isinstance(params.get(name), dict):
                    params.update({f"{name}__{k}": v for k, v in params[name].items()})
        return params

    def set_params(self, **params):
        nested = {}
        for key in list(params):
            head, sep, tail = key.partition("__")
            if sep and head in DICT_PARAMS:
                nested.setdefault(head, {})[tail] = params.pop(key)
        super().set_params(**params)
        for head, entries in nested.items():
            current = getattr(self, head)
            if current is not None and not isinstance(current, dict):
                raise ValueError(f"{type(self).__name__}.set_params: {head} is {current!r}, not a "
                                 f"dict, so {head}__{next(iter(entries))} cannot be set")
            # a new dict: a clone shares its dicts with the estimator it was cloned from
            setattr(self, head, {**(current or {}), **entries})
        return self

    # --- fit ----------------------------------------------------------------------------------
    def _fit(self, X, target, **kwargs):
        """Make the model (seeded), fit it on ``X`` and ``self._fit_target(model, target)``."""
        fit_kwargs = {"verbose": 0, **(self.fit_kwargs or {}), **kwargs}
        with seeded(self._seed()):
            model = self._make_model(X, target)
            if getattr(model, "optimizer", None) is None:
                model.compile(optimizer="adam", loss=self._default_loss(model, target))
            history = model.fit(X, self._fit_target(model, target), **fit_kwargs)
        self.model_ = model
        self.history_ = {k: list(v) for k, v in history.history.items()}
        return self

    def _seed(self):
        if self.random_state is None or isinstance(self.random_state, (int, np.integer)):
            return self.random_state
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _make_model(self, X, target):
        name = type(self).__name__
        if isinstance(self.model, Model):
            if self.model_kwargs:
                raise ValueError(f"{name}: model_kwargs are arguments of a function building "
                                 f"the model, but model is a model instance")
            return model_from_spec(model_spec(self.model))
        if not callable(self.model):
            raise TypeError(f"{name}: model must be a tapeflow model or a function building one, "
                            f"got {type(self.model).__name__}")
        model = self.model(X=X, y=target, **(self.model_kwargs or {}))
        if not isinstance(model, Model):
            raise TypeError(f"{name}: the model function returned {type(model).__name__}, not a "
                            f"tapeflow model")
        return model

    def _fit_target(self, model, target):
        return target

    def _default_loss(self, model, target):
        return "mean_squared_error"

    # --- predict ------------------------------------------------------------------------------
    def _outputs(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=FLOATS)
        return np.asarray(self.model_.predict(X, verbose=0))

    def __sklearn_is_fitted__(self):
        return hasattr(self, "model_")

    # --- pickling: models as a Keras save's bytes (fitted) or their config (the parameter) ----
    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: BaseEstimator's may be our __dict__
        if isinstance(state.get("model"), Model):
            state["model"] = {_SPEC: model_spec(state["model"]),
                              _WEIGHTS: weight_list(state["model"])}
        if "model_" in state:
            state["model_"] = {_SAVED: model_bytes(state["model_"])}
        return state

    def __setstate__(self, state):
        state = dict(state)
        if isinstance(state.get("model"), dict) and _SPEC in state["model"]:
            # its weights are never used (fit clones it): keep the caller's draws; a pickle is
            # data from elsewhere, so its config may make only the weights it lists
            with seeded(0):
                state["model"] = model_from_pickled_spec(
                    state["model"][_SPEC], state["model"].get(_WEIGHTS),
                    f"{type(self).__name__} (unpickled)")
        if isinstance(state.get("model_"), dict) and _SAVED in state["model_"]:
            state["model_"] = model_from_bytes(state["model_"][_SAVED])
        super().__setstate__(state)


def output_units(model, n_features):
    """The width of the model's (one) output for inputs of ``n_features`` columns."""
    shape = model.compute_output_shape((None, n_features))
    if not isinstance(shape, tuple) or not shape or isinstance(shape[0], (tuple, list)):
        raise ValueError(f"the scikit-learn wrappers need a model with one output; "
                         f"{model.name} has outputs of shapes {shape}")
    return 1 if len(shape) == 1 else int(shape[-1])
