"""torch.full without dtype creates float32 even inside a .half() module's forward; fp16 + fp32 promotes."""
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.q = nn.Linear(d, d)

    def forward(self, x):
        scores = self.q(x) @ x.transpose(-1, -2)
        T = scores.size(-1)
        bias = torch.triu(torch.full((T, T), -1e9, device=x.device), diagonal=1)
        return torch.softmax(scores + bias, dim=-1)


dec = Decoder().half()
