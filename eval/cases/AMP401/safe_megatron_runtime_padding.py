"""Vocabulary padded by a helper at runtime from an argument: not statically known."""
import torch.nn as nn


def _vocab_size_with_padding(orig_vocab_size, divisible_by=128, tp_size=1):
    multiple = divisible_by * tp_size
    after = orig_vocab_size
    while after % multiple != 0:
        after += 1
    return after


class LanguageModel(nn.Module):
    def __init__(self, orig_vocab_size, hidden=2048):
        super().__init__()
        padded = _vocab_size_with_padding(orig_vocab_size)
        self.embedding = nn.Embedding(padded, hidden)
        self.output_layer = nn.Linear(hidden, padded, bias=False)
