"""Character-level LM (Shakespeare, 65 symbols): small, but still a vocabulary GEMM dim not a multiple of 8."""
import torch.nn as nn

vocab_size = 65


class CharRNN(nn.Module):
    def __init__(self, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)  # expect: AMP401

    def forward(self, x):
        h, _ = self.rnn(self.embed(x))
        return self.head(h)
model = CharRNN().half()  # trained in half precision: Tensor Cores run its GEMMs
