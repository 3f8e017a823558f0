"""Under CUDA autocast the module input stays float32 but the scores are float16: finfo of the input does not fit."""
import torch
import torch.nn as nn


class PaddedAttention(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, hidden_states, key_padding_mask):
        scores = torch.matmul(self.q(hidden_states), self.k(hidden_states).transpose(-1, -2))
        mask_value = torch.finfo(hidden_states.dtype).min
        scores = scores.masked_fill(key_padding_mask[:, None, :], mask_value)  # expect: AMP303
        return scores.softmax(dim=-1)


attn = PaddedAttention().cuda()
with torch.autocast("cuda"):
    out = attn(torch.randn(2, 16, 512, device="cuda"), torch.zeros(2, 16, dtype=torch.bool, device="cuda"))
