"""Classic causal attention mask with -1e9 in a module cast with .half() (raises at runtime)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=768, n_head=12, block_size=1024):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q * (1.0 / math.sqrt(k.size(-1)))) @ k.transpose(-2, -1)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, -1e9)  # expect: AMP301
        att = F.softmax(att.float(), dim=-1).type_as(att)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


attn = CausalSelfAttention().cuda().half()
