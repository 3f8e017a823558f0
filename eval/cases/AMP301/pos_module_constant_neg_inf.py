"""The fill value is a module constant NEG_INF = -1e9 (constant propagation)."""
import torch
import torch.nn as nn

NEG_INF = -1e9


class Biaffine(nn.Module):
    def __init__(self, d=400):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(d, d))

    def forward(self, heads, deps, mask):
        scores = heads @ self.W @ deps.transpose(1, 2)
        return scores.masked_fill(~mask.unsqueeze(1), NEG_INF)  # expect: AMP301


parser_head = Biaffine().cuda().half()
