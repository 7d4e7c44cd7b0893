"""tf.data completeness: window/flat_map, interleave, from_generator, padded_batch, unbatch,
reduce, scan, group_by_window, bucket_by_sequence_length and rejection_resample, ported from
TensorFlow's ``tensorflow/python/data/kernel_tests/`` with the values they assert."""
import itertools
import random

import numpy as np
import pytest

import tapeflow as tf

Dataset = tf.data.Dataset


def values(ds):
    return [tf.nest.map_structure(lambda a: np.asarray(a).tolist(), v)
            for v in ds.as_numpy_iterator()]


# --- window / flat_map -------------------------------------------------------------------------
@pytest.mark.parametrize("count,size,shift,stride,drop_remainder", [
    (20, size, shift, stride, drop) for size in (10, 17) for shift in (7, 14)
    for stride in (1, 6) for drop in (True, False)] + [
    (count, 10, 4, 1, drop) for count in (0, 1) for drop in (True, False)])
def test_window_dataset(count, size, shift, stride, drop_remainder):
    # TF: window_test.py::testWindowDataset
    components = (np.arange(7), np.array([[1, 2, 3]]) * np.arange(7)[:, np.newaxis],
                  np.array(37.0) * np.arange(7))
    dataset = Dataset.from_tensor_slices(components).map(
        lambda x, y, z: (tf.square(x), tf.square(y), tf.square(z))).repeat(count).window(
        size=size, shift=shift, stride=stride, drop_remainder=drop_remainder).flat_map(
        lambda x, y, z: Dataset.zip((x.batch(size), y.batch(size), z.batch(size))))
    assert [list(s.shape) for s in tf.nest.flatten(dataset.element_spec)] == \
        [[None] + list(c.shape[1:]) for c in components]
    results = list(dataset.as_numpy_iterator())
    num_full = max(0, (count * 7 - ((size - 1) * stride + 1)) // shift + 1)
    expected = []
    for i in range(num_full):
        expected.append([(i * shift + j * stride) % 7 for j in range(size)])
    if not drop_remainder:
        partial = (count * 7) // shift + ((count * 7) % shift > 0) - num_full
        for i in range(partial):
            remaining = count * 7 - (num_full + i) * shift
            n = remaining // stride + (remaining % stride > 0)
            expected.append([((num_full + i) * shift + j * stride) % 7 for j in range(n)])
    assert len(results) == len(expected)
    for result, rows in zip(results, expected):
        for component, got in zip(components, result):
            np.testing.assert_array_equal(got, component[rows] ** 2)


@pytest.mark.parametrize("size,shift,stride", [(0, 3, 1), (3, 0, 1), (3, 3, 0)])
def test_window_dataset_invalid(size, shift, stride):
    # TF: window_test.py::testWindowDatasetInvalid
    with pytest.raises(ValueError, match="must be greater than zero"):
        Dataset.range(10).map(lambda x: x).repeat(20).window(
            size=size, shift=shift, stride=stride).flat_map(lambda x: x.batch(batch_size=size))


def test_window_nested_structures_and_output():
    # TF: window_test.py::testWindowDifferentNestedStructures, ::testNestedOutput
    pair = next(iter(Dataset.from_tensor_slices(([1, 2], [3, 4])).window(2)))
    assert [values(d) for d in pair] == [[1, 2], [3, 4]]
    window = next(iter(Dataset.from_tensor_slices({"a": [1, 2]}).window(2)))
    assert values(window["a"]) == [1, 2]
    dataset = Dataset.zip((Dataset.range(100), Dataset.range(100))).window(10)
    assert isinstance(dataset.element_spec[0], tf.data.DatasetSpec)
    for i, (x, y) in enumerate(dataset):
        assert values(x) == values(y) == list(range(i * 10, (i + 1) * 10))


def test_window_shape_error_names_the_component():
    # TF: window_test.py::testWindowShapeError
    def generator():
        yield [1.0, 2.0, 3.0]
        yield [4.0, 5.0, 6.0]
        yield [7.0, 8.0, 9.0, 10.0]
    dataset = Dataset.from_generator(generator, tf.float32, output_shapes=[None]).window(
        size=3, shift=1).flat_map(lambda x: x.batch(batch_size=3))
    with pytest.raises(ValueError, match=r"Cannot batch tensors with different shapes in "
                       r"component 0. First element had shape \[3\] and element 2 had shape "
                       r"\[4\]."):
        list(dataset)


def test_window_drop_remainder_output_and_name():
    # TF: window_test.py::testDropRemainderOutput, ::testName
    dataset = Dataset.range(100).window(30, drop_remainder=True).flat_map(
        lambda x: x.batch(30)).batch(4)
    assert values(dataset) == [[[y + 30 * x for y in range(30)] for x in range(3)]]
    assert values(Dataset.from_tensors(42).window(1, name="window").flat_map(lambda x: x)) == [42]
    assert values(Dataset.range(7).window(3, 2).flat_map(lambda w: w.batch(3))) == \
        [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]           # TF: Dataset.window docstring
    assert len(Dataset.range(7).window(3, 2)) == 4
    assert len(Dataset.range(7).window(3, 2, drop_remainder=True)) == 3


def test_flat_map_dataset():
    # TF: flat_map_test.py::testFlatMapDataset, ::testNestedFlatMapDataset
    repeats = [1, 2, 3, 4, 5, 0, 1]
    dataset = Dataset.from_tensor_slices(np.array(repeats, np.int64)).flat_map(
        lambda x: Dataset.from_tensors([x]).repeat(x))
    assert values(dataset) == [[i] for i in repeats for _ in range(i)]
    nested = [[1, 2], [3, 4], [5, 0], [1, 7]]
    dataset = Dataset.from_tensor_slices(np.array(nested, np.int64)).flat_map(
        lambda x: Dataset.from_tensor_slices(x).flat_map(
            lambda y: Dataset.from_tensors(y).repeat(y)))
    assert values(dataset) == [i for row in nested for i in row for _ in range(i)]
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(Dataset.range(2).flat_map(lambda x: x))


# --- interleave --------------------------------------------------------------------------------
@pytest.mark.parametrize("input_values,cycle_length,block_length,expected", [
    ([4, 5, 6], 1, 1, [4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 4, 4, 4, 4, 5, 5, 5, 5, 5,
                       6, 6, 6, 6, 6, 6]),
    ([4, 5, 6], 2, 1, [4, 5, 4, 5, 4, 5, 4, 5, 5, 6, 6, 4, 6, 4, 6, 4, 6, 4, 6, 5, 6, 5, 6, 5,
                       6, 5, 6, 5, 6, 6]),
    ([4, 5, 6], 2, 3, [4, 4, 4, 5, 5, 5, 4, 5, 5, 6, 6, 6, 4, 4, 4, 6, 6, 6, 4, 5, 5, 5, 6, 6,
                       6, 5, 5, 6, 6, 6]),
    ([4, 5, 6], 7, 2, [4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6,
                       5, 6, 6, 5, 6, 6]),
    ([4, 0, 6], 2, 1, [4, 4, 6, 4, 6, 4, 6, 6, 4, 6, 4, 6, 4, 4, 6, 6, 6, 6, 6, 6]),
    ([], 2, 3, []),
    ([0, 0, 0], 2, 3, []),
])
def test_interleave_dataset(input_values, cycle_length, block_length, expected):
    # TF: interleave_test.py::testPythonImplementation (its expected orders) run through
    # Dataset.interleave as ::testInterleaveDataset does
    dataset = Dataset.from_tensor_slices(np.int64(input_values)).repeat(2).interleave(
        lambda x: Dataset.from_tensors(x).repeat(x), cycle_length, block_length)
    assert values(dataset) == expected


def test_interleave_docstring_example():
    # TF: Dataset.interleave docstring
    dataset = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                             cycle_length=2, block_length=4)
    assert values(dataset) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3,
                               3, 4, 4, 5, 5, 5, 5, 5, 5]
    with pytest.raises(ValueError, match="cycle_length must be greater than zero"):
        Dataset.range(3).interleave(Dataset.from_tensors, cycle_length=0)


