"""torch.where(mask, scores, finfo(float32).min) with float16 scores: silently -inf."""
import torch
import torch.nn as nn


class Router(nn.Module):
    def __init__(self, d=1024, n=64):
        super().__init__()
        self.gate = nn.Linear(d, n, bias=False)

    def forward(self, x, capacity_ok):
        logits = self.gate(x)
        return torch.where(capacity_ok, logits, torch.finfo(torch.float32).min)  # expect: AMP303


router = Router().half()
