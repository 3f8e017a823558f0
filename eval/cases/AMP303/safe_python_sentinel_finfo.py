"""finfo(float32).min as a Python sentinel for the best validation score."""
import torch

best_metric = torch.finfo(torch.float32).min
history = [0.71, 0.74, 0.73]
for epoch, metric in enumerate(history):
    if metric > best_metric:
        best_metric = metric
        best_epoch = epoch
