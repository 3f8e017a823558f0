"""forward decorated with @torch.autocast("cuda"): softmax/log_softmax stay fp32 under CUDA autocast."""
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(768, 30528)

    @torch.autocast("cuda")
    def forward(self, h):
        return torch.log_softmax(self.fc(h), dim=-1)


head = Head().cuda()
