"""Half model; the loss inputs are upcast with .float() (the AMP202 fix)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().half().eval()

with torch.no_grad():
    x = torch.randn(256, 784, device="cuda").half()
    y = torch.randint(0, 10, (256,), device="cuda")
    loss = F.cross_entropy(model(x).float(), y)
