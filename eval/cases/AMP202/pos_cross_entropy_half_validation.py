"""Validation loss of a .half() classifier: F.cross_entropy on float16 logits."""
import torch
import torch.nn.functional as F
import torchvision

model = torchvision.models.resnet50(num_classes=1000).cuda().half().eval()


@torch.no_grad()
def evaluate(loader):
    total, n = 0.0, 0
    for images, targets in loader:
        logits = model(images.cuda().half())
        loss = F.cross_entropy(logits, targets.cuda())  # expect: AMP202
        total += loss.item() * targets.size(0)
        n += targets.size(0)
    return total / n
