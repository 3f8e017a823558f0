"""No Linear head: the embedding matrix itself is the output projection (F.linear with emb.weight)."""
import torch.nn as nn
import torch.nn.functional as F


class TiedLM(nn.Module):
    def __init__(self, d_model=768):
        super().__init__()
        self.tok_emb = nn.Embedding(30522, d_model)  # expect: AMP401
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, 12, batch_first=True), 6)

    def forward(self, ids):
        h = self.encoder(self.tok_emb(ids))
        return F.linear(h, self.tok_emb.weight)
model = TiedLM().half()  # trained in half precision: Tensor Cores run its GEMMs
