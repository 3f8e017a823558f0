"""Vocabulary size known only at runtime (len(tokenizer)): not statically known."""
import torch.nn as nn
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("gpt2")
tokenizer.add_special_tokens({"pad_token": "<pad>"})


class Head(nn.Module):
    def __init__(self, d_model=768):
        super().__init__()
        self.lm_head = nn.Linear(d_model, len(tokenizer), bias=False)
