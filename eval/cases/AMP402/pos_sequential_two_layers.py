"""Two misaligned layers in one Sequential (hidden 1500), each reported at its constructor."""
import torch.nn as nn

net = nn.Sequential(
    nn.Linear(512, 1500),  # expect: AMP402
    nn.ReLU(),
    nn.Linear(1500, 512),  # expect: AMP402
    nn.ReLU(),
    nn.Linear(512, 10),
)
net.half()  # trained in half precision: Tensor Cores run its GEMMs
