"""masked_fill with -1e30 on logits of a model cast with .to(torch.float16)."""
import torch
import torch.nn as nn


class ConstrainedDecoder(nn.Module):
    def __init__(self, d=512, vocab_size=32000):
        super().__init__()
        self.out = nn.Linear(d, vocab_size)

    def forward(self, h, banned):
        logits = self.out(h)
        return logits.masked_fill(banned, -1e30)  # expect: AMP301


dec = ConstrainedDecoder().to(torch.float16)
