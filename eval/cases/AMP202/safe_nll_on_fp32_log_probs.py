"""fairseq-style: log_softmax with dtype=torch.float32, so nll_loss sees float32 inputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

lm = nn.Sequential(nn.Embedding(32000, 512), nn.Linear(512, 32000, bias=False)).cuda().half().eval()

tokens = torch.randint(0, 32000, (8, 129), device="cuda")
with torch.no_grad():
    lprobs = F.log_softmax(lm(tokens[:, :-1]), dim=-1, dtype=torch.float32)
    loss = F.nll_loss(lprobs.view(-1, lprobs.size(-1)), tokens[:, 1:].reshape(-1), reduction="sum")
