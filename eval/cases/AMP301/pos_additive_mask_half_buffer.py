"""Additive mask `att + (1 - mask) * -1e9` where mask is a float buffer cast to half with the module."""
import torch
import torch.nn as nn


class LocalAttention(nn.Module):
    def __init__(self, d=256, window=64):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)
        band = torch.ones(window, window).triu(-8).tril(8)
        self.register_buffer("band", band)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        att = q @ k.transpose(-2, -1)
        att = att + (1.0 - self.band) * -1e9  # expect: AMP301
        return att.softmax(dim=-1, dtype=torch.float32)


local = LocalAttention().half()
