"""Keyword arguments: out_channels=150 (ADE20K has 150 classes)."""
import torch.nn as nn


class SegHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Conv2d(in_channels=512, out_channels=150, kernel_size=1)  # expect: AMP402
model = SegHead().half()  # trained in half precision: Tensor Cores run its GEMMs
