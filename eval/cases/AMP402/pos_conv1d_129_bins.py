"""Spectrogram with n_fft=256 has 129 frequency bins: Conv1d in_channels 129."""
import torch.nn as nn


class SpecEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(129, 256, kernel_size=3, padding=1)  # expect: AMP402
        self.conv2 = nn.Conv1d(256, 256, kernel_size=3, padding=1)

    def forward(self, spec):
        return self.conv2(self.conv1(spec).relu())
model = SpecEncoder().half()  # trained in half precision: Tensor Cores run its GEMMs
