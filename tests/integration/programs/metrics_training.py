"""A small language-model-shaped training loop for the live metrics' test: STEPS steps
of a batch of 8 sequences of 16 tokens (about 10 ms each), then LINGER seconds of
quiet so that a scraper sees the last step. Prints, as JSON, what it ran.

  metrics_training.py [--steps N] [--linger S]
"""
import argparse
import json
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--linger", type=float, default=4.0)
    args = p.parse_args()
    torch.manual_seed(0)
    batch, seq = 8, 16
    tokens = torch.randint(0, 100, (args.steps * batch, seq))
    loader = torch.utils.data.DataLoader(tokens, batch_size=batch)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Linear(16, 100))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for ids in loader:
        logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 100), ids.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(0.01)
    time.sleep(args.linger)
    print(json.dumps({"steps": args.steps, "samples": args.steps * batch, "tokens": args.steps * batch * seq}))


if __name__ == "__main__":
    main()
