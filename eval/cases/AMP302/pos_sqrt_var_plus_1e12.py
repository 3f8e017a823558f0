"""Hand-written LayerNorm with sqrt(var + 1e-12) computed in float16 arithmetic."""
import torch
import torch.nn as nn


class TFStyleLayerNorm(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(hidden))
        self.beta = nn.Parameter(torch.zeros(hidden))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)  # expect: AMP203
        return self.gamma * (x - mean) / torch.sqrt(var + 1e-12) + self.beta  # expect: AMP302


ln = TFStyleLayerNorm(512).cuda().half()
