"""Fine-tuning a Hugging Face model loaded in float16 with a plain AdamW (default eps 1e-8)."""
import torch
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("roberta-base", torch_dtype=torch.float16)  # expect: AMP101
model.cuda().train()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)  # expect: AMP302
