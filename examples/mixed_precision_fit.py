"""Mixed-precision training, as keras.io's mixed precision guide, on sklearn's 8x8 digits.

``set_global_policy("mixed_float16")`` makes each layer made afterwards compute in float16
while its variables stay float32 (cast to float16 when the layer reads them); the last layer,
``Activation("softmax", dtype="float32")``, gives float32 probabilities, as Keras recommends,
so the loss is computed in float32.  ``compile`` wraps the optimizer in a
``LossScaleOptimizer``: the loss is multiplied by a scale (2**15 to start) before
differentiating, so that small float16 gradients do not underflow, and the gradients are
divided by it before the step; a step with an inf or nan gradient is skipped and the scale
halved.  ``--policy mixed_bfloat16`` computes in bfloat16 instead (ml_dtypes' type, the
``[bfloat16]`` extra), with no loss scaling, as Keras: bfloat16 has float32's range.

    python examples/mixed_precision_fit.py [--epochs 20] [--compare] [--policy mixed_bfloat16]

It prints the dtypes, the loss scale after training and the test accuracy; with
``--compare`` it trains the same model in float32 too and prints both accuracies and the
seconds per epoch of each.  (On a CPU float16 pays nothing -- numpy computes it through
float32 -- so there mixed precision is a correctness check; its gains are on a GPU's
float16 units.)
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tapeflow as tf

layers = tf.keras.layers
mixed_precision = tf.keras.mixed_precision


def build():
    inputs = tf.keras.Input(shape=(64,), name="pixels")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    x = layers.Dense(10, name="logits")(x)
    # float32 probabilities: the softmax and the loss in float32 (keras.io's advice)
    outputs = layers.Activation("softmax", dtype="float32", name="predictions")(x)
    return tf.keras.Model(inputs, outputs, name="digits_mlp")


def train(policy, data, epochs):
    """The test accuracy and seconds per epoch of the model trained under ``policy``."""
    x_train, x_test, y_train, y_test = data
    previous = mixed_precision.global_policy()
    mixed_precision.set_global_policy(policy)
    try:
        tf.keras.utils.set_random_seed(0)
        model = build()
    finally:
        mixed_precision.set_global_policy(previous)  # the model keeps its layers' policies
    model.compile(optimizer=tf.keras.optimizers.Adam(0.003),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=64, epochs=epochs, verbose=0)
    seconds = (time.perf_counter() - start) / epochs
    accuracy = model.evaluate(x_test, y_test, verbose=0)[1]
    return model, accuracy, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--compare", action="store_true",
                        help="train in float32 too, and print both timings")
    parser.add_argument("--policy", choices=["mixed_float16", "mixed_bfloat16"],
                        default="mixed_float16")
    args = parser.parse_args()

    x, y = load_digits(return_X_y=True)
    data = train_test_split((x / 16.0).astype(np.float32), y, test_size=0.25, random_state=0)
    model, accuracy, seconds = train(args.policy, data, args.epochs)
    dense = model.get_layer("dense_1")
    print(f"policy {dense.dtype_policy.name}: compute dtype {dense.compute_dtype}, variable "
          f"dtype {dense.variable_dtype}; kernel {dense.kernel.dtype.name}; hidden outputs "
          f"{dense(data[1][:1]).dtype.name}; predictions "
          f"{model(data[1][:1]).dtype.name}")
    optimizer = model.optimizer
    if isinstance(optimizer, mixed_precision.LossScaleOptimizer):
        print(f"optimizer: {type(optimizer).__name__}({type(optimizer.inner_optimizer).__name__}"
              f"), loss scale after {int(optimizer.iterations.numpy())} steps: "
              f"{float(optimizer.dynamic_scale.numpy()):g}")
    else:
        print(f"optimizer: {type(optimizer).__name__} (no loss scaling)")
    print(f"test accuracy ({args.policy}): {accuracy:.3f}")
    if args.compare:
        _, accuracy32, seconds32 = train("float32", data, args.epochs)
        print(f"test accuracy (float32): {accuracy32:.3f}")
        print(f"seconds per epoch: {seconds:.3f} ({args.policy}), {seconds32:.3f} (float32)")


if __name__ == "__main__":
    main()
