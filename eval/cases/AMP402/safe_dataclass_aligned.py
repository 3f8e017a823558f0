"""Config defaults that are all multiples of 8."""
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class Config:
    dim: int = 4096
    intermediate_size: int = 11008


class FFN(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.up = nn.Linear(cfg.dim, cfg.intermediate_size, bias=False)
        self.down = nn.Linear(cfg.intermediate_size, cfg.dim, bias=False)
