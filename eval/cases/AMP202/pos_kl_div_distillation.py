"""Distillation: student and teacher both cast to half; KL divergence on float16 distributions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

teacher = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 1000)).cuda().half().eval()
student = nn.Sequential(nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 1000)).cuda().half()

x = torch.randn(64, 512, device="cuda", dtype=torch.float16)
T = 4.0
with torch.no_grad():
    s_logp = F.log_softmax(student(x) / T, dim=-1)  # expect: AMP201
    t_prob = F.softmax(teacher(x) / T, dim=-1)  # expect: AMP201
    kd = F.kl_div(s_logp, t_prob, reduction="batchmean") * T * T  # expect: AMP202
