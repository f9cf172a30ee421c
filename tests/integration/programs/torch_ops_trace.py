"""Profiles a small model on the CPU with torch.profiler (or, on PyTorch 1.x,
the legacy autograd profiler), exports the Chrome trace and writes what
torch's own key_averages() says, as JSON, for the ops analysis to match.
With --cuda the model runs on the GPU under CPU and CUDA activities, and the
rows carry torch's device times too (made once on a GPU machine:
scripts/gpu_check/capture_testdata.sh); so does a list of CUPTI's overhead
events as torch nested them (the exported trace puts them on no thread).

usage: torch_ops_trace.py TRACE.json KEY_AVERAGES.json [--shapes] [--stack] [--cuda]
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


def key_average_rows(events, by_shapes, device):
    rows = []
    for e in events.key_averages(by_shapes):
        row = {
            "name": e.key,
            "calls": e.count,
            "self_cpu_us": e.self_cpu_time_total,
            "cpu_total_us": e.cpu_time_total,
        }
        if device:
            row["device_type"] = str(e.device_type).rsplit(".", 1)[-1]
            row["self_device_us"] = e.self_device_time_total
            row["device_total_us"] = e.device_time_total
        if by_shapes:
            row["input_shapes"] = str(e.input_shapes)
        rows.append(row)
    return rows


def overhead_events(events, trace):
    """CUPTI's own overhead (lazy module loading, buffer requests): torch nests
    each under the call it happened in and counts it in key_averages(); the
    exported trace has them on pid -1, so the check needs where torch put them."""
    with open(trace) as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"] if e.get("cat") == "overhead"}
    found = []
    for e in events:
        if e.name not in names:
            continue
        ancestors, parent = [], e.cpu_parent
        while parent is not None:
            ancestors.append(parent.name)
            parent = parent.cpu_parent
        found.append({"name": e.name, "cpu_us": e.cpu_time_total, "self_device_us": e.self_device_time_total,
                      "device_total_us": e.device_time_total, "ancestors": ancestors})
    return found


def main():
    trace, out = sys.argv[1], sys.argv[2]
    shapes, stack, cuda = "--shapes" in sys.argv, "--stack" in sys.argv, "--cuda" in sys.argv
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [torch.randn(16, 32, device=device), torch.randn(4, 32, device=device)]
    if hasattr(torch, "profiler") and hasattr(torch.profiler, "profile"):
        activities = [torch.profiler.ProfilerActivity.CPU]
        if cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
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
    result = {"torch": torch.__version__, "ops": key_average_rows(events, False, cuda)}
    if cuda:
        result["overhead"] = overhead_events(events, trace)
    if shapes:
        result["ops_by_shapes"] = key_average_rows(events, True, cuda)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


main()
