"""Hand-written softplus log(1 + exp(x)) in a .half() model."""
import torch
import torch.nn as nn


class PositiveScale(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return torch.log(1 + torch.exp(self.fc(x)))  # expect: AMP204


mod = PositiveScale().half()
