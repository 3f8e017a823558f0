"""The wholesale cast is on the outer model; the softmax is in a submodule's class."""
import torch.nn as nn
import torch.nn.functional as F


class Router(nn.Module):
    def __init__(self, d_model, n_experts):
        super().__init__()
        self.gate = nn.Linear(d_model, n_experts, bias=False)

    def forward(self, x):
        return F.softmax(self.gate(x), dim=-1)  # expect: AMP201


class MoELayer(nn.Module):
    def __init__(self, d_model=512, n_experts=8):
        super().__init__()
        self.router = Router(d_model, n_experts)
        self.experts = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(n_experts)])

    def forward(self, x):
        probs = self.router(x)
        top = probs.argmax(dim=-1)
        return sum(expert(x) * (top == i).unsqueeze(-1) for i, expert in enumerate(self.experts))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([MoELayer() for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


model = Model().half()
