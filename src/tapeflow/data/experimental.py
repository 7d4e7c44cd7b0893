"""``tf.data.experimental``: the constants TensorFlow 2 still keeps there (``AUTOTUNE``, the
cardinality sentinels), the same values as ``tf.data``'s, and the older transformation
functions, each for ``Dataset.apply`` and doing what the ``Dataset`` method of that name does."""
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "bucket_by_sequence_length",
           "group_by_window", "rejection_resample", "scan", "unbatch"]


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    def apply(dataset):
        return dataset.bucket_by_sequence_length(
            element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)
    return apply


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    def apply(dataset):
        return dataset.group_by_window(key_func, reduce_func, window_size, window_size_func)
    return apply


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    def apply(dataset):
        return dataset.rejection_resample(class_func, target_dist, initial_dist, seed)
    return apply


def scan(initial_state, scan_func):
    def apply(dataset):
        return dataset.scan(initial_state, scan_func)
    return apply


def unbatch():
    def apply(dataset):
        return dataset.unbatch()
    return apply
