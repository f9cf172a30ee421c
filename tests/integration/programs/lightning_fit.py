"""PyTorch Lightning's Trainer.fit (automatic optimization: forward and backward run in
the closure of optimizer.step): 12 optimizer steps of 2 accumulated batches of 4
samples, a validation of 4 batches every 10 batches and the sanity check's 2 before
training. Prints, as JSON, what the Trainer itself counted."""
import json
import logging
import sys

import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def loader(count, seed):
    generator = torch.Generator().manual_seed(seed)
    data = torch.utils.data.TensorDataset(torch.randn(count, 16, generator=generator),
                                          torch.randn(count, 1, generator=generator))
    return torch.utils.data.DataLoader(data, batch_size=4)


def main():
    logging.getLogger("lightning").setLevel(logging.ERROR)
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(max_steps=12, accumulate_grad_batches=2, val_check_interval=10, limit_val_batches=4,
                        num_sanity_val_steps=2, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Model(), loader(96, 1), loader(64, 2))
    print(json.dumps({"steps": trainer.global_step, "samples_per_step": 4 * 2}))


if __name__ == "__main__":
    sys.exit(main())
