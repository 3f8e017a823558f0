"""No cast: finfo(float32).min on float32 scores."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)

    def forward(self, x, mask):
        q, k = self.qk(x).chunk(2, -1)
        return (q @ k.transpose(-1, -2)).masked_fill(~mask, torch.finfo(torch.float32).min)


attn = Attention().cuda()
