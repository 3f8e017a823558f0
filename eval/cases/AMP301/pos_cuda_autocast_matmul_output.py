"""Inside CUDA autocast the matmul output is float16 and masked_fill is unlisted: -1e9 raises."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d=512, heads=8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, pad_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q * (d // self.heads) ** -0.5, k.transpose(-1, -2))
        scores = scores.masked_fill(pad_mask[:, None, None, :], -1e9)  # expect: AMP301
        return torch.matmul(F.softmax(scores, dim=-1), v)


attn = Attention().cuda()
x = torch.randn(4, 64, 512, device="cuda")
pad = torch.zeros(4, 64, dtype=torch.bool, device="cuda")
with torch.autocast("cuda"):
    out = attn(x, pad)
