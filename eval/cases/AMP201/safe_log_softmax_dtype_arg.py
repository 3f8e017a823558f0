"""Half model; log_softmax with dtype=torch.float32 feeding the loss (fairseq get_normalized_probs)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LM(nn.Module):
    def __init__(self, vocab_size=32000, d_model=512):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.out = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens):
        return self.out(self.embed(tokens))

    def get_normalized_probs(self, logits, log_probs=True):
        if log_probs:
            return F.log_softmax(logits, dim=-1, dtype=torch.float32)
        return F.softmax(logits, dim=-1, dtype=torch.float32)


lm = LM().cuda().half()
