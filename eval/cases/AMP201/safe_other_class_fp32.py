"""Only the teacher is cast to half; the softmax lives in the fp32 student's class."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 10))

    def forward(self, x):
        return self.body(x)


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return F.log_softmax(self.body(x), dim=-1)


teacher = Teacher().cuda().half().eval()
student = Student().cuda()