# --- from_generator ----------------------------------------------------------------------------
def test_from_generator_using_fn_list_and_ndarray():
    # TF: from_generator_test.py::testFromGeneratorUsingFn, ::testFromGeneratorUsingList,
    # ::testFromGeneratorUsingNdarray, ::testFromGeneratorUsingGeneratorExpression
    def generator():
        for i in range(1, 100):
            yield [i] * i
    for source in (generator, lambda: [[i] * i for i in range(1, 100)],
                   lambda: ([i] * i for i in range(1, 100))):
        dataset = Dataset.from_generator(source, output_types=tf.int64).repeat(5).prefetch(5)
        assert values(dataset) == list(generator()) * 5
        assert values(dataset) == list(generator()) * 5      # the generator runs afresh
    ndarray = Dataset.from_generator(lambda: np.arange(100, dtype=np.int64), tf.int64)
    assert values(ndarray) == list(range(100))


def test_from_multiple_concurrent_generators():
    # TF: from_generator_test.py::testFromMultipleConcurrentGenerators
    def generator():
        for i in range(1, 10):
            yield ([i] * i, [i, i ** 2, i ** 3])
    input_list = list(generator())
    dataset = Dataset.range(100).interleave(
        lambda _: Dataset.from_generator(generator, output_types=(tf.int64, tf.int64),
                                         output_shapes=([None], [3])).repeat(5).prefetch(5),
        cycle_length=10, block_length=len(input_list))
    produced = values(dataset)
    assert produced == [(a, b) for a, b in input_list] * 500


