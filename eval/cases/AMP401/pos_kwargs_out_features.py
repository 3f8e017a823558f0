"""Keyword arguments: out_features=50257 on a head called lm_head."""
import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = torch.nn.Linear(in_features=1024, out_features=50257, bias=False)  # expect: AMP401
model = Head().half()  # trained in half precision: Tensor Cores run its GEMMs
