"""Image files as arrays for ``image_dataset_from_directory``: decoded (Pillow where it is
installed, any format; otherwise PNG through matplotlib where that can, else an error naming
Pillow), converted to a colour mode, cropped
or padded to an aspect ratio, and resized with TensorFlow's bilinear or nearest rule
(half-pixel centres, no antialiasing)."""
import os

import numpy as np

__all__ = ["load_image", "resize_bilinear", "resize_nearest", "CHANNELS"]

CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}


def _decode(path):
    """The file's pixels as uint8 (height, width, channels)."""
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        with Image.open(path) as image:
            image.seek(0)                             # an animated GIF: its first frame
            array = np.asarray(image.convert(_pillow_mode(image)))
        return array[..., None] if array.ndim == 2 else array
    needs = (f"Reading {os.path.basename(path)!r} needs Pillow (pip install Pillow): without "
             f"it only PNG files can be read, through matplotlib")
    if not path.lower().endswith(".png"):
        raise ImportError(needs)
    try:                                  # (matplotlib 3.3+ reads PNG through Pillow too)
        from matplotlib import image as mpimg
        array = mpimg.imread(path)                    # PNG: floats in [0, 1]
    except ImportError:
        raise ImportError(needs) from None
    array = np.round(array * 255).astype(np.uint8) if array.dtype.kind == "f" else array
    return array[..., None] if array.ndim == 2 else array


def _pillow_mode(image):
    """The mode keeping what the file holds: grey, colour, or colour with transparency."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        return "RGBA"
    return "L" if image.mode in ("L", "1", "I", "I;16") else "RGB"


def _to_mode(array, channels):
    have = array.shape[-1]
    if have == channels:
        return array
    rgb = array[..., :3] if have >= 3 else np.repeat(array[..., :1], 3, axis=-1)
    if channels == 1:               # ITU-R 601-2 luma, as Pillow's and libpng's conversion
        gray = rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
        return np.round(gray)[..., None].astype(np.uint8)
    if channels == 3:
        return rgb
    alpha = array[..., 3:4] if have == 4 else np.full(array.shape[:-1] + (1,), 255, np.uint8)
    return np.concatenate([rgb, alpha], axis=-1)


def _crop_to_aspect(image, height, width):
    h, w = image.shape[:2]
    crop_h = min(h, int(round(w * height / width)))
    crop_w = min(w, int(round(h * width / height)))
    top, left = (h - crop_h) // 2, (w - crop_w) // 2
    return image[top:top + crop_h, left:left + crop_w]


def _pad_to_aspect(image, height, width):
    h, w = image.shape[:2]
    pad_h = max(h, int(round(w * height / width)))
    pad_w = max(w, int(round(h * width / height)))
    out = np.zeros((pad_h, pad_w, image.shape[2]), image.dtype)
    top, left = (pad_h - h) // 2, (pad_w - w) // 2
    out[top:top + h, left:left + w] = image
    return out


def _axis_weights(size_in, size_out):
    """Source rows (lower, upper) and the weight of the upper one, per output row."""
    centres = (np.arange(size_out) + 0.5) * (size_in / size_out) - 0.5
    floor = np.floor(centres)
    lower = np.clip(floor, 0, size_in - 1).astype(np.int64)
    upper = np.clip(np.ceil(centres), 0, size_in - 1).astype(np.int64)
    return lower, upper, (centres - floor).astype(np.float32)


def resize_bilinear(image, height, width):
    """``tf.image.resize(image, (height, width))``: bilinear, half-pixel centres, float32."""
    image = image.astype(np.float32)
    top, bottom, wy = _axis_weights(image.shape[0], height)
    left, right, wx = _axis_weights(image.shape[1], width)
    rows = image[top] * (1 - wy)[:, None, None] + image[bottom] * wy[:, None, None]
    return rows[:, left] * (1 - wx)[None, :, None] + rows[:, right] * wx[None, :, None]


def resize_nearest(image, height, width):
    """``tf.image.resize(..., method="nearest")``: half-pixel centres, float32."""
    rows = np.minimum(((np.arange(height) + 0.5) * image.shape[0] / height).astype(np.int64),
                      image.shape[0] - 1)
    cols = np.minimum(((np.arange(width) + 0.5) * image.shape[1] / width).astype(np.int64),
                      image.shape[1] - 1)
    return image[rows][:, cols].astype(np.float32)


RESIZERS = {"bilinear": resize_bilinear, "nearest": resize_nearest}


def load_image(path, image_size, channels, interpolation="bilinear",
               crop_to_aspect_ratio=False, pad_to_aspect_ratio=False):
    """One image file as float32 (height, width, channels), values 0-255 (``interpolation``
    a key of ``RESIZERS``)."""
    image = _to_mode(_decode(path), channels)
    height, width = image_size
    if crop_to_aspect_ratio:
        image = _crop_to_aspect(image, height, width)
    elif pad_to_aspect_ratio:
        image = _pad_to_aspect(image, height, width)
    return RESIZERS[interpolation](image, height, width)
