"""torch.mean / torch.sum (functional forms) on a tensor cast with .to(torch.float16)."""
import torch

acts = torch.randn(64, 4096).to(torch.float16)
channel_mean = torch.mean(acts, dim=0)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
channel_energy = torch.sum(acts * acts, dim=0)  # expect: AMP203
