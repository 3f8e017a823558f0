"""F.normalize on float16 embeddings: its default eps=1e-12 rounds to 0 (zero vectors -> NaN)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ArcFaceHead(nn.Module):
    def __init__(self, dim=512, n_classes=1000):
        super().__init__()
        self.W = nn.Parameter(torch.randn(n_classes, dim))

    def forward(self, emb):
        return F.normalize(emb, dim=-1) @ F.normalize(self.W, dim=-1).t()  # expect: AMP302


head = ArcFaceHead().cuda().half()
