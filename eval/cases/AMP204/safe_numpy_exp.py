"""numpy softmax in a data pipeline (float64), not torch."""
import numpy as np


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


weights = softmax_np(np.random.randn(10, 5) * 20)
squared = np.square(np.arange(300.0)) ** 2
