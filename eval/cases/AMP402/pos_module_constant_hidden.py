"""Hidden size from a module constant (1500)."""
import torch.nn as nn

HIDDEN = 1500
N_CLASSES = 10


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, HIDDEN)  # expect: AMP402
        self.fc2 = nn.Linear(HIDDEN, N_CLASSES)  # expect: AMP402

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())
model = MLP().half()  # trained in half precision: Tensor Cores run its GEMMs
