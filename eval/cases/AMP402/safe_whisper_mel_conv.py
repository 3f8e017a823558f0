"""Whisper audio stem: 80 mel bins into Conv1d (80 < 128 and a multiple of 8 anyway)."""
import torch.nn as nn


class AudioEncoderStem(nn.Module):
    def __init__(self, n_mels=80, n_state=384):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
