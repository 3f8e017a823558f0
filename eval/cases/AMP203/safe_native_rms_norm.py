"""nn.RMSNorm / F.rms_norm in a .half() model: native kernels keep statistics in fp32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim=2048):
        super().__init__()
        self.attn_norm = nn.RMSNorm(dim, eps=1e-6)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(self.attn_norm(x))
        return x + F.rms_norm(h, (h.size(-1),), eps=1e-6)


block = Block().to(torch.float16)
