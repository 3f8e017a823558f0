"""torch.finfo(torch.float16).min on a float16 tensor: fits exactly (-65504)."""
import torch

scores = torch.randn(8, 128, 128, device="cuda", dtype=torch.float16)
causal = torch.ones(128, 128, dtype=torch.bool, device="cuda").tril()
scores = scores.masked_fill(~causal, torch.finfo(torch.float16).min)
