"""Weight Standardization conv: mean/std of the float16 weight in a .half() network (std, like mean,
accumulates in fp32 and stays within the range of its inputs: no overflow)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class StdConv2d(nn.Conv2d):
    def forward(self, x):
        w = self.weight
        mean = w.mean(dim=(1, 2, 3), keepdim=True)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
        std = w.std(dim=(1, 2, 3), keepdim=True)  # std: fp32 accumulation, bounded by its inputs (not AMP203)
        w = (w - mean) / (std + 1e-5)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


net = nn.Sequential(StdConv2d(3, 64, 7, stride=2, padding=3), nn.GroupNorm(32, 64), nn.ReLU()).half()
