# labels: task::classification source::torchvision
"""Three torchvision classifiers (random weights: no download) on one batch,
as an evaluation script would run them:

    modelbench script torchvision_models.py --analyze-only
    modelbench script torchvision_models.py -c EAGER,JIT_FREEZE,ORT_CPU,ONEDNN
"""

import torch
import torchvision

torch.manual_seed(0)
images = torch.randn(1, 3, 224, 224)
models = {
    "resnet18": torchvision.models.resnet18(),
    "mobilenet_v3_small": torchvision.models.mobilenet_v3_small(),
    "squeezenet1_1": torchvision.models.squeezenet1_1(),
}
with torch.no_grad():
    for name, model in models.items():
        model.eval()
        top = model(images).argmax(1).item()
        print(f"{name}: class {top}")
