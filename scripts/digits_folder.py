"""Write scikit-learn's bundled digits as an image folder: one PNG per image, one
sub-folder per class (``OUT/0/0000.png`` ...), the layout ``probmut train --data DIR``
reads. The example of an image folder in docs/training.md; needs no network.

    python scripts/digits_folder.py digits_png
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write (created)")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    images = np.round(x * 255 / 16).astype(np.uint8).reshape(-1, 8, 8, 1)
    for index, (image, label) in enumerate(zip(images, y, strict=True)):
        path = args.out / str(label) / f"{index:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tf.io.encode_png(image).numpy())
    print(f"{args.out}: {len(y)} images in {len(set(y))} class folders")


if __name__ == "__main__":
    main()
