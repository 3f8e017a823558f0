"""nn.LogSoftmax output layer of a .half() tagger."""
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab_size=20000, emb_dim=128, hidden=256, n_tags=16):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_tags)
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        return self.log_softmax(self.out(h))  # expect: AMP201


tagger = Tagger().cuda().half()
