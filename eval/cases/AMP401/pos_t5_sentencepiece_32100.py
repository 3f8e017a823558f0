"""A seq2seq LM head sized to a SentencePiece vocabulary of 32100 (32100 % 8 == 4)."""
import torch.nn as nn


class Seq2SeqHead(nn.Module):
    def __init__(self, d_model=512):
        super().__init__()
        self.shared = nn.Embedding(32100, d_model)
        self.lm_head = nn.Linear(d_model, 32100, bias=False)  # expect: AMP401
        self.lm_head.weight = self.shared.weight
model = Seq2SeqHead().half()  # trained in half precision: Tensor Cores run its GEMMs
