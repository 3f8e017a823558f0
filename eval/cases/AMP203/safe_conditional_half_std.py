"""`if cfg.fp16: model.half()`; the advantage normalisation then runs in float16, but mean and std
accumulate in fp32 and stay within the range of their inputs."""
import torch
import torch.nn as nn


class ValueHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.v = nn.Linear(768, 1)

    def forward(self, h, rewards):
        values = self.v(h).squeeze(-1)
        adv = rewards - values
        return (adv - adv.mean()) / adv.std().clamp(min=1e-3)


class Cfg:
    fp16 = True


cfg = Cfg()
head = ValueHead().cuda()
if cfg.fp16:
    head = head.half()
