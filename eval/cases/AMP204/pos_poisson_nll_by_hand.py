"""Hand-written Poisson NLL: exp(log_rate) in a model cast with .to(dtype=torch.float16)."""
import torch
import torch.nn as nn


class CountModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, x, counts):
        log_rate = self.net(x).squeeze(-1)
        nll = torch.exp(log_rate) - counts * log_rate  # expect: AMP204
        return nll


model = CountModel().to(device="cuda", dtype=torch.float16)
