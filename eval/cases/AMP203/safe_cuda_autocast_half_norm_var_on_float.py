"""Under CUDA autocast the statistics are taken on an explicit .float() of the fp16 Linear output."""
import torch
import torch.nn as nn

fc = nn.Linear(1024, 1024).cuda()
x = torch.randn(8, 1024, device="cuda")

with torch.autocast("cuda"):
    h = fc(x)
    hf = h.float()
    var, mean = torch.var_mean(hf, dim=-1, keepdim=True)
    y = ((hf - mean) * torch.rsqrt(var + 1e-5)).type_as(h)
