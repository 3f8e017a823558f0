"""GPT-2 LM head with the raw vocabulary size 50257 (not a multiple of 8)."""
import torch.nn as nn


class GPT2Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(768, 50257, bias=False)  # expect: AMP401

    def forward(self, h):
        return self.lm_head(h)
model = GPT2Head().half()  # trained in half precision: Tensor Cores run its GEMMs
