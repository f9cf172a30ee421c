#include "renderers/export/collapsed.hpp"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "renderers/escape.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

// `;` separates frames and `\` starts escapes, so both are escaped too.
constexpr std::string_view kCollapsedSpecials = ";\\";

std::string collapsed_label(std::string_view label) {
  std::string out;
  append_printable_utf8(out, label, kCollapsedSpecials);
  return out;
}

std::vector<std::string> collapsed_frame_labels(const Run& run, const Profile& profile) {
  std::vector<std::string> labels = frame_labels(run.strings, profile.frames());
  for (std::string& label : labels) label = collapsed_label(label);
  return labels;
}

uint64_t stack_count(ProfileSource source, const StackWeight& stack) {
  if (source == ProfileSource::kSamples) return stack.count;
  return static_cast<uint64_t>((stack.weight_ns + 500) / 1000);
}

// The thread's lines without counts, mapped to their counts; the map keeps
// them sorted and merges lines whose labels coincide.
std::map<std::string, uint64_t> thread_lines(const Run& run, const Profile& profile,
                                             const ThreadProfile& thread,
                                             const std::vector<std::string>& labels) {
  std::string prefix = collapsed_label(process_label(run, thread.pid));
  prefix += ';';
  prefix += collapsed_label(thread_label(run, thread.pid, thread.tid));
  std::map<std::string, uint64_t> lines;
  for (const StackWeight& stack : thread.stacks) {
    uint64_t count = stack_count(profile.source, stack);
    if (count == 0) continue;
    std::string line = prefix;
    for (FrameId frame : profile.stacks().frames(stack.stack)) {
      line += ';';
      line += labels.at(frame);
    }
    lines[std::move(line)] += count;
  }
  return lines;
}

}  // namespace

void write_collapsed(const Run& run, const Profile& profile, std::ostream& out) {
  std::vector<std::string> labels = collapsed_frame_labels(run, profile);
  std::string text;
  for (const ThreadProfile& thread : profile.threads) {
    for (const auto& [line, count] : thread_lines(run, profile, thread, labels)) {
      fmt::format_to(std::back_inserter(text), "{} {}\n", line, count);
    }
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    text.clear();
  }
}

}  // namespace stepscope
