"""One entry per loss configuration: the Loss object, its function form, the numpy
reference, and how to draw (y_true, y_pred) for it."""
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tapeflow as tf

from . import references as ref


def regression(rng, n, d):
    return rng.standard_normal((n, d)), rng.standard_normal((n, d))


def binary_probabilities(rng, n, d):
    return (rng.random((n, d)) > 0.5).astype(float), rng.uniform(0.05, 0.95, (n, d))


def binary_logits(rng, n, d):
    return (rng.random((n, d)) > 0.5).astype(float), 3 * rng.standard_normal((n, d))


def one_hot_probabilities(rng, n, d):
    return np.eye(d)[rng.integers(0, d, n)], rng.uniform(0.1, 1.0, (n, d))


def one_hot_logits(rng, n, d):
    return np.eye(d)[rng.integers(0, d, n)], 3 * rng.standard_normal((n, d))


def soft_labels_probabilities(rng, n, d):
    return rng.dirichlet(np.ones(d), n), rng.uniform(0.1, 1.0, (n, d))


def sparse_probabilities(rng, n, d):
    return rng.integers(0, d, n), rng.uniform(0.1, 1.0, (n, d))


def sparse_logits(rng, n, d):
    return rng.integers(0, d, n), 3 * rng.standard_normal((n, d))


def signed_labels(rng, n, d):
    return rng.choice([-1.0, 1.0], (n, d)), rng.standard_normal((n, d))


def counts_and_rates(rng, n, d):
    return rng.poisson(2.0, (n, d)).astype(float), rng.uniform(0.1, 3.0, (n, d))


def distributions(rng, n, d):
    return rng.dirichlet(np.ones(d), n), rng.uniform(0.05, 0.95, (n, d))


def one_hot_scores(rng, n, d):
    return np.eye(d)[rng.integers(0, d, n)], rng.standard_normal((n, d))


@dataclass(frozen=True)
class LossCase:
    name: str
    make: Callable          # (**overrides) -> Loss object
    function: Callable      # per-sample function form
    kwargs: dict            # the function form's keyword arguments
    reference: Callable     # numpy per-sample formula
    draw: Callable          # (rng, n, d) -> (y_true, y_pred)
    smooth: bool = True     # C^2 where the data lies: second derivatives are checked
    labels_differentiable: bool = True
    ref_kwargs: dict = field(default_factory=dict)

    def __str__(self):
        return self.name

    def make64(self, **overrides):
        """The Loss computing in float64 (Keras's ``dtype`` argument): the references and
        finite differences are float64, while ``dtype=None`` computes in floatx (float32)."""
        return self.make(dtype="float64", **overrides)


CASES = [
    LossCase("mse", tf.losses.MeanSquaredError, tf.losses.mean_squared_error, {}, ref.mse,
             regression),
    LossCase("mae", tf.losses.MeanAbsoluteError, tf.losses.mean_absolute_error, {}, ref.mae,
             regression, smooth=False),
    LossCase("huber", lambda **kw: tf.losses.Huber(delta=0.7, **kw), tf.losses.huber,
             {"delta": 0.7}, ref.huber, regression, ref_kwargs={"delta": 0.7}),
    LossCase("bce", tf.losses.BinaryCrossentropy, tf.losses.binary_crossentropy, {},
             ref.binary_crossentropy, binary_probabilities),
    LossCase("bce_smoothed", lambda **kw: tf.losses.BinaryCrossentropy(label_smoothing=0.2, **kw),
             tf.losses.binary_crossentropy, {"label_smoothing": 0.2}, ref.binary_crossentropy,
             binary_probabilities, ref_kwargs={"label_smoothing": 0.2}),
    LossCase("bce_logits", lambda **kw: tf.losses.BinaryCrossentropy(from_logits=True, **kw),
             tf.losses.binary_crossentropy, {"from_logits": True}, ref.binary_crossentropy,
             binary_logits, ref_kwargs={"from_logits": True}),
    LossCase("cce", tf.losses.CategoricalCrossentropy, tf.losses.categorical_crossentropy, {},
             ref.categorical_crossentropy, one_hot_probabilities),
    LossCase("cce_soft_labels", tf.losses.CategoricalCrossentropy, tf.losses.categorical_crossentropy,
             {}, ref.categorical_crossentropy, soft_labels_probabilities),
    LossCase("cce_logits_smoothed",
             lambda **kw: tf.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, **kw),
             tf.losses.categorical_crossentropy, {"from_logits": True, "label_smoothing": 0.1},
             ref.categorical_crossentropy, one_hot_logits,
             ref_kwargs={"from_logits": True, "label_smoothing": 0.1}),
    LossCase("scce", tf.losses.SparseCategoricalCrossentropy, tf.losses.sparse_categorical_crossentropy,
             {}, ref.sparse_categorical_crossentropy, sparse_probabilities, labels_differentiable=False),
    LossCase("scce_logits", lambda **kw: tf.losses.SparseCategoricalCrossentropy(from_logits=True, **kw),
             tf.losses.sparse_categorical_crossentropy, {"from_logits": True},
             ref.sparse_categorical_crossentropy, sparse_logits, labels_differentiable=False,
             ref_kwargs={"from_logits": True}),
    LossCase("hinge", tf.losses.Hinge, tf.losses.hinge, {}, ref.hinge, signed_labels,
             smooth=False),
    LossCase("hinge_binary_labels", tf.losses.Hinge, tf.losses.hinge, {}, ref.hinge,
             binary_logits, smooth=False, labels_differentiable=False),
    LossCase("squared_hinge", tf.losses.SquaredHinge, tf.losses.squared_hinge, {},
             ref.squared_hinge, signed_labels, smooth=False),
    LossCase("categorical_hinge", tf.losses.CategoricalHinge, tf.losses.categorical_hinge, {},
             ref.categorical_hinge, one_hot_scores, smooth=False),
    LossCase("kl_divergence", tf.losses.KLDivergence, tf.losses.kl_divergence, {},
             ref.kl_divergence, distributions),
    LossCase("poisson", tf.losses.Poisson, tf.losses.poisson, {}, ref.poisson, counts_and_rates),
    LossCase("log_cosh", tf.losses.LogCosh, tf.losses.log_cosh, {}, ref.log_cosh, regression),
    LossCase("cosine_similarity", tf.losses.CosineSimilarity, tf.losses.cosine_similarity, {},
             ref.cosine_similarity, regression),
]