def test_from_generator_conversions_and_errors():
    # TF: from_generator_test.py::testFromGeneratorImplicitConversion, ::testFromGeneratorString,
    # ::testFromGeneratorTypeError, ::testFromGeneratorShapeError, ::testFromGeneratorHeterogeneous
    for dtype in (tf.int8, tf.int32, tf.int64):
        dataset = Dataset.from_generator(lambda: iter([[1], [2], [3]]), output_types=dtype,
                                         output_shapes=[1])
        out = list(dataset.as_numpy_iterator())
        assert [o.tolist() for o in out] == [[1], [2], [3]]
        assert all(o.dtype == dtype.as_numpy_dtype for o in out)
    strings = Dataset.from_generator(lambda: iter(["foo", b"bar", "baz"]), tf.string, [])
    assert [s.decode() if isinstance(s, bytes) else str(s) for s in
            strings.as_numpy_iterator()] == ["foo", "bar", "baz"]

    def typed():
        yield np.array([1, 2, 3], dtype=np.int64)
        yield np.array([4, 5, 6], dtype=np.int64)
        yield "ERROR"
    it = Dataset.from_generator(typed, output_types=tf.int64, output_shapes=[3]).as_numpy_iterator()
    assert next(it).tolist() == [1, 2, 3] and next(it).tolist() == [4, 5, 6]
    with pytest.raises(TypeError, match="could not be converted to the expected type"):
        next(it)

    def shaped():
        yield np.array([1, 2, 3], dtype=np.int64)
        yield np.array([7, 8, 9, 10], dtype=np.int64)
    it = Dataset.from_generator(shaped, output_types=tf.int64, output_shapes=[3]).as_numpy_iterator()
    assert next(it).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match=r"yielded an element of shape \[4\] where an element "
                       r"of shape \[3\] was expected"):
        next(it)
    assert values(Dataset.from_generator(lambda: iter([1, [2, 3]]), output_types=tf.int64)) == \
        [1, [2, 3]]
    floats = Dataset.from_generator(lambda: iter([1.5]), output_types=tf.int64)
    with pytest.raises(TypeError, match="expected type was int64"):
        list(floats)


def test_from_generator_structure_error():
    # TF: from_generator_test.py::testFromGeneratorStructureError
    def generator():
        yield 1, 2
        yield 3, 4
        yield 5
    it = Dataset.from_generator(generator, output_types=(tf.int64, tf.int64)).as_numpy_iterator()
    assert next(it) == (1, 2) and next(it) == (3, 4)
    with pytest.raises(TypeError, match="did not match the expected structure"):
        next(it)


def test_from_generator_with_args():
    # TF: from_generator_test.py::testFromGeneratorWithArgs, ::testFromGeneratorWithTwoArgs
    def with_arg(n):
        for _ in range(n):
            yield np.array(n, dtype=np.int64)
    dataset = Dataset.range(5).flat_map(lambda elem: Dataset.from_generator(
        with_arg, output_types=tf.int64, output_shapes=(), args=(elem,)))
    assert values(dataset) == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4]

    def with_two(n, msg):
        for i in range(n):
            yield i, msg
    dataset = Dataset.zip((Dataset.range(5), Dataset.from_tensors("Hi!").repeat(None))).flat_map(
        lambda elem, message: Dataset.from_generator(
            with_two, output_types=(tf.int64, tf.string), output_shapes=((), ()),
            args=(elem, message)))
    assert [(i, str(m)) for i, m in values(dataset)] == [
        (0, "Hi!"), (0, "Hi!"), (1, "Hi!"), (0, "Hi!"), (1, "Hi!"), (2, "Hi!"), (0, "Hi!"),
        (1, "Hi!"), (2, "Hi!"), (3, "Hi!")]


def test_from_generator_output_signature_and_bad_arguments():
    # TF: Dataset.from_generator docstring (output_signature with a None dimension)
    def gen():
        ragged_tensor = [[1, 2], [3]]
        yield 42, ragged_tensor[0]
        yield 43, ragged_tensor[1]
    dataset = Dataset.from_generator(gen, output_signature=(
        tf.TensorSpec(shape=(), dtype=tf.int32), tf.TensorSpec(shape=(None,), dtype=tf.int32)))
    assert dataset.element_spec == (tf.TensorSpec((), tf.int32), tf.TensorSpec((None,), tf.int32))
    assert values(dataset) == [(42, [1, 2]), (43, [3])]
    assert dataset.cardinality() == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="must be a Python callable"):
        Dataset.from_generator([1, 2], output_types=tf.int32)
    with pytest.raises(TypeError, match="not both"):
        Dataset.from_generator(gen, tf.int32, output_signature=tf.TensorSpec((), tf.int32))
    with pytest.raises(TypeError, match="give output_signature"):
        Dataset.from_generator(gen)


# --- padded_batch ------------------------------------------------------------------------------
def _fill(x):
    return tf.fill([x], x)


@pytest.mark.parametrize("count,padded_shapes,drop_remainder", [
    (count, shapes, drop) for count in (32, 34) for shapes in ([None], [25])
    for drop in (True, False)])
