"""Reductions on float16 values that pass dtype=torch.float32 (the AMP203 fix)."""
import torch

acts = torch.randn(64, 4096, device="cuda").half()
channel_sum = acts.sum(dim=0, dtype=torch.float32)
channel_mean = torch.mean(acts, dim=0, dtype=torch.float32)
running = torch.cumsum(acts, dim=-1, dtype=torch.float32)
