"""Non-GEMM layers with odd sizes: pooling, dropout, upsampling."""
import torch.nn as nn

layers = nn.Sequential(nn.MaxPool2d(3, stride=2), nn.Dropout(0.1), nn.Upsample(size=(129, 129)), nn.AdaptiveAvgPool2d(7))
