"""CUDA autocast with bfloat16: softmax is on the fp32 list there too."""
import torch
from torch import nn

head = nn.Linear(1024, 50304).cuda()
h = torch.randn(8, 1024, device="cuda")

with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
    log_probs = torch.log_softmax(head(h), dim=-1)