def test_padded_batch_dataset(count, padded_shapes, drop_remainder):
    # TF: padded_batch_test.py::testPaddedBatchDataset
    seq_lens = np.random.default_rng(count).integers(20, size=(count,)).astype(np.int32)
    dataset = Dataset.from_tensor_slices(seq_lens).map(_fill).padded_batch(
        batch_size=4, drop_remainder=drop_remainder, padded_shapes=padded_shapes)
    results = list(dataset.as_numpy_iterator())
    sizes = [4] * (count // 4) + ([] if drop_remainder or count % 4 == 0 else [count % 4])
    assert [r.shape[0] for r in results] == sizes
    for i, result in enumerate(results):
        padded_len = padded_shapes[0] or (np.max(result) if result.size else 0)
        assert result.shape[1] == padded_len
        for j in range(result.shape[0]):
            seq_len = seq_lens[i * 4 + j]
            assert result[j, :seq_len].tolist() == [seq_len] * seq_len
            assert result[j, seq_len:].tolist() == [0] * (padded_len - seq_len)


def test_padded_batch_short_padding_and_empty_tensors():
    # TF: padded_batch_test.py::testPaddedBatchShortPadding, ::testPaddedBatchEmptyTensors
    short = Dataset.from_tensor_slices([6, 5, 5, 5, 5]).map(_fill).padded_batch(
        batch_size=4, padded_shapes=[5])
    with pytest.raises(ValueError, match="smaller size than the input element"):
        list(short)
    empty = Dataset.from_tensor_slices([0, 0, 0, 0]).map(_fill).padded_batch(
        batch_size=4, padded_shapes=[-1])
    assert values(empty) == [[[], [], [], []]]


def test_default_padded_shapes_and_values():
    # TF: padded_batch_test.py::testDefaultPaddedShapes, ::testNestedDefaultPaddedShapes,
    # ::testDefaultPaddedValueShapes
    filled = Dataset.from_tensor_slices([1, 2, 3, 4]).map(_fill)
    # the map needs x's value (it cannot be traced): its sizes are unknown, as TF's spec says
    assert filled.element_spec == tf.TensorSpec([None], tf.int32)
    assert values(filled.padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert values(Dataset.from_tensor_slices([1, 2, 3, 4]).map(
        lambda x: (x, _fill(x))).padded_batch(2)) == \
        [([1, 2], [[1, 0], [2, 2]]), ([3, 4], [[3, 3, 3, 0], [4, 4, 4, 4]])]
    dataset = Dataset.zip((Dataset.from_tensor_slices([1, 2, 3, 4]).map(_fill),
                           Dataset.from_tensor_slices([1, 2, 3, 4]).map(_fill)))
    assert values(dataset.padded_batch(batch_size=2, padding_values=-1)) == [
        ([[1, -1], [2, 2]], [[1, -1], [2, 2]]),
        ([[3, 3, 3, -1], [4, 4, 4, 4]], [[3, 3, 3, -1], [4, 4, 4, 4]])]


def test_padded_batch_strings_and_structures():
    # TF: padded_batch_test.py::testPaddedBatchDatasetNonDefaultPadding (its shapes and
    # padding values; the strings made by a generator, tapeflow having no tf.strings.as_string)
    seq_lens = np.random.default_rng(1).integers(20, size=(32,))

    def gen():
        for n in seq_lens:
            text = [str(n)] * n
            yield [n] * n, text, {"structure": text}
    dataset = Dataset.from_generator(gen, output_signature=(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.string),
        {"structure": tf.TensorSpec([None], tf.string)}))
    for padding_values in [(-1, "<end>", {"structure": ""}), (-1, "<end>", None)]:
        batches = list(dataset.padded_batch(4, padded_shapes=([-1], [-1], {"structure": [-1]}),
                                            padding_values=padding_values).as_numpy_iterator())
        assert len(batches) == 8
        for i, result in enumerate(batches):
            padded_len = np.max(result[0])
            assert result[0].shape == result[1].shape == result[2]["structure"].shape == \
                (4, padded_len)
            for j in range(4):
                n = seq_lens[i * 4 + j]
                assert result[0][j].tolist() == [n] * n + [-1] * (padded_len - n)
                assert result[1][j].tolist() == [str(n)] * n + ["<end>"] * (padded_len - n)
                assert result[2]["structure"][j].tolist() == [str(n)] * n + [""] * (padded_len - n)


def test_padded_batch_shape_errors():
    # TF: padded_batch_test.py::testPaddedBatchShapeErrorWrongRank, ::...TooSmall,
    # ::...ShapeNotRank1, ::...ShapeNotInt, ::...WrongRankFromTensor,
    # ::...DefaultShapeWithUnknownRank
    with pytest.raises(ValueError, match=r"The padded shape \(1,\) is not compatible with the "
                       r"corresponding input component shape \(\)."):
        Dataset.range(10).padded_batch(5, padded_shapes=[1])
    with pytest.raises(ValueError, match=r"The padded shape \(1,\) is not compatible with the "
                       r"corresponding input component shape \(3,\)."):
        Dataset.from_tensors([1, 2, 3]).padded_batch(5, padded_shapes=[1])
    with pytest.raises(ValueError, match=r"must be a 1-D tensor of tf.int64 values, but its "
                       r"shape was \(2, 2\)."):
        Dataset.from_tensors([1, 2, 3]).padded_batch(5, padded_shapes=[[1, 1], [1, 1]])
    with pytest.raises(TypeError, match="must be a 1-D tensor of tf.int64 values, but its "
                       "element type was float32."):
        Dataset.from_tensors([1, 2, 3]).padded_batch(5, padded_shapes=tf.constant([1.5, 2., 3.]))
    with pytest.raises(ValueError, match=r"The padded shape \(1,\) is not compatible"):
        Dataset.range(10).padded_batch(5, padded_shapes=tf.constant([1], dtype=tf.int64))
    with pytest.raises(ValueError, match="`padded_shapes`.*unknown rank"):
        Dataset.from_generator(lambda: iter([1, 2, 3]), output_types=tf.int32).padded_batch(2)


def test_padded_batch_spec():
    # TF: padded_batch_test.py::testPaddedBatchDatasetShapeSpecifications (its shapes)
    source = Dataset.from_generator(lambda: iter([]), output_signature=(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([None, None], tf.float32),
        tf.TensorSpec([None], tf.string)))
    for shapes in [([None], [None, None], [37]), ([-1], [-1, -1], [37]),
                   (tf.constant([-1], dtype=tf.int64), tf.constant([-1, -1], dtype=tf.int64),
                    tf.constant([37], dtype=tf.int64))]:
        spec = source.padded_batch(32, padded_shapes=shapes).element_spec
        assert [list(s.shape) for s in spec] == [[None, None], [None, None, None], [None, 37]]


# --- unbatch -----------------------------------------------------------------------------------
def test_unbatch():
    # TF: unbatch_test.py::testUnbatchScalarDataset, ::testUnbatchEmpty,
    # ::testUnbatchStaticShapeMismatch, ::testUnbatchDynamicShapeMismatch, ::testUnbatchScalar
    data = tuple([tf.range(10) for _ in range(3)])
    assert values(Dataset.from_tensors(data).unbatch()) == [(i,) * 3 for i in range(10)]
    empty = Dataset.from_tensors((np.zeros(0, np.int32), np.zeros(0), np.zeros(0))).unbatch()
    assert values(empty) == []
    with pytest.raises(ValueError, match="different batch sizes"):
        Dataset.from_tensors((np.arange(7), np.arange(8), np.arange(9))).unbatch()
    dynamic = Dataset.from_generator(lambda: iter([(np.arange(7), np.arange(8))]), output_signature=(
        tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.int64))).unbatch()
    with pytest.raises(ValueError, match="Component 0 had size 7 but component 1 had size 8"):
        list(dynamic)
    with pytest.raises(ValueError, match="Cannot unbatch an input with scalar components"):
        Dataset.from_tensors(0).unbatch()
    assert values(Dataset.range(6).batch(4).apply(tf.data.experimental.unbatch())) == \
        list(range(6))


