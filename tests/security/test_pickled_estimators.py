"""Issue 21 group 1: an unfitted scikit-learn wrapper's pickle holds its model's config and
the weights that config makes (``model['weights']``); unpickling makes only those, so an
edited config is refused even under the 4 GiB cap, naming the field."""
import pickle

import pytest

from tapeflow.wrappers import SKLearnRegressor

from .test_load_model_bombs import _regressor_state, _small_model, _unpickle


def _dense(state):
    return state["model"]["tapeflow_model_spec"]["model"]["config"]["layers"][0]["config"]


def test_the_pickle_lists_the_weights_its_config_makes():
    state = _regressor_state(_small_model())
    assert state["model"]["weights"] == [[[3, 4], "float32"], [[4], "float32"]]
    model = _unpickle(state).model
    assert [tuple(w.shape) for w in model.weights] == [(3, 4), (4,)]


def test_a_config_larger_than_its_listed_weights_is_refused_under_the_cap():
    """units 4 -> 100000: a 1.2 MB kernel, far under the 4 GiB cap, that the pickle's own
    record of its weights (float32[3, 4], float32[4]) does not allow."""
    state = _regressor_state(_small_model())
    _dense(state)["units"] = 100_000
    with pytest.raises(ValueError, match=r"SKLearnRegressor \(unpickled\): the config in "
                       r"model\['tapeflow_model_spec'\] makes other weights than "
                       r"model\['weights'\] lists \(float32\[3, 4\], float32\[4\]\): "
                       r"dense.kernel: a weight of shape \(3, 100000\)"):
        _unpickle(state)


@pytest.mark.parametrize("weights, shown", [
    ([[[3, 3_000_000_000], "float32"]], "lists weights of more than 4.0 GiB"),
    ([[[3, 4], "object"]], r"holds \[\[3, 4\], 'object'\], not a \[shape, dtype\] pair"),
    ("all", "is not a list"),
])
def test_a_crafted_weights_field_is_refused_naming_it(weights, shown):
    state = _regressor_state(_small_model())
    state["model"]["weights"] = weights
    with pytest.raises(ValueError, match=rf"SKLearnRegressor \(unpickled\): "
                                         rf"model\['weights'\] {shown}"):
        _unpickle(state)


def test_a_pickle_written_before_the_list_is_held_to_the_cap():
    state = _regressor_state(_small_model())
    del state["model"]["weights"]
    model = pickle.loads(pickle.dumps(_unpickle(state))).model
    assert [tuple(w.shape) for w in model.weights] == [(3, 4), (4,)]
