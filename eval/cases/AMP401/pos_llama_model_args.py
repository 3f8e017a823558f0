"""LLaMA-style ModelArgs dataclass with vocab_size 32001 (an added pad token)."""
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    vocab_size: int = 32001
    norm_eps: float = 1e-5


class Transformer(nn.Module):
    def __init__(self, params: ModelArgs):
        super().__init__()
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.norm = nn.RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)  # expect: AMP401


model = Transformer(ModelArgs())
model.half()  # trained in half precision: Tensor Cores run its GEMMs
