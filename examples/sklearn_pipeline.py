"""California housing as one scikit-learn Pipeline: StandardScaler -> a tapeflow network,
its learning rate tuned by GridSearchCV, beside HistGradientBoostingRegressor as a baseline.

    SCIKIT_LEARN_DATA=../shared/data/scikit_learn_data python examples/sklearn_pipeline.py [--quick]

The network is the seed's Dense(30, relu) -> Dense(1) with MSE, built by a function that
``tf.keras.wrappers.SKLearnRegressor`` calls at each fit; ``model_kwargs__learning_rate`` is
an ordinary scikit-learn parameter, and the grid search runs its fits in two processes.
Prints each model's test MSE on the seed's split.  ``--quick`` trains on a subsample for
two epochs (the test runs it that way).
"""
import argparse
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("SCIKIT_LEARN_DATA", str(ROOT.parent / "shared" / "data" / "scikit_learn_data"))

from sklearn.datasets import fetch_california_housing  # noqa: E402
from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from sklearn.metrics import mean_squared_error  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import tapeflow as tf  # noqa: E402


def build_network(X, y, units=30, learning_rate=1e-3):
    """The seed's network for ``X``'s width, compiled with Adam at ``learning_rate``."""
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=X.shape[1:]),
                                 tf.keras.layers.Dense(units, activation="relu"),
                                 tf.keras.layers.Dense(y.shape[1])])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss="mse")
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2,000 training rows, 2 epochs, 2 folds (a smoke test)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()

    housing = fetch_california_housing()
    x_train, x_test, y_train, y_test = train_test_split(housing.data, housing.target,
                                                        random_state=42)
    epochs, folds = args.epochs, 3
    if args.quick:
        rows = np.random.default_rng(0).choice(len(y_train), 2000, replace=False)
        x_train, y_train, epochs, folds = x_train[rows], y_train[rows], 2, 2

    network = Pipeline([
        ("scale", StandardScaler()),
        ("net", tf.keras.wrappers.SKLearnRegressor(
            build_network, model_kwargs={"units": 30},
            fit_kwargs={"epochs": epochs, "batch_size": 32}, random_state=42))])
    search = GridSearchCV(network, {"net__model_kwargs__learning_rate": [1e-3, 3e-3]},
                          cv=folds, n_jobs=args.n_jobs, scoring="neg_mean_squared_error")
    search.fit(x_train, y_train)
    for rate, score in zip(search.cv_results_["param_net__model_kwargs__learning_rate"],
                           search.cv_results_["mean_test_score"]):
        print(f"learning rate {rate:g}: cross-validated MSE {-score:.4f}")
    print(f"best: {search.best_params_}")

    baseline = HistGradientBoostingRegressor(random_state=42).fit(x_train, y_train)
    for name, model in [("tapeflow network (tuned)", search.best_estimator_),
                        ("HistGradientBoostingRegressor", baseline)]:
        print(f"{name} test MSE: {mean_squared_error(y_test, model.predict(x_test)):.4f}")


if __name__ == "__main__":
    main()
