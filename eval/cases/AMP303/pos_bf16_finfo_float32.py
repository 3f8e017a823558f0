"""bfloat16 model: finfo(float32).min (-3.40e38) exceeds bf16's range (-3.39e38) - masked_fill raises."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)

    def forward(self, x, mask):
        q, k = self.qk(x).chunk(2, -1)
        scores = q @ k.transpose(-1, -2)
        return scores.masked_fill(mask == 0, torch.finfo(torch.float32).min)  # expect: AMP303


attn = Attention().cuda().bfloat16()
