#!/usr/bin/env python3
"""Train a small byte-pair-encoded transformer language model on the CPU.

This is stepscope's reference workload: a real, if tiny, training loop whose input
pipeline does honest per-item work (byte-pair encoding in Python), so that the knobs
people tune in real jobs -- --num-workers, --pin-memory, --batch-size -- visibly move
its throughput. It finishes in well under a minute on two cores at the defaults.

Corpus: the licence texts in /usr/share/common-licenses, which Debian's essential
base-files package installs on every system. Where that directory is missing (not a
Debian system), a synthetic text generated from the seed is used instead. --corpus
points at any other text file or directory.

Runs on PyTorch 1.13 and 2.x. The last line printed is `summary: {json}`.
"""

import argparse
import json
import os
import random
import re
import sys
import time
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler

DEFAULT_CORPUS = "/usr/share/common-licenses"

# Pre-tokenization as in GPT-2: words keep their leading space, so spaces cost no
# tokens of their own and merges learn word starts.
PRETOKEN_RE = re.compile(r" ?\w+| ?[^\w\s]+|\s+")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--pin-memory", action="store_true", help="DataLoader pin_memory")
    p.add_argument("--prefetch-factor", type=int, default=None,
                   help="batches each worker loads ahead (only with --num-workers > 0)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=64, help="tokens per training sequence")
    p.add_argument("--steps", type=int, default=60, help="optimizer steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0,
                   help="intra-op CPU threads (default: torch's choice, one per core)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (falls back to cpu if no GPU)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--merges", type=int, default=256, help="byte-pair merges to learn")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--log-every", type=int, default=10, help="print the loss every N steps")
    p.add_argument("--corpus", default=DEFAULT_CORPUS, help="text file or directory of text files")
    p.add_argument("--torch-trace", metavar="PATH",
                   help="profile the loop with torch.profiler and write a Chrome trace here")
    args = p.parse_args(argv)
    if args.prefetch_factor is not None and args.num_workers == 0:
        p.error("--prefetch-factor needs --num-workers > 0")
    if args.threads < 0 or args.num_workers < 0:
        p.error("--threads and --num-workers must not be negative")
    if args.d_model < 4 or args.d_model % 4:
        p.error("--d-model must be a positive multiple of 4 (the number of heads)")
    for name in ("batch_size", "seq_len", "steps", "log_every", "layers"):
        if getattr(args, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    return args


# ----------------------------------------------------------------------------- corpus

def load_corpus(path, seed):
    if os.path.isdir(path):
        return read_text_dir(path)
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    if path != DEFAULT_CORPUS:
        sys.exit("train_lm: corpus %s not found" % path)
    print("train_lm: %s not found, using a synthetic corpus" % path, file=sys.stderr)
    return synthetic_corpus(seed)


def read_text_dir(path):
    # Several names there are symlinks to one text (GPL -> GPL-3); read each text once,
    # in a fixed order, so the corpus is the same on every run.
    seen, parts = set(), []
    for name in sorted(os.listdir(path)):
        real = os.path.realpath(os.path.join(path, name))
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        with open(real, encoding="utf-8", errors="replace") as f:
            parts.append(f.read())
    return "\n".join(parts)


def synthetic_corpus(seed, n_words=40000):
    """Text from a random bigram chain over made-up words: structured enough to learn."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ra", "tu", "se", "no", "vi", "da", "pe", "shu", "gor"]
    vocab = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(400)]
    successors = {w: rng.sample(vocab, 5) for w in vocab}
    word, out = vocab[0], []
    for i in range(n_words):
        out.append(word)
        out.append(".\n" if i % 12 == 11 else " ")
        word = rng.choice(successors[word])
    return "".join(out)


# -------------------------------------------------------------------------- tokenizer

class BytePairTokenizer:
    """Byte-level BPE: ids 0-255 are bytes, id 256+r is the r-th learned merge."""

    def __init__(self, merges):
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.vocab_size = 256 + len(merges)

    @classmethod
    def train(cls, text, n_merges, max_words=3000):
        counts = {}
        for piece in PRETOKEN_RE.findall(text):
            counts[piece] = counts.get(piece, 0) + 1
        # The most frequent words decide the merges; the long tail only slows training.
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_words]
        words = [(list(w.encode("utf-8")), c) for w, c in top]
        merges = []
        for rank in range(n_merges):
            pair = most_frequent_pair(words)
            if pair is None:
                break
            merges.append(pair)
            new_id = 256 + rank
            words = [(merge_pair(sym, pair, new_id), c) for sym, c in words]
        return cls(merges)

    def encode(self, text):
        ids = []
        for piece in PRETOKEN_RE.findall(text):
            ids.extend(self.encode_piece(piece))
        return ids

    def encode_piece(self, piece):
        # Apply merges in the order they were learned, as GPT-2's encoder does. No cache
        # on purpose: this per-item cost is what makes the input pipeline matter.
        ranks = self.ranks
        sym = list(piece.encode("utf-8"))
        while len(sym) > 1:
            candidates = [(ranks[p], p) for p in zip(sym, sym[1:]) if p in ranks]
            if not candidates:
                break
            rank, pair = min(candidates)
            sym = merge_pair(sym, pair, 256 + rank)
        return sym


def most_frequent_pair(words):
    pair_counts = {}
    for sym, count in words:
        for pair in zip(sym, sym[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + count
    if not pair_counts:
        return None
    # Ties broken by the pair itself, so the merges never depend on dict order.
    return max(pair_counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def merge_pair(sym, pair, new_id):
    first, second = pair
    out, i, n = [], 0, len(sym)
    while i < n:
        if sym[i] == first and i + 1 < n and sym[i + 1] == second:
            out.append(new_id)
            i += 2
        else:
            out.append(sym[i])
            i += 1
    return out


# ---------------------------------------------------------------------------- dataset

class TextWindows(Dataset):
    """Item i: a window of the corpus at an offset derived from (seed, i), tokenized."""

    def __init__(self, text, tokenizer, seq_len, length, seed):
        self.text = text
        self.tokenizer = tokenizer
        self.seq_len = seq_len
        self.length = length
        self.seed = seed

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        # The offset comes from the index alone, not from a worker's RNG, so a batch
        # holds the same text whatever --num-workers is.
        rng = random.Random(self.seed * 1000003 + index)
        start = rng.randrange(max(1, len(self.text) - 1))
        ids = self.tokens_from(start, self.seq_len + 1)
        chunk = torch.tensor(ids, dtype=torch.long)
        return chunk[:-1], chunk[1:]

    def tokens_from(self, start, n):
        ids, span = [], 6 * n  # ~3 bytes a token: 6 bytes a token rarely needs a 2nd read
        while len(ids) < n:
            piece = self.text[start:start + span]
            if not piece:  # ran off the end: wrap around
                start, piece = 0, self.text[:span]
            ids.extend(self.tokenizer.encode(piece))
            start += span
        return ids[:n]


# ------------------------------------------------------------------------------ model

class TinyTransformerLM(nn.Module):
    def __init__(self, vocab_size, seq_len, d_model, layers, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.0,
            batch_first=True, norm_first=True)
        # Nested tensors only serve padded batches; ours are dense, and with norm_first
        # the fast path would warn that it cannot be used anyway.
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.register_buffer("causal_mask", causal_mask(seq_len), persistent=False)

    def forward(self, x):
        t = x.shape[1]
        positions = torch.arange(t, device=x.device)
        h = self.tok(x) + self.pos(positions)
        h = self.encoder(h, mask=self.causal_mask[:t, :t])
        return self.head(self.norm(h))


def causal_mask(n):
    # Built by hand: nn.Transformer.generate_square_subsequent_mask changed signature
    # between 1.13 and 2.x.
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


# ------------------------------------------------------------------------------ train

def pick_device(name):
    if name.startswith("cuda") and not torch.cuda.is_available():
        print("train_lm: CUDA is not available, running on the CPU", file=sys.stderr)
        return torch.device("cpu")
    return torch.device(name)


def make_loader(dataset, args):
    kwargs = dict(batch_size=args.batch_size, num_workers=args.num_workers,
                  pin_memory=args.pin_memory, drop_last=True,
                  sampler=RandomSampler(dataset, generator=torch.Generator().manual_seed(args.seed)))
    # Passed only when asked for: torch's default differs between 1.13 (2) and 2.x
    # (None), and 2.x rejects any value when there are no workers.
    if args.num_workers > 0 and args.prefetch_factor is not None:
        kwargs["prefetch_factor"] = args.prefetch_factor
    return DataLoader(dataset, **kwargs)


@contextmanager
def torch_trace(path, device):
    """Yield an object with step(); when path is set, profile and export a Chrome trace."""
    if not path:
        yield NullProfiler()
        return
    if kineto_available():
        from torch.profiler import ProfilerAction, ProfilerActivity, profile
        activities = [ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        # Any schedule makes step() mark each step with a ProfilerStep#N range; this
        # one records every step and leaves the export to us.
        with profile(activities=activities, record_shapes=True, with_stack=True,
                     schedule=lambda step: ProfilerAction.RECORD) as prof:
            yield prof
    else:
        # Builds without Kineto (Debian's python3-torch) only have the legacy profiler,
        # which has no step(); mark the steps ourselves so traces look alike.
        with torch.autograd.profiler.profile(record_shapes=True, with_stack=True) as prof:
            steps = LegacyStepMarker()
            yield steps
            steps.close()
    prof.export_chrome_trace(path)
    print("train_lm: wrote torch trace %s" % path, file=sys.stderr)


def kineto_available():
    check = getattr(torch.autograd, "kineto_available", None)
    return bool(check and check())


class NullProfiler:
    def step(self):
        pass


class LegacyStepMarker:
    def __init__(self):
        self.n, self.current = 0, None
        self.step()

    def step(self):
        self.close()
        self.current = torch.autograd.profiler.record_function("ProfilerStep#%d" % self.n)
        self.current.__enter__()
        self.n += 1

    def close(self):
        if self.current is not None:
            self.current.__exit__(None, None, None)
            self.current = None


def train(model, opt, loader, device, args, prof):
    record = torch.autograd.profiler.record_function
    non_blocking = args.pin_memory and device.type == "cuda"
    model.train()
    loss_value = float("nan")
    for step, (x, y) in enumerate(loader, start=1):
        x = x.to(device, non_blocking=non_blocking)
        y = y.to(device, non_blocking=non_blocking)
        # Named ranges give a trace (ours or torch.profiler's) the step's anatomy.
        with record("forward"):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        with record("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with record("optimizer"):
            opt.step()
        prof.step()
        if step % args.log_every == 0 or step == args.steps:
            loss_value = loss.item()
            print("step %d loss %.4f" % (step, loss_value), flush=True)
    return loss_value


def main(argv=None):
    args = parse_args(argv)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads > 0:
        # One intra-op thread per core stalls every op when anything else wants a core
        # (the profiler, a parallel test): such runs need fewer threads than cores.
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)

    if args.torch_trace:
        # Fail now, not after the whole run, when the trace cannot be written.
        os.makedirs(os.path.dirname(os.path.abspath(args.torch_trace)), exist_ok=True)

    text = load_corpus(args.corpus, args.seed)
    t0 = time.perf_counter()
    tokenizer = BytePairTokenizer.train(text, args.merges)
    print("train_lm: corpus %d chars, vocab %d (BPE trained in %.2fs), torch %s, device %s"
          % (len(text), tokenizer.vocab_size, time.perf_counter() - t0, torch.__version__, device),
          flush=True)

    dataset = TextWindows(text, tokenizer, args.seq_len, args.steps * args.batch_size, args.seed)
    loader = make_loader(dataset, args)
    model = TinyTransformerLM(tokenizer.vocab_size, args.seq_len, args.d_model, args.layers).to(device)
    # Built before the clock starts: its first construction imports much of
    # torch lazily, which is start-up cost, not training throughput.
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    start = time.perf_counter()
    with torch_trace(args.torch_trace, device) as prof:
        final_loss = train(model, opt, loader, device, args, prof)
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - start  # the loop only, not the trace export
    samples = args.steps * args.batch_size
    summary = {
        "steps": args.steps,
        "wall_s": round(wall, 3),
        "samples_per_s": round(samples / wall, 2),
        "tokens_per_s": round(samples * args.seq_len / wall, 1),
        "final_loss": round(final_loss, 4),
        "batch_size": args.batch_size,
        "seq_len": args.seq_len,
        "num_workers": args.num_workers,
        "threads": torch.get_num_threads(),
        "device": str(device),
        "torch": torch.__version__,
    }
    print("summary: " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
