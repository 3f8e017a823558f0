"""Per-token log-probabilities with F.log_softmax in a model cast with .to(torch.float16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PolicyHead(nn.Module):
    def __init__(self, d_model=1024, vocab_size=32000):
        super().__init__()
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, hidden, tokens):
        logp = F.log_softmax(self.lm_head(hidden), dim=-1)  # expect: AMP201
        return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


policy = PolicyHead().to(torch.float16)
