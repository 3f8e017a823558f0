"""Megatron-style padding computed from the raw size: the result (50304) is a multiple of 128."""
import math

import torch.nn as nn

ORIG_VOCAB_SIZE = 50257
MAKE_VOCAB_SIZE_DIVISIBLE_BY = 128
PADDED_VOCAB_SIZE = int(math.ceil(ORIG_VOCAB_SIZE / MAKE_VOCAB_SIZE_DIVISIBLE_BY) * MAKE_VOCAB_SIZE_DIVISIBLE_BY)


class OutputLayer(nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.output = nn.Linear(hidden, PADDED_VOCAB_SIZE, bias=False)
