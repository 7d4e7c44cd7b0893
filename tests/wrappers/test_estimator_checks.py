"""scikit-learn's own estimator checks on the regressor and the classifier."""
from sklearn.utils.estimator_checks import parametrize_with_checks

import tapeflow as tf

from .builders import regression_mlp, softmax_classifier

FIT = {"epochs": 20, "batch_size": 32}
# None: with random_state a fit is bitwise reproducible, so check_fit_idempotent and the
# sample-order / subset / data-not-an-array checks hold (Keras 3 lists check_fit_idempotent
# as failing).  An entry here would read {"check_name": "why it cannot pass"}.
EXPECTED_FAILURES = {}


class Builder:
    """A model function whose repr is its name: the checks' test ids hold the estimator's repr,
    and a function's holds its address, which differs between pytest-xdist's workers."""

    def __init__(self, build):
        self.build = build

    def __call__(self, **kwargs):
        return self.build(**kwargs)

    def __repr__(self):
        return self.build.__name__


@parametrize_with_checks(
    [tf.keras.wrappers.SKLearnRegressor(Builder(regression_mlp), fit_kwargs=FIT, random_state=0),
     tf.keras.wrappers.SKLearnClassifier(Builder(softmax_classifier), fit_kwargs=FIT, random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILURES)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