# --- reduce / scan -----------------------------------------------------------------------------
def test_reduce():
    # TF: reduce_test.py::testSum, ::testSumTuple, ::testSumAndCount, ::testNested (dense part)
    for i in range(10):
        ds = Dataset.range(1, i + 1)
        assert int(ds.reduce(tf.constant(0, dtype=tf.int64), lambda x, y: x + y)) == \
            (i + 1) * i // 2
        pair = Dataset.zip((ds, ds))
        assert int(pair.reduce(tf.constant(0, dtype=tf.int64),
                               lambda state, value: state + value[0] + value[1])) == (i + 1) * i
        s, c = ds.reduce((tf.constant(0, dtype=tf.int64), tf.constant(0, dtype=tf.int64)),
                         lambda state, value: (state[0] + value, state[1] + 1))
        assert (int(s), int(c)) == ((i + 1) * i // 2, i)

    def reduce_fn(state, value):
        state["dense"] += value["dense"]
        return state
    result = Dataset.range(1, 5).map(lambda i: {"dense": tf.cast(i, tf.int64)}).reduce(
        {"dense": tf.constant(0, tf.int64)}, reduce_fn)
    assert int(result["dense"]) == 10
    with pytest.raises(TypeError, match="element types for the new state must match"):
        Dataset.range(3).reduce(tf.constant(0, tf.int32), lambda s, x: x)


def test_scan_count_and_fibonacci():
    # TF: scan_test.py::testCount, ::testFibonacci, ::testName
    for start, step, take in [(0, 1, 10), (0, 1, 0), (10, 1, 10), (10, 2, 10), (10, -1, 10),
                              (10, -2, 10)]:
        dataset = Dataset.from_tensors(0).repeat().scan(
            initial_state=start, scan_func=lambda state, _: (state + step, state)).take(take)
        assert values(dataset) == list(itertools.islice(itertools.count(start, step), take))
    fib = Dataset.from_tensors(1).repeat(None).scan(
        initial_state=[0, 1], scan_func=lambda a, _: ([a[1], a[0] + a[1]], a[1]))
    assert values(fib.take(6)) == [1, 1, 2, 3, 5, 8]
    assert values(Dataset.from_tensors(42).scan(0, lambda x, y: (y, y), name="scan")) == [42]
    assert values(Dataset.range(4).apply(tf.data.experimental.scan(
        np.int64(0), lambda s, x: (s + x, s)))) == [0, 0, 1, 3]


def test_scan_changing_state_shape():
    # TF: scan_test.py::testChangingStateShape (values; the spec of the vector that grows)
    def scan_fn(state, input_value):
        return (tf.concat([state[0], state[0]], 0), tf.expand_dims(state[1], 0)), (state, input_value)
    dataset = Dataset.from_tensors(0).repeat(5).scan(initial_state=([0], 1), scan_func=scan_fn)
    for i, ((longer, larger_rank), _) in enumerate(dataset.as_numpy_iterator()):
        assert longer.tolist() == [0] * 2 ** i
        np.testing.assert_array_equal(larger_rank, np.array(1, ndmin=i))
    grows = Dataset.from_tensors(0).repeat(3).scan(
        [0], lambda s, x: (tf.concat([s, s], 0), s))
    assert grows.element_spec.shape == (None,)


def test_scan_incorrect_state_and_return_types():
    # TF: scan_test.py::testIncorrectStateType, ::testIncorrectReturnType
    with pytest.raises(TypeError, match="The element types for the new state must match the "
                       "initial state."):
        Dataset.range(10).scan(initial_state=tf.constant(1, dtype=tf.int32),
                               scan_func=lambda state, _: (tf.constant(1, dtype=tf.int64), state))
    with pytest.raises(TypeError, match="`scan_func` should return a pair consisting of new "
                       "state and the output value."):
        Dataset.range(10).scan(initial_state=tf.constant(1, dtype=tf.int32),
                               scan_func=lambda state, _: tf.constant(1, dtype=tf.int64))


# --- group_by_window ---------------------------------------------------------------------------
def test_group_by_window_even_odd_buckets():
    # TF: group_by_window_test.py::testSingleBucket, ::testEvenOddBuckets (the int components)
    def dynamic_pad(key, window):
        return Dataset.zip((Dataset.from_tensors(key), window.padded_batch(32, ([], [None]))))
    dataset = Dataset.from_tensor_slices(tf.range(64, dtype=tf.int64)).map(
        lambda v: (v, _fill(v))).group_by_window(
        key_func=lambda x, y: tf.cast(x % 2, tf.int64), reduce_func=dynamic_pad, window_size=32)
    (even, (scalars_even, filled_even)), (odd, (scalars_odd, filled_odd)) = \
        list(dataset.as_numpy_iterator())
    assert (even, odd) == (0, 1)
    assert scalars_even.tolist() == list(range(0, 64, 2))
    assert scalars_odd.tolist() == list(range(1, 65, 2))
    expected = np.zeros((32, 62), np.int64)
    for i in range(32):
        expected[i, :2 * i] = 2 * i
    np.testing.assert_array_equal(filled_even, expected)
    assert filled_odd.shape == (32, 63)


def test_group_by_window_sizes_and_order():
    # TF: group_by_window_test.py::testDynamicWindowSize, ::testImmediateOutput,
    # ::testSmallGroups, ::testShortCircuit
    dataset = Dataset.from_tensor_slices(np.arange(100).astype(np.int64)).group_by_window(
        key_func=lambda x: x % 2, reduce_func=lambda _, xs: xs.batch(20),
        window_size_func=lambda key: tf.constant([5, 10], dtype=tf.int64)[key])
    batches = list(dataset.as_numpy_iterator())
    assert len(batches) == 15
    assert all(len(b) == (5 if b[0] % 2 == 0 else 10) and len(set(b % 2)) == 1 for b in batches)
    components = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0], dtype=np.int64)
    forever = Dataset.from_tensor_slices(components).repeat(-1).group_by_window(
        key_func=lambda x: x % 3, reduce_func=lambda _, xs: xs.batch(4), window_size=4)
    assert values(forever.take(12)) == [[0] * 4, [1] * 4, [2] * 4, [0] * 4] * 3
    small = Dataset.from_tensor_slices(np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0], np.int64))
    assert values(small.group_by_window(lambda x: x % 2, lambda _, xs: xs.batch(4), 4)) == \
        [[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0], [1]]
    assert values(Dataset.range(10).group_by_window(lambda x: x, lambda _, w: w.batch(1), 1)) == \
        [[i] for i in range(10)]


