"""Statistics of float16 activations computed on a .float() copy (activation logging hook)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 512)).cuda().half()
stats = {}


def log_stats(module, inputs, output):
    out = output.detach().float()
    stats[module] = (out.mean().item(), out.std().item(), out.pow(2).mean().sqrt().item())


for m in model:
    m.register_forward_hook(log_stats)
