"""A plain torch script of one process, with no launcher and no Lightning: its device count is its own."""
import torch
from torch import nn

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(30):
    loss = nn.functional.mse_loss(model(torch.randn(64, 10)), torch.randn(64, 1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
