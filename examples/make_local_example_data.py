"""Small local data sets for the text and image configs: no download, the same files on every
run, in a second or two.

    python examples/make_local_example_data.py [--out examples/local_data]

- ``texts.csv``: 600 short sentences (columns ``text``, ``label``) about one of three
  topics (``cooking``, ``space``, ``sports``): each has two to four of its topic's words among
  words common to all topics, with punctuation and capitals that ``TextVectorization``'s
  ``lower_and_strip_punctuation`` takes away.  For ``configs/text_classifier.yaml``.
- ``shapes/``: 240 grey 16x16 PNG images in one folder per class (``disk``, ``horizontal``,
  ``vertical``: a filled disk, horizontal bars, vertical bars) at random places and sizes
  over noise, as ``image_dataset_from_directory`` reads them.  For
  ``configs/image_classifier.yaml``.
- ``two_inputs.npz``: 400 rows for a model of two inputs and two outputs
  (``configs/two_input_regression.yaml``): ``x_numbers`` (400, 4) and ``x_extra`` (400, 2)
  standard normal; ``y_sum`` (400,) a noisy linear function of both, ``y_pair`` (400, 2) the
  products of pairs across them.  Its own seeded generator: the same file whatever the other
  options are.

The PNG files are written with the standard library alone (zlib), so no imaging package is
needed to make them.
"""
import argparse
import csv
import os
import struct
import zlib

import numpy as np

TOPICS = {
    "cooking": ["oven", "flour", "recipe", "garlic", "simmer", "butter", "onion", "bake",
                "kitchen", "pepper", "sauce", "dough"],
    "space": ["orbit", "rocket", "planet", "comet", "telescope", "galaxy", "launch", "moon",
              "asteroid", "nebula", "astronaut", "stars"],
    "sports": ["goal", "match", "coach", "referee", "league", "striker", "score", "team",
               "season", "penalty", "stadium", "trophy"],
}
COMMON = ["the", "a", "we", "saw", "today", "really", "new", "about", "and", "it", "was",
          "great", "with", "some", "old", "friends", "this", "week", "after", "long", "day",
          "news", "said", "more", "than", "ever", "people", "talk"]
PUNCTUATION = ["", "", ",", ".", "!", "?"]
SIZE = 16


def texts(n, rng):
    """``n`` (sentence, topic) rows."""
    topics = sorted(TOPICS)
    rows = []
    for i in range(n):
        topic = topics[i % len(topics)]
        words = list(rng.choice(COMMON, int(rng.integers(4, 9))))
        for word in rng.choice(TOPICS[topic], int(rng.integers(2, 5)), replace=False):
            words.insert(int(rng.integers(0, len(words) + 1)), str(word))
        words = [w.capitalize() if rng.random() < 0.15 else w for w in words]
        words = [w + str(rng.choice(PUNCTUATION)) for w in words]
        rows.append((" ".join(words), topic))
    order = rng.permutation(n)
    return [rows[i] for i in order]


def image(kind, rng):
    """A 16x16 uint8 image of ``kind`` over noise."""
    pixels = rng.normal(40, 20, (SIZE, SIZE))
    if kind == "disk":
        r = rng.uniform(3, 6)
        cy, cx = rng.uniform(r, SIZE - r, 2)
        yy, xx = np.mgrid[:SIZE, :SIZE]
        pixels[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] += 160
    else:
        period, width = int(rng.integers(4, 6)), int(rng.integers(1, 3))
        phase = int(rng.integers(0, period))
        bars = (np.arange(SIZE) + phase) % period < width
        if kind == "horizontal":
            pixels[bars, :] += 160
        else:
            pixels[:, bars] += 160
    return np.clip(np.round(pixels), 0, 255).astype(np.uint8)


def two_input_arrays(rows=400):
    """The arrays of ``two_inputs.npz`` (a generator of their own: the same on every call)."""
    rng = np.random.default_rng(23)
    numbers = rng.standard_normal((rows, 4))
    extra = rng.standard_normal((rows, 2))
    total = numbers @ [1.0, -2.0, 0.5, 1.5] + extra @ [3.0, -1.0] + 0.1 * rng.standard_normal(rows)
    pair = np.stack([numbers[:, 0] * extra[:, 0], numbers[:, 1] * extra[:, 1]], axis=1)
    return {"x_numbers": numbers.astype(np.float32), "x_extra": extra.astype(np.float32),
            "y_sum": total.astype(np.float32), "y_pair": pair.astype(np.float32)}


def write_png(path, pixels):
    """A greyscale 8-bit PNG of ``pixels`` (height, width) uint8."""
    height, width = pixels.shape
    raw = b"".join(b"\x00" + pixels[row].tobytes() for row in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "local_data"))
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--images-per-class", type=int, default=80)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    os.makedirs(args.out, exist_ok=True)
    text_path = os.path.join(args.out, "texts.csv")
    with open(text_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(texts(args.texts, rng))
    for kind in ("disk", "horizontal", "vertical"):
        folder = os.path.join(args.out, "shapes", kind)
        os.makedirs(folder, exist_ok=True)
        for i in range(args.images_per_class):
            write_png(os.path.join(folder, f"{kind}_{i:03d}.png"), image(kind, rng))
    np.savez(os.path.join(args.out, "two_inputs.npz"), **two_input_arrays())
    print(f"wrote {text_path} ({args.texts} texts), {args.images_per_class * 3} images "
          f"under {os.path.join(args.out, 'shapes')} and two_inputs.npz")


if __name__ == "__main__":
    main()
