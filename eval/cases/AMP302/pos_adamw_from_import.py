"""`from torch.optim import AdamW` with eps=1e-8 over a model cast with .to(torch.float16)."""
import torch
from torch import nn
from torch.optim import AdamW


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.body(x)


net = Net().to(torch.float16)  # expect: AMP101
opt = AdamW(net.parameters(), lr=3e-4, weight_decay=0.05, eps=1e-8)  # expect: AMP302
