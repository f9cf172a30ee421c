#include "collectors/hooks/step_assembly.hpp"

#include <algorithm>
#include <limits>

namespace stepscope {

namespace {

// The larger of two peaks, -1 (unknown) losing to any value.
HookPeaks merged(const HookPeaks& a, const HookPeaks& b) {
  return {std::max(a.end_ns, b.end_ns), std::max(a.host_bytes, b.host_bytes),
          std::max(a.device_bytes, b.device_bytes)};
}

// A step's count so far plus a batch's (-1: unknown, in either), held at the
// largest int64 rather than overflowing: the counts come from the program.
int64_t add_count(int64_t total, int64_t count) {
  if (count < 0) return total;
  int64_t base = std::max<int64_t>(total, 0);
  return count > std::numeric_limits<int64_t>::max() - base ? std::numeric_limits<int64_t>::max() : base + count;
}

bool has_peaks(const HookPeaks& peaks) { return peaks.host_bytes >= 0 || peaks.device_bytes >= 0; }

// A start no more than kMaxHookSpanNs before `end`.
int64_t bounded_start(int64_t start, int64_t end) { return std::max(std::min(start, end), end - kMaxHookSpanNs); }

void add_span(AssembledSteps& out, SpanKind kind, const char* name, const HookPlace& place) {
  out.spans.push_back({kind, place.tid, bounded_start(place.start_ns, place.end_ns), place.end_ns, name});
}

}  // namespace

void StepAssembler::take(const HookPlace& place, AssembledSteps& out) {
  switch (place.type) {
    case 'D':
      return fetched(place, out);
    case 'F':
      return forward(place, out);
    case 'B':
      trained(out);
      return add_span(out, SpanKind::kBackward, "backward", place);
    case 'O':
      add_span(out, SpanKind::kOptimizer, "optimizer", place);
      return optimizer_stepped(place.a, place.tid, place.end_ns, out);
    case 'K':
      return optimizer_stepped(place.a, place.tid, place.end_ns, out);
    case 'A':
      return note_start(place.start_ns);
    case 'S':
      explicit_steps_ = true;
      trained(out);
      return end(place.tid, place.end_ns, place.a, place.b, out);
    case 'M':
      return peaks_read(place, out);
    default:
      return;  // the decoder passes no other type
  }
}

void StepAssembler::finish(AssembledSteps& out) {
  close_round(out);
  if (!held_forwards_.empty()) {
    send_evaluation(out);
  } else {
    trained(out);
  }
  if (held_peaks_ && last_step_ && !has_peaks(*last_step_)) {
    out.peaks.push_back({last_step_->end_ns, held_peaks_->host_bytes, held_peaks_->device_bytes});
  }
  held_peaks_.reset();
}

void StepAssembler::note_start(int64_t ts) {
  if (!start_) start_ = ts;
}

void StepAssembler::fetched(const HookPlace& batch, AssembledSteps& out) {
  note_start(batch.start_ns);
  if (!held_forwards_.empty() && !explicit_steps_) send_evaluation(out);
  if (!round_.empty()) close_round(out);
  held_batches_.push_back(batch);
  if (explicit_steps_ || held_batches_.size() > kMaxHeldBatches) trained(out);
}

void StepAssembler::forward(const HookPlace& call, AssembledSteps& out) {
  note_start(call.start_ns);
  held_forwards_.push_back(call);
  if (explicit_steps_) {
    trained(out);
  } else if (held_forwards_.size() > kMaxHeldForwards) {
    send_evaluation(out);
  }
}

// A backward or an optimizer step: what the segment held was the step's.
void StepAssembler::trained(AssembledSteps& out) {
  for (const HookPlace& batch : held_batches_) {
    samples_ = add_count(samples_, batch.a);
    tokens_ = add_count(tokens_, batch.b);
    add_span(out, SpanKind::kDataWait, "data_wait", batch);
    out.batches.emplace_back(batch.a, batch.b);
  }
  for (const HookPlace& call : held_forwards_) add_span(out, SpanKind::kForward, "forward", call);
  held_batches_.clear();
  held_forwards_.clear();
}

// The segment trained nothing: one span from its first start to its last end.
void StepAssembler::send_evaluation(AssembledSteps& out) {
  HookPlace bounds = !held_batches_.empty() ? held_batches_.front() : held_forwards_.front();
  for (const auto* held : {&held_batches_, &held_forwards_}) {
    for (const HookPlace& place : *held) {
      bounds.start_ns = std::min(bounds.start_ns, place.start_ns);
      bounds.end_ns = std::max(bounds.end_ns, place.end_ns);
    }
  }
  add_span(out, SpanKind::kOther, "evaluation", bounds);
  held_batches_.clear();
  held_forwards_.clear();
}

// An optimizer step ended at `ts`: it ends the step once the round is complete.
void StepAssembler::optimizer_stepped(int64_t optimizer, int64_t tid, int64_t ts, AssembledSteps& out) {
  trained(out);
  if (explicit_steps_) return;
  bool again = std::find(round_.begin(), round_.end(), optimizer) != round_.end();
  if (again || round_.size() >= kMaxRoundOptimizers) close_round(out);  // the round before was complete
  round_.push_back(optimizer);
  round_end_ = {tid, ts};
  if (round_size_ && round_.size() == round_size_) {
    end(tid, ts, -1, -1, out);
    round_end_.reset();
  }
}

void StepAssembler::close_round(AssembledSteps& out) {
  if (round_end_ && !explicit_steps_) {
    end(round_end_->first, round_end_->second, -1, -1, out);
    round_end_.reset();
  }
  if (!round_.empty()) {
    round_size_ = round_.size();
    round_.clear();
  }
}

// A step ends at `ts`; samples and tokens of -1 are the batches'.
void StepAssembler::end(int64_t tid, int64_t ts, int64_t samples, int64_t tokens, AssembledSteps& out) {
  out.steps.push_back({tid, bounded_start(start_.value_or(ts), ts), ts, samples >= 0 ? samples : samples_,
                       tokens >= 0 ? tokens : tokens_});
  start_ = ts;
  samples_ = tokens_ = -1;
  last_step_ = HookPeaks{ts, -1, -1};
  if (held_peaks_) {
    last_step_ = HookPeaks{ts, held_peaks_->host_bytes, held_peaks_->device_bytes};
    out.peaks.push_back(*last_step_);
    held_peaks_.reset();
  }
}

void StepAssembler::peaks_read(const HookPlace& read, AssembledSteps& out) {
  HookPeaks peaks{read.end_ns, read.a, read.b};
  if (held_peaks_) peaks = merged(*held_peaks_, peaks);
  held_peaks_.reset();
  if (last_step_ && last_step_->end_ns == read.end_ns && !has_peaks(*last_step_)) {
    last_step_ = HookPeaks{read.end_ns, peaks.host_bytes, peaks.device_bytes};
    out.peaks.push_back(*last_step_);
  } else {
    held_peaks_ = peaks;  // the step it was read in has not ended
  }
}

}  // namespace stepscope
