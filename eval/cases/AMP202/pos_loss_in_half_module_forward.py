"""nanoGPT-style: the loss is computed inside forward of a module that is cast with .half()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BigramLM(nn.Module):
    def __init__(self, vocab_size=50304, n_embd=768):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.tok(idx))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)  # expect: AMP202
        return logits, loss


model = BigramLM().cuda().half().eval()
