"""HF NewGELUActivation written out: x ** 3 overflows float16 above 40.3; model cast with .half()."""
import math

import torch
import torch.nn as nn


class NewGELUActivation(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # expect: AMP204


class MLP(nn.Module):
    def __init__(self, d=768):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.act = NewGELUActivation()
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


mlp = MLP().half()
