"""masked_fill with torch.finfo(torch.float32).min on float16 scores of a .half() module (raises)."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)
        scores = scores.masked_fill(~mask, torch.finfo(torch.float32).min)  # expect: AMP303
        return scores.softmax(dim=-1, dtype=torch.float32).type_as(v) @ v


attn = Attention().cuda().half()