def test_group_by_window_errors():
    # TF: group_by_window_test.py::testEmpty
    with pytest.raises(ValueError, match="window_size must be greater than zero, got 0"):
        Dataset.range(4).group_by_window(key_func=lambda _: 0, reduce_func=lambda _, xs: xs,
                                         window_size=0)
    with pytest.raises(ValueError, match="exactly one of window_size and window_size_func"):
        Dataset.range(4).group_by_window(lambda _: 0, lambda _, xs: xs)


# --- bucket_by_sequence_length -----------------------------------------------------------------
_ELEMENTS = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20],
             [21, 22]]


def test_bucket_by_sequence_length_docstring_examples():
    # TF: data.experimental.bucket_by_sequence_length docstring (both examples)
    dataset = Dataset.from_generator(lambda: _ELEMENTS, tf.int64, output_shapes=[None])
    out = dataset.apply(tf.data.experimental.bucket_by_sequence_length(
        element_length_func=lambda elem: tf.shape(elem)[0], bucket_boundaries=[3, 5],
        bucket_batch_sizes=[2, 2, 2]))
    assert values(out) == [[[1, 2, 3, 4], [5, 6, 7, 0]],
                           [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]], [[0, 0], [21, 22]]]
    dataset = Dataset.from_generator(lambda: _ELEMENTS, tf.int32, output_shapes=[None])
    out = dataset.apply(tf.data.experimental.bucket_by_sequence_length(
        element_length_func=lambda elem: tf.shape(elem)[0], bucket_boundaries=[4, 7],
        bucket_batch_sizes=[2, 2, 2], pad_to_bucket_boundary=True, padding_values=-1,
        drop_remainder=True))
    assert values(out) == [[[0, -1, -1], [5, 6, 7]],
                           [[1, 2, 3, 4, -1, -1], [7, 8, 9, 10, 11, -1]]]


