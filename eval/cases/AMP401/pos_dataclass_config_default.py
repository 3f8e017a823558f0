"""nanoGPT with the unpadded GPT-2 vocabulary as the config default; lm_head and wte are weight-tied."""
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50257
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)  # expect: AMP401
        self.wte.weight = self.lm_head.weight
model = GPT(GPTConfig()).half()  # trained in half precision: Tensor Cores run its GEMMs
