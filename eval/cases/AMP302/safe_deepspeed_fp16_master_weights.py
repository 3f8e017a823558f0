"""DeepSpeed fp16 keeps fp32 master weights: its Adam eps=1e-8 meets fp32 values."""
import deepspeed
import torch.nn as nn

model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
ds_config = {
    "train_batch_size": 32,
    "fp16": {"enabled": True, "initial_scale_power": 16},
    "optimizer": {"type": "Adam", "params": {"lr": 1e-4, "eps": 1e-8}},
}
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
