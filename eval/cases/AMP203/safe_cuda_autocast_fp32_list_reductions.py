"""Under CUDA autocast sum, cumsum, norm, vector_norm and pow are on the fp32 list: these run in float32."""
import torch
import torch.nn as nn

proj = nn.Linear(1024, 1024).cuda()
x = torch.randn(16, 1024, device="cuda")

with torch.autocast("cuda"):
    h = proj(x)
    total = h.sum(dim=-1)
    running = h.cumsum(dim=-1)
    l2 = torch.linalg.vector_norm(h, dim=-1)
    frob = torch.norm(h)
    ms = h.pow(2).mean(-1)
