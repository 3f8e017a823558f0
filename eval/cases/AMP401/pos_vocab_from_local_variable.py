"""Vocabulary size assigned to a local name right before the LM head is built."""
import torch.nn as nn


def build_lm(d_model=512):
    vocab_size = 8003  # 8000 BPE merges + 3 special tokens
    return nn.ModuleDict(
        {
            "embed": nn.Embedding(vocab_size, d_model),
            "lm_head": nn.Linear(d_model, vocab_size, bias=False),  # expect: AMP401
        }
    )
lm = build_lm().half()  # trained in half precision: Tensor Cores run its GEMMs
