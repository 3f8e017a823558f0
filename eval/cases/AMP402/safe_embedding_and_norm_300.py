"""300-d embedding table and LayerNorm(300): neither is a Linear/Conv GEMM."""
import torch.nn as nn


class WordEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(400000, 300)
        self.norm = nn.LayerNorm(300)
        self.rnn = nn.LSTM(300, 512, batch_first=True)
