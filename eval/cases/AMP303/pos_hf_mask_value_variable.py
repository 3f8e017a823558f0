"""HF-style: mask_value taken from torch.float32 into a variable, then used on float16 attention weights."""
import torch
import torch.nn as nn


class GPTNeoStyleAttention(nn.Module):
    def __init__(self, d=768, max_positions=2048):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)
        self.register_buffer("bias", torch.tril(torch.ones(max_positions, max_positions, dtype=torch.bool)))

    def forward(self, x):
        T = x.size(1)
        q, k = self.qk(x).chunk(2, -1)
        attn_weights = torch.matmul(q, k.transpose(-1, -2))
        mask_value = torch.finfo(torch.float32).min
        attn_weights = torch.where(self.bias[:T, :T], attn_weights, mask_value)  # expect: AMP303
        return attn_weights


attn = GPTNeoStyleAttention().to(torch.float16)
