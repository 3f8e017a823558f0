"""Powers and exps of Python numbers (scales, schedules) inside a .half() model: not tensors."""
import math

import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim=512, heads=8, max_period=10000):
        super().__init__()
        self.scale = (dim // heads) ** -0.5
        self.freq0 = math.exp(-math.log(max_period) / dim)
        self.init_std = 0.02 / math.sqrt(2 * 12)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        return self.qkv(x) * self.scale * self.freq0 ** 2


attn = Attention().half()
