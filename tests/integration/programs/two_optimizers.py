"""A GAN-style loop: per batch, the discriminator's optimizer steps, then the
generator's. Twelve batches of 16 are twelve training steps, not twenty-four."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
generator = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
discriminator = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
bce = torch.nn.BCEWithLogitsLoss()
real_data = TensorDataset(torch.randn(12 * 16, 16))
for (real,) in DataLoader(real_data, batch_size=16):
    fake = generator(torch.randn(16, 8))
    opt_d.zero_grad()
    loss_d = bce(discriminator(real), torch.ones(16, 1)) + bce(discriminator(fake.detach()), torch.zeros(16, 1))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(discriminator(fake), torch.ones(16, 1))
    loss_g.backward()
    opt_g.step()
print("done")
