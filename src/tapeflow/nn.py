"""``tapeflow.nn``: TensorFlow's neural-network namespace."""
from .ops.elementwise import elu, leaky_relu, relu, relu6, selu, sigmoid, softplus, softsign, tanh  # noqa: F401
from .ops.embedding import embedding_lookup  # noqa: F401
from .ops.nn import (  # noqa: F401
    batch_normalization, bias_add, dropout, gelu, l2_loss, l2_normalize, log_softmax, moments,
    sigmoid_cross_entropy_with_logits, silu, softmax, softmax_cross_entropy_with_logits,
    sparse_softmax_cross_entropy_with_logits,
)

swish = silu
from .ops.conv import conv1d, conv1d_transpose, conv2d, conv2d_transpose, convolution  # noqa: F401
from .ops.pooling import (  # noqa: F401
    avg_pool, avg_pool1d, avg_pool2d, max_pool, max_pool1d, max_pool2d,
)
