"""A frozen .half() teacher (inference only) and an fp32 student trained with Adam(eps=1e-8)."""
import torch
import torch.nn as nn

teacher = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 1000)).cuda().half().eval()
student = nn.Sequential(nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 1000)).cuda()
optimizer = torch.optim.Adam(student.parameters(), lr=1e-3, eps=1e-8)
