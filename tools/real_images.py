#!/usr/bin/python3
"""Writes natural-image inputs for image models, from photographs shipped in
Debian's python3-skimage (nothing is downloaded).

Usage: real_images.py OUTDIR [--size S] [--count N] [--seed K] [--split]

Each sample is a random crop (scale 0.35-1 of the shorter side, random
position, mirrored half the time) of one of the photographs, resized to SxS,
scaled to [0, 1] and normalised with the ImageNet mean and standard
deviation, as torchvision's classifiers expect: float32 [1, 3, S, S] in
OUTDIR/test_data_set_K/input_0.pb (the layout `modelbench bench --inputs`
and `--calibration-inputs` read). With --split, OUTDIR/calibration and
OUTDIR/evaluation get disjoint photographs, so that a calibration never sees
the images it is judged on.

It exists for measurements ("how does int8 do on real-looking inputs"), not
for the test suite: `apt install python3-skimage` first.
"""

import argparse
import os
import sys

import numpy as np

try:
    from skimage import data, transform
    from skimage.color import gray2rgb
except ImportError:
    sys.exit("real_images.py needs python3-skimage (apt install python3-skimage)")
from onnx import numpy_helper

# Photographs (not synthetic test patterns) in skimage.data; grey ones are
# replicated to three channels.
PHOTOS = [
    "astronaut", "chelsea", "coffee", "rocket", "retina",
    "hubble_deep_field", "camera", "grass", "gravel", "brick", "moon",
    "coins", "immunohistochemistry", "page", "horse",
]
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def load(name):
    img = getattr(data, name)()
    if img.ndim == 2:
        img = gray2rgb(img)
    img = img[..., :3].astype(np.float32)
    return img / (255.0 if img.max() > 1.0 else 1.0)


def sample(img, size, rng):
    h, w, _ = img.shape
    side = int(min(h, w) * rng.uniform(0.35, 1.0))
    y = rng.integers(0, h - side + 1)
    x = rng.integers(0, w - side + 1)
    crop = img[y:y + side, x:x + side]
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    crop = transform.resize(crop, (size, size), anti_aliasing=True)
    x = (crop.astype(np.float32) - MEAN) / STD
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def write(outdir, photos, count, size, rng):
    os.makedirs(outdir, exist_ok=True)
    for k in range(count):
        img = photos[k % len(photos)]
        d = os.path.join(outdir, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        t = numpy_helper.from_array(sample(img, size, rng), "input")
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(t.SerializeToString())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    photos = []
    for name in PHOTOS:
        try:
            photos.append(load(name))
        except Exception as e:  # a photograph this version lacks
            print(f"skipping {name}: {e}", file=sys.stderr)
    if len(photos) < 4:
        sys.exit("too few photographs in skimage.data")
    if a.split:
        half = len(photos) // 2
        write(os.path.join(a.outdir, "calibration"), photos[:half], a.count,
              a.size, rng)
        write(os.path.join(a.outdir, "evaluation"), photos[half:], a.count,
              a.size, rng)
    else:
        write(a.outdir, photos, a.count, a.size, rng)
    print(f"wrote {a.count} samples of [1, 3, {a.size}, {a.size}] from "
          f"{len(photos)} photographs to {a.outdir}")


if __name__ == "__main__":
    main()
