"""An nn.CrossEntropyLoss instance called on the output of a .half() model (reported at the call)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().half()
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

images = torch.randn(128, 3, 32, 32, device="cuda").half()
labels = torch.randint(0, 10, (128,), device="cuda")
with torch.no_grad():
    val_loss = criterion(model(images), labels)  # expect: AMP202
