"""pytorch-pretrained-bert style LayerNorm written by hand, model cast with .half(); eps 1e-12 inside sqrt."""
import torch
import torch.nn as nn


class BertLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
        s = (x - u).pow(2).mean(-1, keepdim=True)  # expect: AMP203
        x = (x - u) / torch.sqrt(s + self.variance_epsilon)  # expect: AMP302
        return self.weight * x + self.bias


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(768, 768)
        self.LayerNorm = BertLayerNorm(768)

    def forward(self, h):
        return self.LayerNorm(self.dense(h) + h)


encoder = Encoder().cuda().half()
