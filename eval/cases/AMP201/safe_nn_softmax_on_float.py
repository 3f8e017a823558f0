"""nn.Softmax submodule in a .half() model, applied to a float32 upcast of the scores."""
import torch
import torch.nn as nn


class Pointer(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.w = nn.Linear(hidden, hidden, bias=False)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, query, memory):
        scores = torch.bmm(memory, self.w(query).unsqueeze(-1)).squeeze(-1)
        return self.softmax(scores.float())


ptr = Pointer().half()
