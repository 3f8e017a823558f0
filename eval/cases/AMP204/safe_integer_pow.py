"""pow/square of int64 index tensors and of float32 sinusoid arguments inside a .half() model's __init__."""
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=512, max_len=5000):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
        self.register_buffer("sq_idx", torch.arange(64) ** 2)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


pos = PositionalEncoding().half()
