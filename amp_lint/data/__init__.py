"""Facts as data, each table naming its primary source (PyTorch docs and sources, NVIDIA docs, or a
measurement with torch 2.13.0 on the CPU that anyone can repeat in a few lines)."""
