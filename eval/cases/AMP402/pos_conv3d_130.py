"""Conv3d with 130 input channels (concatenated features of 128 + 2 coordinates)."""
import torch.nn as nn


class VoxelHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fuse = nn.Conv3d(130, 128, kernel_size=3, padding=1)  # expect: AMP402
model = VoxelHead().half()  # trained in half precision: Tensor Cores run its GEMMs
