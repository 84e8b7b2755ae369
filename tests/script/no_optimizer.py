"""A script that uses torch but never steps an optimizer: inference only."""
import torch
from torch import nn

model = nn.Linear(10, 1)
with torch.no_grad():
    for _ in range(20):
        model(torch.randn(64, 10))
print("inference done")
