"""F.nll_loss over F.log_softmax in a .half() model: two findings on one line."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


model = Net().half()


def test_loss(data, target):
    with torch.no_grad():
        output = model(data.half())
        return F.nll_loss(F.log_softmax(output, dim=1), target, reduction="sum").item()  # expect: AMP202, AMP201