@pytest.mark.parametrize("no_padding", [True, False])
def test_bucket(no_padding):
    # TF: bucket_by_sequence_length_test.py::testBucket (dense elements)
    boundaries, batch_sizes, lengths = [10, 20, 30], [10, 8, 4, 2], [8, 13, 25, 35]

    def generator():
        elements = []
        for batch_size, length in zip(batch_sizes, lengths):
            record_len = length - 1
            for _ in range(batch_size):
                elements.append([1] * record_len)
                record_len = length
        random.Random(0).shuffle(elements)
        for el in elements:
            yield (el,)
    dataset = Dataset.from_generator(generator, (tf.int32,), ([None],)).bucket_by_sequence_length(
        element_length_func=lambda x: tf.shape(x)[0], bucket_boundaries=boundaries,
        bucket_batch_sizes=batch_sizes, no_padding=no_padding)
    if no_padding:   # same-length batches only: bucket by exact length instead
        with pytest.raises(ValueError, match="Cannot batch tensors with different shapes"):
            list(dataset)
        return
    batches = [b for (b,) in dataset.as_numpy_iterator()]
    assert len(batches) == 4
    assert sorted(b.shape[0] for b in batches) == sorted(batch_sizes)
    assert sorted(b.shape[1] for b in batches) == sorted(lengths)
    assert all(b.sum() == b.shape[0] * b.shape[1] - 1 for b in batches)


