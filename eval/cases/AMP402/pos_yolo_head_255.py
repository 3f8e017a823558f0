"""YOLOv3 detection head: 3 anchors x (80 classes + 5) = 255 output channels."""
import torch.nn as nn


class YOLOHead(nn.Module):
    def __init__(self, in_channels=256):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 512, kernel_size=3, padding=1)
        self.pred = nn.Conv2d(512, 255, kernel_size=1)  # expect: AMP402

    def forward(self, x):
        return self.pred(self.conv(x))
model = YOLOHead().half()  # trained in half precision: Tensor Cores run its GEMMs
