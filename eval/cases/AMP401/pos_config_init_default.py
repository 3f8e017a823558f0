"""BERT MLM head: vocab size 30522 from a config class's __init__ default."""
import torch.nn as nn


class BertConfig:
    def __init__(self, vocab_size=30522, hidden_size=768, num_hidden_layers=12):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)  # expect: AMP401

    def forward(self, h):
        return self.decoder(self.transform(h))


head = BertLMPredictionHead(BertConfig())
head.half()  # trained in half precision: Tensor Cores run its GEMMs
