"""GloVe 300-d inputs into an MLP: in_features 300."""
import torch.nn as nn

mlp = nn.Sequential(
    nn.Linear(300, 1024),  # expect: AMP402
    nn.ReLU(),
    nn.Linear(1024, 1024),
)
mlp.half()  # trained in half precision: Tensor Cores run its GEMMs
