"""Profiles a small model on the CPU with torch.profiler (or, on PyTorch 1.x,
the legacy autograd profiler), exports the Chrome trace and writes what
torch's own key_averages() says, as JSON, for the ops analysis to match.

usage: torch_ops_trace.py TRACE.json KEY_AVERAGES.json [--shapes] [--stack]
"""
import json
import sys

import torch


def model_step(model, optimizer, data):
    optimizer.zero_grad()
    with torch.autograd.profiler.record_function("forward_and_loss"):
        loss = model(data).square().mean()
    loss.backward()
    optimizer.step()


def key_average_rows(events, by_shapes):
    rows = []
    for e in events.key_averages(by_shapes):
        row = {
            "name": e.key,
            "calls": e.count,
            "self_cpu_us": e.self_cpu_time_total,
            "cpu_total_us": e.cpu_time_total,
        }
        if by_shapes:
            row["input_shapes"] = str(e.input_shapes)
        rows.append(row)
    return rows


def main():
    trace, out = sys.argv[1], sys.argv[2]
    shapes, stack = "--shapes" in sys.argv, "--stack" in sys.argv
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [torch.randn(16, 32), torch.randn(4, 32)]
    if hasattr(torch, "profiler") and hasattr(torch.profiler, "profile"):
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=activities, record_shapes=shapes,
                                    with_stack=stack) as prof:
            for i in range(4):
                model_step(model, optimizer, data[i % 2])
                prof.step()
        events = prof.events()
    else:
        with torch.autograd.profiler.profile(record_shapes=shapes, with_stack=stack) as prof:
            for i in range(4):
                model_step(model, optimizer, data[i % 2])
        events = prof.function_events
    prof.export_chrome_trace(trace)
    result = {"torch": torch.__version__, "ops": key_average_rows(events, False)}
    if shapes:
        result["ops_by_shapes"] = key_average_rows(events, True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


main()
