"""AdamW: Adam with decoupled weight decay, Keras 3's class and defaults.

Before each Adam update (``optimizers.adam``), every variable not excluded
from decay shrinks by ``learning_rate * weight_decay`` (the base optimizer's
decoupled decay, written once there)::

    w -= lr * weight_decay * w
    w -= Adam's step
"""
from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, *, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None):
        if weight_decay is None:
            raise ValueError("AdamW needs a weight_decay (use Adam for none)")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm,
                         weight_decay=weight_decay, name=name)
