"""Profile a whole inference function: Python pre-processing (resize and
normalise an image, tokenise a caption), a model, Python post-processing,
and what each conversion would make of the whole call.

    PYTHONPATH=../../python /usr/bin/python3 profile_classify.py
    PYTHONPATH=../../python /usr/bin/python3 profile_classify.py --conversions EAGER,JIT_FREEZE,ORT_CPU

Only the module calls can be converted (captured at nn.Module.__call__:
Debian's PyTorch 1.13 has no TorchDynamo); the rest is uncaptured Python,
the same under every conversion.
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import modelbench

LABELS = ["cat", "dog", "bird", "fish", "horse", "sheep", "cow", "frog"]
VOCABULARY = {w: i for i, w in enumerate("a photo of the small big dark light animal in grass water sky".split())}


class ImageTextClassifier(nn.Module):
    """A small CNN for the image, an embedding bag for the caption, one head."""

    def __init__(self, classes: int = len(LABELS)):
        super().__init__()
        self.image = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        )
        self.text = nn.EmbeddingBag(len(VOCABULARY) + 1, 128)
        self.head = nn.Linear(256, classes)

    def forward(self, pixels, tokens):
        image = self.image(pixels).mean((2, 3))
        text = self.text(tokens)
        return self.head(torch.cat([image, text], 1))


def tokenise(caption: str, length: int = 8) -> torch.Tensor:
    """Words to ids in Python, padded to `length`."""
    ids = [VOCABULARY.get(w, len(VOCABULARY)) for w in caption.lower().split()][:length]
    return torch.tensor([ids + [len(VOCABULARY)] * (length - len(ids))])


def preprocess(image: torch.Tensor) -> torch.Tensor:
    """Resize to 96x96 and normalise per channel, as a serving stack does."""
    x = F.interpolate(image[None].float() / 255.0, size=(96, 96), mode="bilinear",
                      align_corners=False)
    mean = x.mean((2, 3), keepdim=True)
    std = x.std((2, 3), keepdim=True) + 1e-5
    return (x - mean) / std


model = ImageTextClassifier().eval()


@modelbench.profile
def classify(image: torch.Tensor, caption: str):
    """uint8 HxWx3 image and a caption -> (label, probability) top 3."""
    pixels = preprocess(image.permute(2, 0, 1))
    tokens = tokenise(caption)
    with torch.no_grad():
        logits = model(pixels, tokens)
    probabilities = logits.softmax(1)[0].tolist()
    ranked = sorted(zip(LABELS, probabilities), key=lambda p: -p[1])
    return [(label, round(p, 3)) for label, p in ranked[:3]]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conversions", default="EAGER,JIT_TRACE,JIT_FREEZE,ORT_CPU,ONEDNN")
    p.add_argument("--calls", type=int, default=30, help="calls profiled (default 30)")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per conversion")
    p.add_argument("--threads", type=int, default=None,
                   help="threads of the model here and in the benchmark (default: torch's)")
    p.add_argument("--no-validate", action="store_true")
    p.add_argument("--html", default=None, help="the engine's HTML report of the segments")
    args = p.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    images = [torch.randint(0, 256, (160, 200, 3), dtype=torch.uint8) for _ in range(4)]
    captions = ["a photo of a small dark animal in the grass", "the big light animal",
                "a dog in water", "sky"]
    config = {"min_time": args.min_time, "warmup_time": 0.2, "record": False,
              "html": args.html}
    with modelbench.profile_session(conversions=args.conversions.split(","), config=config,
                                    validate=not args.no_validate):
        for i in range(args.calls + 2):  # the first 2 calls are warm-up
            result = classify(images[i % 4], captions[i % 4])
    print(f"\nlast result: {result}")


if __name__ == "__main__":
    main()
