"""Gradient accumulation: 4 micro-batches of 8 samples (DataLoader, integer [8, 32]
token batches) per optimizer step, 6 optimizer steps. A step is an optimizer step;
its samples and tokens are summed over its micro-batches."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
ACCUMULATE, STEPS, BATCH, SEQ = 4, 6, 8, 32
tokens = torch.randint(0, 100, (ACCUMULATE * STEPS * BATCH, SEQ))
model = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Flatten(), torch.nn.Linear(16 * SEQ, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (batch,) in enumerate(DataLoader(TensorDataset(tokens), batch_size=BATCH)):
    loss = model(batch).pow(2).mean() / ACCUMULATE
    loss.backward()
    if (i + 1) % ACCUMULATE == 0:
        optimizer.step()
        optimizer.zero_grad()
print("done")
