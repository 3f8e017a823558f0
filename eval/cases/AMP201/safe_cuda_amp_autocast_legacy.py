"""Deprecated torch.cuda.amp.autocast (AMP501 fires on it) - softmax is still fp32 under CUDA autocast."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
x = torch.randn(64, 512, device="cuda")

with torch.cuda.amp.autocast():  # expect: AMP501
    probs = model(x).softmax(dim=-1)
