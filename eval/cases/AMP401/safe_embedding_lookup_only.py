"""Encoder classifier: a 30522-row embedding used only for lookup (a gather, not a GEMM), no LM head."""
import torch.nn as nn


class TextClassifier(nn.Module):
    def __init__(self, num_labels=3):
        super().__init__()
        self.embeddings = nn.Embedding(30522, 768, padding_idx=0)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 12, batch_first=True), 6)
        self.classifier = nn.Linear(768, num_labels)

    def forward(self, ids):
        return self.classifier(self.encoder(self.embeddings(ids))[:, 0])
