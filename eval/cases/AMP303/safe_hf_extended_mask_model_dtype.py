"""HF get_extended_attention_mask: the additive mask uses finfo(self.dtype).min with the mask already cast to self.dtype."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, d=768):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def forward(self, x, attention_mask):
        extended = attention_mask[:, None, None, :].to(dtype=self.dtype)
        extended = (1.0 - extended) * torch.finfo(self.dtype).min
        q, k = self.qk(x).chunk(2, -1)
        return (q @ k.transpose(-1, -2)).unsqueeze(1) + extended


enc = Encoder().half()
