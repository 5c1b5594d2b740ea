# labels: task::captioning author::modelbench-examples
"""A small "application" that runs two models, as a script found in the wild
would: an image captioner whose encoder is a CNN wrapped inside it, and a
text classifier on token ids. Nothing here knows about modelbench:

    modelbench script captioning_demo.py --analyze-only
    modelbench script captioning_demo.py --analyze-only --max-depth 1
    modelbench script captioning_demo.py -c EAGER,JIT_FREEZE,ORT_CPU,ONEDNN
"""

import torch
from torch import nn


class ImageEncoder(nn.Module):
    """Conv + BN + ReLU twice, then global pooling: a 64-d image embedding."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        )

    def forward(self, images):
        return self.features(images).mean((2, 3))


class Captioner(nn.Module):
    """The encoder wrapped inside another module, with a word head."""

    def __init__(self, vocabulary: int = 100):
        super().__init__()
        self.encoder = ImageEncoder()
        self.words = nn.Linear(64, vocabulary)

    def forward(self, images):
        return self.words(self.encoder(images))


class TextClassifier(nn.Module):
    """Token ids -> embedding bag -> two-layer MLP."""

    def __init__(self, vocabulary: int = 100, classes: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, 48)
        self.mlp = nn.Sequential(nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, classes))

    def forward(self, ids):
        return self.mlp(self.embed(ids).mean(1))


def caption(model, images, length: int = 5):
    """Greedy 'captions': the top words of each image."""
    with torch.no_grad():
        scores = model(images)
    return scores.topk(length, dim=1).indices


def main():
    torch.manual_seed(0)
    captioner = Captioner().eval()
    classifier = TextClassifier().eval()
    images = torch.randn(2, 3, 64, 64)
    for step in range(3):
        words = caption(captioner, images)
        with torch.no_grad():
            topic = classifier(words).argmax(1)
        print(f"step {step}: words {words[0].tolist()} topic {topic.tolist()}")


if __name__ == "__main__":
    main()
