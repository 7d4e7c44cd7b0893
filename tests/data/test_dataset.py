"""tf.data.Dataset: sources, transformations, specs, cardinality and seeded randomness."""
import numpy as np
import pytest

import tapeflow as tf

Dataset = tf.data.Dataset


def values(ds):
    return [tf.nest.map_structure(lambda a: np.asarray(a).tolist(), v)
            for v in ds.as_numpy_iterator()]


def test_from_tensor_slices_keeps_the_structure_and_dtypes():
    x = np.arange(12, dtype=np.float64).reshape(6, 2)
    ds = Dataset.from_tensor_slices({"x": x, "label": [0, 1, 0, 1, 1, 0]})
    first = next(iter(ds))
    assert set(first) == {"x", "label"} and isinstance(first["x"], tf.Tensor)
    assert first["x"].dtype == tf.float64 and first["label"].dtype == tf.int32
    assert ds.element_spec["x"] == tf.TensorSpec((2,), tf.float64)
    assert len(ds) == 6 and ds.cardinality() == 6
    with pytest.raises(ValueError, match="different first dimensions"):
        Dataset.from_tensor_slices((np.zeros((3, 1)), np.zeros(4)))


def test_from_tensors_and_range():
    assert values(Dataset.from_tensors([1.0, 2.0])) == [[1.0, 2.0]]
    assert values(Dataset.range(2, 11, 3)) == [2, 5, 8]
    assert Dataset.range(5).element_spec == tf.TensorSpec((), tf.int64)


def test_batch_with_and_without_remainder():
    ds = Dataset.range(7)
    assert values(ds.batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(ds.batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert ds.batch(3).element_spec.shape == (None,)
    assert ds.batch(3, drop_remainder=True).element_spec.shape == (3,)
    assert len(ds.batch(3)) == 3 and len(ds.batch(3, drop_remainder=True)) == 2
    assert values(ds.batch(3).unbatch()) == list(range(7))


def test_map_is_traced_unpacks_tuples_and_gives_its_spec():
    calls = []

    def scale(x, y):
        calls.append(1)                 # runs at trace time only
        return x * 2.0, y + 1
    ds = Dataset.from_tensor_slices((np.ones((5, 3), np.float32), np.arange(5)))
    mapped = ds.map(scale, num_parallel_calls=tf.data.AUTOTUNE)
    out = values(mapped)
    assert out[4] == ([2.0, 2.0, 2.0], 5)
    assert len(calls) <= 3              # traced (spec and first call), then replayed
    assert mapped.element_spec[0] == tf.TensorSpec((3,), tf.float32)


def test_map_that_needs_python_values_runs_eagerly():
    def by_value(v):
        return v * 10 if int(v.numpy()) % 2 else v
    assert values(Dataset.range(4).map(by_value)) == [0, 10, 2, 30]


def test_filter_take_skip_repeat_concatenate_enumerate_zip():
    ds = Dataset.range(10)
    assert values(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    assert ds.filter(lambda v: v > 2).cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert values(ds.skip(7)) == [7, 8, 9] and values(ds.take(2)) == [0, 1]
    assert values(ds.take(2).repeat(2)) == [0, 1, 0, 1]
    assert ds.repeat().cardinality() == tf.data.INFINITE_CARDINALITY
    assert values(ds.repeat().take(12))[-2:] == [0, 1]
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    assert values(ds.take(2).concatenate(ds.skip(8))) == [0, 1, 8, 9]
    assert values(Dataset.range(2).enumerate(5)) == [(5, 0), (6, 1)]
    zipped = Dataset.zip((Dataset.range(3), Dataset.range(10, 20)))
    assert values(zipped) == [(0, 10), (1, 11), (2, 12)] and len(zipped) == 3
    assert values(Dataset.range(0).repeat()) == []     # empty forever is empty, not a hang


def test_shuffle_follows_the_global_seed_and_reshuffles_each_epoch():
    ds = Dataset.range(20).shuffle(20)
    tf.random.set_seed(3)
    first, second = values(ds), values(ds)
    tf.random.set_seed(3)
    assert values(ds) == first and values(ds) == second
    assert first != second and sorted(first) == list(range(20))


def test_shuffle_with_an_op_seed_is_reproducible_on_its_own():
    a = Dataset.range(20).shuffle(5, seed=7)
    b = Dataset.range(20).shuffle(5, seed=7)
    assert values(a) == values(b) and values(a) == values(b)   # epoch by epoch
    fixed = Dataset.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    # a small buffer only moves elements forward by less than the buffer's size
    order = values(Dataset.range(50).shuffle(3, seed=1))
    assert all(order.index(i) >= i - 2 for i in range(50))


def test_cache_replays_the_first_pass():
    draws = []

    def noisy(v):
        draws.append(1)
        return v
    ds = Dataset.range(4).map(noisy).cache()
    assert values(ds) == values(ds) == [0, 1, 2, 3]
    with pytest.raises(NotImplementedError):
        Dataset.range(3).cache("file")


def test_prefetch_is_accepted():
    assert values(Dataset.range(3).prefetch(tf.data.AUTOTUNE)) == [0, 1, 2]
