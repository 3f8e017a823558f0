"""Under CUDA autocast the weights stay float32 while matmul outputs are float16: finfo(weight.dtype) is wrong."""
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, a, b, valid):
        sim = self.proj(a) @ b.transpose(-1, -2)
        return sim.masked_fill(~valid, torch.finfo(self.proj.weight.dtype).min)  # expect: AMP303


scorer = Scorer().cuda()
with torch.autocast("cuda", dtype=torch.float16):
    s = scorer(torch.randn(4, 8, 512, device="cuda"), torch.randn(4, 8, 512, device="cuda"),
               torch.ones(4, 8, 8, dtype=torch.bool, device="cuda"))
