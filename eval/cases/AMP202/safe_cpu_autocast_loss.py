"""Loss under CPU fp16 autocast: cross_entropy is on CPU autocast's fp32 list too (reference sec. 7: fp16 in -> fp32 out)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
x = torch.randn(32, 128)
y = torch.randint(0, 10, (32,))

with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
