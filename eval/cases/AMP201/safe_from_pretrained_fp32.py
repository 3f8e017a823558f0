"""from_pretrained without torch_dtype (float32 weights): the softmax is float32."""
import torch
import torch.nn.functional as F
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased-finetuned-sst-2-english")
model.eval()
with torch.no_grad():
    logits = model(input_ids=torch.tensor([[101, 2023, 2003, 2307, 102]])).logits
    probs = F.softmax(logits, dim=-1)
