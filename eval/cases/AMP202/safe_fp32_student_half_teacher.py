"""Only the frozen teacher is half; the loss is on the fp32 student's logits and the teacher's .float() output."""
import torch
import torch.nn as nn
import torch.nn.functional as F

teacher = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 1000)).cuda().half().eval()
student = nn.Sequential(nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 1000)).cuda()


def distill_loss(x):
    with torch.no_grad():
        soft_targets = F.softmax(teacher(x.half()).float() / 4.0, dim=-1)
    return F.cross_entropy(student(x), soft_targets)
