"""An nn.Softmax submodule applied inside a module cast with .half(); reported at the call, not the constructor."""
import torch
import torch.nn as nn


class AdditiveAttention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.score = nn.Linear(hidden, 1)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, h):
        weights = self.softmax(self.score(torch.tanh(h)))  # expect: AMP201
        return (weights * h).sum(dim=1)  # a softmax-weighted average of h: no larger than h, no AMP203


pool = AdditiveAttention(256).half()
