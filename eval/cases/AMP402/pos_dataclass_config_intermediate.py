"""FFN intermediate size 1365 (= int(8/3 * 512)) as a config default, not rounded to a multiple."""
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class Config:
    dim: int = 512
    intermediate_size: int = 1365


class SwiGLU(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.intermediate_size, bias=False)  # expect: AMP402
        self.w3 = nn.Linear(cfg.dim, cfg.intermediate_size, bias=False)  # expect: AMP402
        self.w2 = nn.Linear(cfg.intermediate_size, cfg.dim, bias=False)  # expect: AMP402

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


ffn = SwiGLU(Config())
ffn.half()  # trained in half precision: Tensor Cores run its GEMMs
