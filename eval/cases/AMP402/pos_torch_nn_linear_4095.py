"""torch.nn.Linear spelled out, out_features=4095."""
import torch

proj = torch.nn.Linear(in_features=4096, out_features=4095)  # expect: AMP402
proj.half()  # trained in half precision: Tensor Cores run its GEMMs
