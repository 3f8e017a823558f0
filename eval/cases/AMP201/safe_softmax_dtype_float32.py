"""Half module, but softmax computed with dtype=torch.float32 and cast back (the AMP201 fix)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        dots = (q * self.scale) @ k.transpose(-1, -2)
        attn = F.softmax(dots, dim=-1, dtype=torch.float32).type_as(dots)
        return (attn @ v).transpose(1, 2).reshape(b, n, d)


model = SelfAttention(512).half()
