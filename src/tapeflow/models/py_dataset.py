"""``tf.keras.utils.PyDataset`` (Keras 2's ``Sequence``): batches by index, for ``fit``.

A subclass says how many batches an epoch has (``__len__``) and returns batch
``i`` from ``__getitem__(i)`` as ``x``, ``(x, y)`` or ``(x, y, sample_weight)``
(arrays); ``on_epoch_end()`` runs after each training epoch (reshuffle files
there).  ``fit`` visits the batches in a new order each epoch when
``shuffle=True``, drawn from tapeflow's random state, as it shuffles arrays.

``workers``, ``use_multiprocessing`` and ``max_queue_size`` are accepted, as
Keras's, and do not change anything: batches are read one after the other in
the thread that trains (one batch at a time, so a step and the next read do not
overlap).
"""
__all__ = ["PyDataset", "Sequence"]


class PyDataset:
    # class defaults, so that a subclass that does not call super().__init__() has Keras's
    workers, use_multiprocessing, max_queue_size = 1, False, 10

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    def __getitem__(self, index):
        """Batch ``index``: ``x``, ``(x, y)`` or ``(x, y, sample_weight)``."""
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__ (batches per "
                                  f"epoch)")

    @property
    def num_batches(self):
        """Batches per epoch, or None when ``__len__`` is not defined (then ``fit`` needs
        ``steps_per_epoch``, and batches are read at 0, 1, 2, ... for ever)."""
        try:
            return len(self)
        except NotImplementedError:
            return None

    def on_epoch_begin(self):
        pass

    def on_epoch_end(self):
        pass


Sequence = PyDataset
