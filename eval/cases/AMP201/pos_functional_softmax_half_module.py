"""Attention probabilities computed with F.softmax inside a module cast wholesale with .half()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        dots = (q * self.scale) @ k.transpose(-1, -2)
        attn = F.softmax(dots, dim=-1)  # expect: AMP201
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.to_out(out)


model = SelfAttention(512).cuda().half().eval()
with torch.no_grad():
    y = model(torch.randn(2, 128, 512, device="cuda", dtype=torch.float16))
