"""Deprecated torch.cuda.amp.autocast (AMP501 fires) around the loss: still CUDA autocast, loss in fp32."""
import torch
import torch.nn as nn

model = nn.Linear(256, 8).cuda()
criterion = nn.SmoothL1Loss()
x = torch.randn(32, 256, device="cuda")
target = torch.randn(32, 8, device="cuda")

with torch.no_grad():
    with torch.cuda.amp.autocast():  # expect: AMP501
        loss = criterion(model(x), target)
