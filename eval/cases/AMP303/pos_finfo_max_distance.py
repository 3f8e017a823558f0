"""finfo(float32).max used to exclude self-matches from float16 distances (nearest neighbour)."""
import torch
import torch.nn as nn


class ProtoNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 64))

    def forward(self, x):
        z = self.embed(x)
        dist = torch.cdist(z, z)
        eye = torch.eye(z.size(0), dtype=torch.bool, device=z.device)
        return dist.masked_fill(eye, torch.finfo(torch.float32).max).argmin(dim=-1)  # expect: AMP303


net = ProtoNet().cuda().half()
