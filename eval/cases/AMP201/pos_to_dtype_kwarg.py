"""Module cast wholesale with .to(device, dtype=torch.float16); softmax over the vocabulary for sampling."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    def __init__(self, vocab_size=32000, d_model=512):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.rnn = nn.GRU(d_model, d_model, batch_first=True)
        self.proj = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, temperature=1.0):
        h, _ = self.rnn(self.embed(tokens))
        logits = self.proj(h[:, -1]) / temperature
        return F.softmax(logits, dim=-1)  # expect: AMP201


decoder = Decoder().to("cuda", dtype=torch.float16)
