"""CLIP in .half(): logit_scale.exp() on a float16 parameter (value-unaware: exp on a half value)."""
import numpy as np
import torch
import torch.nn as nn


class CLIPHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def forward(self, image_features, text_features):
        logit_scale = self.logit_scale.exp()  # expect: AMP204
        return logit_scale * image_features @ text_features.t()


head = CLIPHead().cuda().half()
