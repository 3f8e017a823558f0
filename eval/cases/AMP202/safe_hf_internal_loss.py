"""HF float16 model evaluated with labels=: the loss is computed inside the library, not in this file."""
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16).cuda().eval()
input_ids = torch.randint(0, 50257, (4, 256), device="cuda")
with torch.no_grad():
    out = model(input_ids=input_ids, labels=input_ids)
print(out.loss.item())
