"""Tensor.exp() of a predicted log-scale (heteroscedastic head) in a .half() model."""
import torch
import torch.nn as nn


class GaussianHead(nn.Module):
    def __init__(self, d=256, out=16):
        super().__init__()
        self.loc = nn.Linear(d, out)
        self.log_scale = nn.Linear(d, out)

    def forward(self, h):
        scale = self.log_scale(h).exp()  # expect: AMP204
        return self.loc(h) + scale * torch.randn_like(scale)


head = GaussianHead().half()
