"""finfo of another tensor that has the same float16 dtype (q and scores both come from the .half() module)."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)

    def forward(self, x, mask):
        q = self.q_proj(x)
        scores = q @ self.k_proj(x).transpose(-1, -2)
        return scores.masked_fill(~mask, torch.finfo(q.dtype).min)


attn = Attention().half()
