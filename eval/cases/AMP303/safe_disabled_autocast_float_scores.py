"""finfo(float32).min inside autocast(enabled=False) on scores explicitly upcast with .float()."""
import torch

q = torch.randn(2, 128, 64, device="cuda")
k = torch.randn(2, 128, 64, device="cuda")
mask = torch.ones(128, 128, dtype=torch.bool, device="cuda").tril()

with torch.autocast("cuda"):
    scores = q @ k.transpose(-1, -2)
    with torch.autocast("cuda", enabled=False):
        scores = scores.float().masked_fill(~mask, torch.finfo(torch.float32).min)
        probs = scores.softmax(-1)
