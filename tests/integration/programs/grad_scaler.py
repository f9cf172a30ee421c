"""Mixed precision with a GradScaler whose gradients overflow at two of ten steps:
GradScaler.step skips optimizer.step there, as after any overflow, and those
iterations are still training steps. Prints how many optimizer steps ran."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
ran = 0
original_step = optimizer.step


def counted_step(*args, **kwargs):
    global ran
    ran += 1
    return original_step(*args, **kwargs)


optimizer.step = counted_step
for step in range(10):
    x = torch.randn(32, 16)
    loss = model(x).pow(2).mean()
    if step in (3, 7):
        loss = loss * float("inf")  # overflow: the scaler skips this step
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
print("optimizer steps run:", ran)
