"""Inside CPU fp16 autocast, the softmax runs in an autocast(enabled=False) region on a .float() input."""
import torch
import torch.nn.functional as F

proj = torch.nn.Linear(64, 64)
x = torch.randn(8, 64)

with torch.autocast("cpu", dtype=torch.float16):
    scores = proj(x) @ x.T
    with torch.autocast("cpu", enabled=False):
        attn = F.softmax(scores.float(), dim=-1)
