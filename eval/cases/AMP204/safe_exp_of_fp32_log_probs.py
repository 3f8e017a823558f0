"""Half model; exp of log-probabilities computed with dtype=torch.float32 (float32 values, at most 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

lm_head = nn.Linear(1024, 32000, bias=False).cuda().half()


def token_probs(hidden, tokens):
    logp = F.log_softmax(lm_head(hidden), dim=-1, dtype=torch.float32)
    return torch.exp(logp.gather(-1, tokens.unsqueeze(-1)))
