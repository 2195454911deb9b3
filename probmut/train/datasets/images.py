"""Data from an image folder: one sub-folder per class, either inside ``train/`` and
``test/`` sub-folders or in the folder itself with a test split (a share of each class
held out, :func:`~probmut.train.datasets.dataset.stratified_split`). The layout is
checked without TensorFlow (:func:`image_folder_layout`); Keras reads the images."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets.dataset import (
    SPLIT_SEED,
    Dataset,
    normalised,
    sha256_file,
    stratified_split,
)

#: The image files Keras' ``image_dataset_from_directory`` reads.
IMAGE_SUFFIXES = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _class_folders(folder: Path) -> dict[str, list[Path]]:
    """Class name -> its image files (searched recursively, as Keras does), sorted."""
    classes = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        classes[sub.name] = sorted(p for p in sub.rglob("*")
                                   if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if len(classes) < 2:
        raise ProbmutError(f"{folder}: an image folder needs one sub-folder per class "
                           f"(at least two), found {len(classes)}", option="data")
    empty = [name for name, files in classes.items() if not files]
    if empty:
        raise ProbmutError(f"{folder}: class folder {empty[0]!r} holds no images "
                           f"({', '.join(IMAGE_SUFFIXES)})", option="data")
    return classes


def image_folder_layout(folder: Path, test_split: float | None) -> dict[str, dict]:
    """The ``train``/``test`` class folders of an image folder, checked (no TensorFlow).

    Either ``folder/train/CLASS/`` and ``folder/test/CLASS/`` (same classes), or
    ``folder/CLASS/`` and a ``test_split`` share (returned as ``{"all": ...}``).
    """
    split = (folder / "train").is_dir() and (folder / "test").is_dir()
    if split:
        if test_split is not None:
            raise ProbmutError(f"{folder} has train/ and test/ sub-folders; a test split is "
                               "for a folder of class folders only", option="test_split")
        layout = {"train": _class_folders(folder / "train"),
                  "test": _class_folders(folder / "test")}
        if list(layout["train"]) != list(layout["test"]):
            raise ProbmutError(f"{folder}: train/ and test/ must hold the same class folders, "
                               f"got {list(layout['train'])} and {list(layout['test'])}",
                               option="data")
        return layout
    if test_split is None:
        raise ProbmutError(f"{folder} has no train/ and test/ sub-folders: give a test split "
                           "SHARE to hold out a share of each class as the test set",
                           option="test_split")
    return {"all": _class_folders(folder)}


def parse_image_size(text: str | None) -> tuple[int, int] | None:
    """``HEIGHTxWIDTH`` or ``SIZE`` in pixels as (height, width); None for None.

    >>> parse_image_size("28x32"), parse_image_size("32")
    ((28, 32), (32, 32))
    """
    if text is None:
        return None
    parts = text.lower().split("x")
    try:
        size = tuple(int(p) for p in parts)
    except ValueError:
        size = ()
    if len(size) == 1:
        size = size * 2
    if len(size) != 2 or min(size) < 1:
        raise ProbmutError(f"the image size must be HEIGHTxWIDTH or SIZE in pixels, e.g. 28x28 "
                           f"or 32, got {text!r}", option="image_size")
    return size


def load_image_folder(folder: Path, size: tuple[int, int] | None,
                      test_split: float | None) -> Dataset:
    """The images of ``folder`` (see :func:`image_folder_layout`) resized to ``size``
    (default: the first image's), read by Keras' ``image_dataset_from_directory``."""
    import keras
    import tensorflow as tf

    layout = image_folder_layout(folder, test_split)
    files = [p for classes in layout.values() for images in classes.values() for p in images]

    def decode(path):
        return tf.io.decode_image(tf.io.read_file(str(path)), expand_animations=False)

    def unreadable(error) -> ProbmutError:
        """The first image that cannot be decoded named (Keras' error names none)."""
        for path in files:
            try:
                decode(path)
            except tf.errors.OpError as problem:
                error = problem
                break
        else:
            path = None
        what = f"cannot read the image {path}" if path else "cannot read its images"
        message = re.sub(r"\{\{.*?\}\}|\[\[.*?\]\]|\[Op:.*", "", error.message)  # TF's op names
        return ProbmutError(f"{folder}: {what} ({' '.join(message.split())}); remove or "
                            "replace it", option="data")

    try:
        shape = decode(files[0]).shape
    except tf.errors.OpError as error:
        raise unreadable(error) from None
    size = size or (int(shape[0]), int(shape[1]))
    color_mode = {1: "grayscale", 2: "grayscale", 3: "rgb"}.get(int(shape[-1]), "rgba")

    def read(part):
        images = keras.utils.image_dataset_from_directory(
            folder / part if part != "all" else folder, labels="inferred", label_mode="int",
            color_mode=color_mode, batch_size=256, image_size=size, shuffle=False,
            verbose=False)
        try:
            xs, ys = zip(*((x.numpy(), y.numpy()) for x, y in images), strict=True)
        except tf.errors.OpError as error:
            raise unreadable(error) from None
        return np.concatenate(xs), np.concatenate(ys)

    if "all" in layout:
        x, y = read("all")
        train, test = stratified_split(y, test_split)
        arrays = x[train], y[train], x[test], y[test]
        split = f"test: {test_split:g} of each class (seed {SPLIT_SEED})"
    else:
        arrays = (*read("train"), *read("test"))
        split = "test: the test/ sub-folder"
    tree = hashlib.sha256()
    for path in files:
        tree.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
    data = normalised(folder.name, *arrays, scale=255.0,
                      source=f"image folder {folder} ({len(files)} images, {color_mode}, "
                             f"resized to {size[0]}x{size[1]})",
                      files={f"{folder.name}/": tree.hexdigest()}, split=split)
    return dataclasses.replace(data, class_names=tuple(next(iter(layout.values()))))
