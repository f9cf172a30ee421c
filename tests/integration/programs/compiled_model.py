"""A model compiled with torch.compile (the eager backend: Dynamo's tracing without a
compiler) trained for 30 steps. Prints, as JSON, Dynamo's graph breaks: stepscope's
hooks must not add any."""
import json

import torch
import torch._dynamo.utils as dynamo_utils

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
compiled = torch.compile(model, backend="eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(30):
    loss = compiled(torch.randn(4, 8)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(json.dumps({"graph_breaks": sum(dynamo_utils.counters["graph_break"].values())}))
