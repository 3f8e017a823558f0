"""F.mse_loss between float16 predictions and float16 targets (squared errors overflow above 256)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(256, 1, kernel_size=3, padding=1)

    def forward(self, feats):
        return self.conv(feats).squeeze(1)


head = DepthHead().half()
feats = torch.randn(4, 256, 60, 80).half()
depth_mm = (torch.rand(4, 60, 80) * 5000).half()
with torch.no_grad():
    err = F.mse_loss(head(feats), depth_mm)  # expect: AMP202
