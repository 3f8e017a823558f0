"""torch.full(..., -1e9, dtype=scores.dtype) with float16 scores inside a .half() module."""
import torch
import torch.nn as nn


class SlidingWindowBias(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.q = nn.Linear(d, d)

    def forward(self, x):
        scores = self.q(x) @ x.transpose(-1, -2)
        T = scores.size(-1)
        bias = torch.full((T, T), -1e9, dtype=scores.dtype, device=scores.device)  # expect: AMP301
        return scores + torch.triu(bias, diagonal=1)


m = SlidingWindowBias().half()
