"""Param-group list with eps=1e-8 over a .half() model."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(256, 256), nn.ReLU())
        self.head = nn.Linear(256, 10)


model = Model().half()  # expect: AMP101
optimizer = torch.optim.Adam(  # expect: AMP302
    [
        {"params": model.backbone.parameters(), "lr": 1e-4},
        {"params": model.head.parameters(), "lr": 1e-3},
    ],
    eps=1e-8,
)
