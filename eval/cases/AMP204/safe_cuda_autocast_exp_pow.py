"""Under CUDA autocast exp and pow are on the fp32 list: they run in float32."""
import torch
import torch.nn as nn

head = nn.Linear(512, 64).cuda()
x = torch.randn(32, 512, device="cuda")

with torch.autocast("cuda"):
    logvar = head(x)
    std = torch.exp(0.5 * logvar)
    energy = logvar.pow(2)
