"""Odd-sized position / token-type embeddings are lookups, not vocabulary GEMMs (the word vocab 32000 is aligned)."""
import torch.nn as nn


class Embeddings(nn.Module):
    def __init__(self, hidden=768):
        super().__init__()
        self.word_embeddings = nn.Embedding(32000, hidden)
        self.position_embeddings = nn.Embedding(1025, hidden)
        self.token_type_embeddings = nn.Embedding(3, hidden)
        self.lm_head = nn.Linear(hidden, 32000, bias=False)
