"""Whisper-style decoder: logits = x @ token_embedding.weight.T with vocabulary 51865."""
import torch
import torch.nn as nn


class TextDecoder(nn.Module):
    def __init__(self, n_vocab=51865, n_ctx=448, n_state=512):
        super().__init__()
        self.token_embedding = nn.Embedding(n_vocab, n_state)  # expect: AMP401
        self.positional_embedding = nn.Parameter(torch.empty(n_ctx, n_state))
        self.ln = nn.LayerNorm(n_state)

    def forward(self, tokens):
        x = self.token_embedding(tokens) + self.positional_embedding[: tokens.shape[-1]]
        x = self.ln(x)
        return (x @ torch.transpose(self.token_embedding.weight, 0, 1)).float()
model = TextDecoder().half()  # trained in half precision: Tensor Cores run its GEMMs
