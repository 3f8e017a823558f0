"""Hand-written GroupNorm-like statistics with .sum() in a model cast with .half()."""
import torch
import torch.nn as nn


class ManualGroupNorm(nn.Module):
    def __init__(self, groups, channels, eps=1e-5):
        super().__init__()
        self.groups = groups
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def forward(self, x):
        n, c, h, w = x.shape
        g = x.view(n, self.groups, -1)
        count = g.size(-1)
        mean = g.sum(-1, keepdim=True) / count  # expect: AMP203
        var = ((g - mean) ** 2).sum(-1, keepdim=True) / count  # expect: AMP203
        g = (g - mean) / (var + self.eps).sqrt()
        return g.view(n, c, h, w) * self.gamma + self.beta


unet_block = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), ManualGroupNorm(32, 64), nn.SiLU()).cuda().half()
