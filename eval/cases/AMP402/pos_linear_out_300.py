"""Projection to 300-d word-vector space: out_features 300 (>= 128, not a multiple of 8)."""
import torch.nn as nn


class ToWordVectors(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(768, 300)  # expect: AMP402

    def forward(self, h):
        return self.proj(h)
model = ToWordVectors().half()  # trained in half precision: Tensor Cores run its GEMMs
