"""Hugging Face model loaded with torch_dtype=torch.float16; next-token distribution computed in fp16."""
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16).cuda().eval()

inputs = tokenizer("The capital of France is", return_tensors="pt").to("cuda")
with torch.no_grad():
    logits = model(**inputs).logits[:, -1, :]
    next_token_probs = F.softmax(logits, dim=-1)  # expect: AMP201
print(tokenizer.decode(next_token_probs.argmax(-1)))
