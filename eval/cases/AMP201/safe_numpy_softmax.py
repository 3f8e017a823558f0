"""scipy / numpy softmax on float64 arrays - not torch at all."""
import numpy as np
from scipy.special import softmax

logits = np.random.randn(32, 10).astype(np.float16).astype(np.float64)
probs = softmax(logits, axis=-1)
manual = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
