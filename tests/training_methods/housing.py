"""The seed's California housing split and scaling, loaded once per test session."""
import functools

import numpy as np
from sklearn.datasets import fetch_california_housing
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


@functools.lru_cache(maxsize=1)
def housing_split():
    housing = fetch_california_housing(download_if_missing=False)
    x_train_full, x_test, y_train_full, y_test = train_test_split(
        housing.data, housing.target.reshape(-1, 1), random_state=42)
    x_train, x_valid, y_train, y_valid = train_test_split(x_train_full, y_train_full,
                                                          random_state=42)
    scaler = StandardScaler()
    return {"x_train": scaler.fit_transform(x_train), "y_train": y_train,
            "x_valid": scaler.transform(x_valid), "y_valid": y_valid,
            "x_test": scaler.transform(x_test), "y_test": y_test}


def float32(split):
    return {k: v.astype(np.float32) for k, v in split.items()}
