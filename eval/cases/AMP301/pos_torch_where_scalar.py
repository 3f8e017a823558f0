"""torch.where(mask, scores, -1e9) on float16 scores: silently -inf (result keeps float16)."""
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, d=1024, n_experts=64):
        super().__init__()
        self.router = nn.Linear(d, n_experts, bias=False)

    def forward(self, x, allowed):
        logits = self.router(x)
        return torch.where(allowed, logits, -1e9)  # expect: AMP301


gate = Gate().half()
