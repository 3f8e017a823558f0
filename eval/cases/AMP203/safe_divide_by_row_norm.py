"""Embedding L2-normalisation written as x / x.norm(dim=-1) in a .half() projection head: the row norm
accumulates in float32 and is inf only above 65504 (a look-alike since norms were measured)."""
import torch.nn as nn


class ProjectionHead(nn.Module):
    def __init__(self, in_dim=2048, out_dim=256):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, in_dim), nn.ReLU(), nn.Linear(in_dim, out_dim))

    def forward(self, x):
        z = self.mlp(x)
        return z / z.norm(dim=-1, keepdim=True)


head = ProjectionHead().cuda().half()
