"""scores.new_full(..., finfo(float32).min) with float16 scores."""
import torch
import torch.nn as nn


class MemoryAttention(nn.Module):
    def __init__(self, d=256, n_slots=64):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.n_slots = n_slots

    def forward(self, x, memory):
        scores = self.q(x) @ memory.transpose(-1, -2)
        empty = scores.new_full((scores.size(0), scores.size(1), self.n_slots), torch.finfo(torch.float32).min)  # expect: AMP303
        return torch.cat([scores, empty], dim=-1)


mem = MemoryAttention().half()
