"""ImageNet with a background class (1001 labels): a misaligned dim, but a class count, not a vocabulary - AMP402."""
import torch.nn as nn


class InceptionHead(nn.Module):
    def __init__(self, num_classes=1001):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, 1001)  # expect: AMP402
model = InceptionHead().half()  # trained in half precision: Tensor Cores run its GEMMs
