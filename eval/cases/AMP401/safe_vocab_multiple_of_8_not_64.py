"""50264 is a multiple of 8 (not of 64): the rule only fires below multiples of 8."""
import torch.nn as nn

VOCAB_SIZE = 50264


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(1024, VOCAB_SIZE, bias=False)
