"""Vocabulary size from a module constant."""
import torch.nn as nn

VOCAB_SIZE = 50257
D_MODEL = 1024


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB_SIZE, D_MODEL)
        self.blocks = nn.ModuleList([nn.TransformerDecoderLayer(D_MODEL, 16, batch_first=True) for _ in range(4)])
        self.out = nn.Linear(D_MODEL, VOCAB_SIZE)  # expect: AMP401

    def forward(self, tokens, memory):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x, memory)
        return self.out(x)
model = Decoder().half()  # trained in half precision: Tensor Cores run its GEMMs
