"""In-place masked_fill_ with -1e9 on float16 pointer scores."""
import torch
import torch.nn as nn


class PointerNet(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.w_ref = nn.Linear(hidden, hidden)
        self.w_q = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, query, ref, visited):
        u = self.v(torch.tanh(self.w_ref(ref) + self.w_q(query).unsqueeze(1))).squeeze(-1)
        u.masked_fill_(visited, -1e9)  # expect: AMP301
        return u


ptr = PointerNet().half()
