"""Dims known only at runtime (constructor arguments with no default): not statically known."""
import torch.nn as nn


class Adapter(nn.Module):
    def __init__(self, d_model, bottleneck):
        super().__init__()
        self.down = nn.Linear(d_model, bottleneck)
        self.up = nn.Linear(bottleneck, d_model)


def build(feature_dim):
    return nn.Linear(feature_dim, feature_dim)
