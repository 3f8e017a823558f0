"""torch.exp on a tensor cast with .half() at module level."""
import torch

energies = (torch.randn(1024) * 8).half()
boltzmann = torch.exp(-energies)  # expect: AMP204
