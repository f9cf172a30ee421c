"""The Hugging Face Trainer (with accelerate) on a tiny GPT-2 built from its config (no
download): 12 optimizer steps of 2 accumulated micro-batches of 4 sequences of 16
tokens, with an evaluation of 4 batches every 5 steps. Prints, as JSON, what the
Trainer itself counted."""
import json
import sys
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

SEQ = 16


class Tokens(torch.utils.data.Dataset):
    def __init__(self, count, seed):
        self.ids = torch.randint(0, 64, (count, SEQ), generator=torch.Generator().manual_seed(seed))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2))
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=12, per_device_train_batch_size=4,
                                 gradient_accumulation_steps=2, per_device_eval_batch_size=8,
                                 eval_strategy="steps", eval_steps=5, save_strategy="no",
                                 logging_strategy="no", report_to=[], use_cpu=True,
                                 disable_tqdm=True, dataloader_num_workers=0, seed=0)
        trainer = Trainer(model=model, args=args, train_dataset=Tokens(96, 1), eval_dataset=Tokens(32, 2))
        trainer.train()
    print(json.dumps({"steps": trainer.state.global_step, "evaluations": 12 // 5,
                      "samples_per_step": 4 * 2, "tokens_per_step": 4 * 2 * SEQ}))


if __name__ == "__main__":
    sys.exit(main())
