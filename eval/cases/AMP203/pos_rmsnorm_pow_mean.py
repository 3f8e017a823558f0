"""Hand-written RMSNorm (mean of squares) in a model cast with .half()."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)  # expect: AMP203
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Block(nn.Module):
    def __init__(self, dim=4096):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.ffn = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.ffn(self.norm(x))


model = nn.Sequential(*[Block() for _ in range(4)]).cuda().half()
