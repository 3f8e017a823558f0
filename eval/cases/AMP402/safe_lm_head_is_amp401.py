"""An unpadded LM head is reported once, as AMP401 (the vocabulary rule), not also as AMP402."""
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(768, 50257, bias=False)  # expect: AMP401
model = Head().half()  # trained in half precision: Tensor Cores run its GEMMs
