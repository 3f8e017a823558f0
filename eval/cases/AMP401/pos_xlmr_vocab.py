"""XLM-R sized vocabulary (250002) in an MLM decoder built from a module constant."""
import torch.nn as nn

N_VOCAB = 250002


class XLMRLMHead(nn.Module):
    def __init__(self, hidden=1024):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.layer_norm = nn.LayerNorm(hidden)
        self.decoder = nn.Linear(hidden, N_VOCAB)  # expect: AMP401
model = XLMRLMHead().half()  # trained in half precision: Tensor Cores run its GEMMs
