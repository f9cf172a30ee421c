"""A training loop whose optimizer runs forward and backward itself: LBFGS calls the
closure (forward, loss, backward) up to max_iter times inside optimizer.step()."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=4)
x, y = torch.randn(256, 16), torch.randn(256, 1)


def closure():
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for step in range(12):
    optimizer.step(closure)
print("done")