@pytest.mark.parametrize("no_padding", [True, False])
def test_bucket_drop_remainder(no_padding):
    # TF: bucket_by_sequence_length_test.py::testBucketDropReminder (dense elements)
    boundaries, batch_sizes, lengths = [10, 20, 30], [10, 8, 4, 2], [8, 13, 25, 35]
    n_bucket_elements = [28, 7, 6, 5]

    def generator():
        elements = [[1] * length for count, length in zip(n_bucket_elements, lengths)
                    for _ in range(count)]
        random.Random(1).shuffle(elements)
        for el in elements:
            yield (el,)
    dataset = Dataset.from_generator(generator, (tf.int32,), ([None],)).bucket_by_sequence_length(
        element_length_func=lambda x: tf.shape(x)[0], bucket_boundaries=boundaries,
        bucket_batch_sizes=batch_sizes, no_padding=no_padding, drop_remainder=True)
    batches = [b for (b,) in dataset.as_numpy_iterator()]
    assert len(batches) == 5
    for length, batch_size, count in zip(lengths, batch_sizes, n_bucket_elements):
        mine = [b for b in batches if b.shape[1] == length]
        assert [b.shape[0] for b in mine] == [batch_size] * (count // batch_size)
        assert sum(int(b.sum()) for b in mine) == (count - count % batch_size) * length


def test_pad_to_boundary():
    # TF: bucket_by_sequence_length_test.py::testPadToBoundary,
    # ::testPadToBoundaryNoExtraneousPadding
    boundaries, batch_sizes, lengths = [10, 20, 30], [10, 8, 4, 2], [8, 13, 25]

    def element_gen():
        elements = [[1] * length for batch_size, length in zip(batch_sizes[:-1], lengths)
                    for _ in range(batch_size)]
        random.Random(2).shuffle(elements)
        for el in elements:
            yield (el,)
        for _ in range(batch_sizes[-1]):
            yield ([1] * (boundaries[-1] + 5),)
    dataset = Dataset.from_generator(element_gen, (tf.int64,), ([None],)).bucket_by_sequence_length(
        element_length_func=lambda el: tf.shape(el)[0], bucket_boundaries=boundaries,
        bucket_batch_sizes=batch_sizes, pad_to_bucket_boundary=True)
    it = dataset.as_numpy_iterator()
    batches = [next(it)[0] for _ in range(3)]
    with pytest.raises(ValueError, match="bucket_boundaries"):
        next(it)
    assert sorted(b.shape[0] for b in batches) == sorted(batch_sizes[:-1])
    assert sorted(b.shape[1] for b in batches) == [b - 1 for b in boundaries]

    dataset = Dataset.from_generator(lambda: (([1] * n,) for n in range(1, 11)), (tf.int64,),
                                     ([None],)).bucket_by_sequence_length(
        element_length_func=lambda element: tf.shape(element)[0], bucket_boundaries=[3, 7, 11],
        bucket_batch_sizes=[2, 2, 2, 2], pad_to_bucket_boundary=True)
    assert [b for (b,) in values(dataset)] == [
        [[1, 0], [1, 1]], [[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]],
        [[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]],
        [[1, 1, 1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]],
        [[1, 1, 1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]]


def test_bucket_tuple_elements_spec_and_bad_sizes():
    # TF: bucket_by_sequence_length_test.py::testTupleElements
    def generator():
        for x, y in zip([[1, 2, 3], [3, 4, 5, 6, 7], [1, 2], [8, 9, 0, 2, 3]], [1, 2, 1, 2]):
            yield x, y
    dataset = Dataset.from_generator(generator, output_types=(tf.int32, tf.int32),
                                     output_shapes=([None], [])).bucket_by_sequence_length(
        element_length_func=lambda x, y: tf.shape(x)[0], bucket_batch_sizes=[2, 2, 2],
        bucket_boundaries=[0, 8])
    assert [list(s.shape) for s in dataset.element_spec] == [[None, None], [None]]
    with pytest.raises(ValueError, match=r"len\(bucket_batch_sizes\)` must equal|must equal"):
        Dataset.range(3).bucket_by_sequence_length(lambda x: x, [1, 2], [1, 2])


# --- rejection_resample ------------------------------------------------------------------------
@pytest.mark.parametrize("initial_known", [True, False])
def test_rejection_resample_distribution(initial_known):
    # TF: rejection_resample_test.py::testDistribution
    classes = np.random.default_rng(3).integers(5, size=(10000,)).astype(np.int64)
    target_dist = [0.9, 0.05, 0.05, 0.0, 0.0]
    # (the (class, data) pairs sliced rather than made by a map, to keep the test fast)
    dataset = Dataset.from_tensor_slices((classes, classes * 10)).shuffle(200, seed=21).repeat()
    resampled = dataset.rejection_resample(
        target_dist=target_dist, initial_dist=[0.2] * 5 if initial_known else None,
        class_func=lambda c, _: c, seed=27)
    returned = list(resampled.take(2000).as_numpy_iterator())
    assert all(data[1] == 10 * c for c, data in returned)
    counts = np.bincount([c for c, _ in returned], minlength=5) / len(returned)
    np.testing.assert_allclose(counts, target_dist, atol=1e-2)


def test_rejection_resample_edge_cases_and_exhaustion():
    # TF: rejection_resample_test.py::testEdgeCasesSampleFromInitialDataset, ::testExhaustion,
    # ::testOtherDtypes
    data = np.random.default_rng(4).choice(2, 100, p=[0.5, 0.5])
    for target in ([0.5, 0.5], [0.0, 1.0]):
        out = values(Dataset.from_tensor_slices(data).rejection_resample(
            class_func=lambda x: x, target_dist=target, initial_dist=[0.5, 0.5], seed=1))
        assert 0 < len(out) <= 100
    out = values(Dataset.range(10000).rejection_resample(
        class_func=lambda x: x % 2, target_dist=[0.9, 0.1], initial_dist=[0.5, 0.5], seed=5))
    counts = np.bincount([c for c, _ in out], minlength=2) / len(out)
    np.testing.assert_allclose(counts, [0.9, 0.1], atol=1e-2)
    for target_dtype, init_dtype in [("float32", "float64"), ("float64", "float32"),
                                     ("float64", "float64"), ("float64", None)]:
        init = None if init_dtype is None else np.array([0.5, 0.5], init_dtype)
        dataset = Dataset.range(10).apply(tf.data.experimental.rejection_resample(
            class_func=lambda x: x % 2, target_dist=np.array([0.5, 0.5], target_dtype),
            initial_dist=init))
        assert next(dataset.as_numpy_iterator())[0] in (0, 1)
    with pytest.raises(ValueError, match="probability vector"):
        Dataset.range(3).rejection_resample(lambda x: x, [0.5, 0.6])


def test_rejection_resample_random_classes():
    # TF: rejection_resample_test.py::testRandomClasses
    data = np.random.default_rng(5).choice(4, 100, p=[0.25] * 4)
    dataset = Dataset.from_tensor_slices(data).map(
        lambda _: tf.cast(tf.random.uniform([1]) * 4, tf.int32)[0]).rejection_resample(
        class_func=lambda x: x, target_dist=[0.0, 0.0, 0.0, 1.0], initial_dist=[0.25] * 4,
        seed=3)
    classes = [c for c, _ in dataset.as_numpy_iterator()]
    np.testing.assert_allclose(np.bincount(classes, minlength=4) / len(classes),
                               [0.0, 0.0, 0.0, 1.0], atol=1e-2)
