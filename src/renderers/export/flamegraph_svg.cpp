#include "renderers/export/flamegraph_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "renderers/escape.hpp"
#include "run/frame_label.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

// ---- the tree of frames ----

enum class NodeKind : uint8_t { kAll, kProcess, kThread, kPython, kNative, kMarker };

using NodeId = uint32_t;
using LabelId = uint32_t;

struct FlameNode {
  LabelId label = 0;
  NodeKind kind = NodeKind::kAll;
  int64_t weight_ns = 0;
  uint64_t count = 0;  // samples, or span occurrences
  std::vector<NodeId> children;
};

// The profile's stacks merged into one tree under "all" → process → thread.
// Siblings are merged by label, as a flame graph shows labels.
class FlameTree {
 public:
  static constexpr NodeId kAllNode = 0;

  FlameTree(const Run& run, const Profile& profile) {
    nodes_.push_back({intern_label("all"), NodeKind::kAll, 0, 0, {}});
    std::vector<LabelId> frame_label_ids;
    for (std::string& label : frame_labels(run.strings, profile.frames())) {
      frame_label_ids.push_back(intern_label(std::move(label)));
    }
    for (const ThreadProfile& thread : profile.threads) {
      NodeId process = child(kAllNode, intern_label(process_label(run, thread.pid)),
                             NodeKind::kProcess);
      NodeId thread_node = child(process, intern_label(thread_label(run, thread.pid, thread.tid)),
                                 NodeKind::kThread);
      for (const StackWeight& stack : thread.stacks) {
        add_weight(kAllNode, stack);
        add_weight(process, stack);
        add_stack(profile, thread_node, stack, frame_label_ids);
      }
    }
    sort_frame_children();
  }

  const FlameNode& node(NodeId id) const { return nodes_[id]; }
  const std::string& label(NodeId id) const { return labels_[nodes_[id].label]; }

 private:
  LabelId intern_label(std::string label) {
    auto [it, inserted] = label_ids_.try_emplace(label, static_cast<LabelId>(labels_.size()));
    if (inserted) labels_.push_back(std::move(label));
    return it->second;
  }

  NodeId child(NodeId parent, LabelId label, NodeKind kind) {
    uint64_t key = static_cast<uint64_t>(parent) << 32 | label;
    auto [it, inserted] = children_.try_emplace(key, static_cast<NodeId>(nodes_.size()));
    if (inserted) {
      nodes_.push_back({label, kind, 0, 0, {}});
      nodes_[parent].children.push_back(it->second);
    }
    return it->second;
  }

  void add_weight(NodeId id, const StackWeight& stack) {
    nodes_[id].weight_ns += stack.weight_ns;
    nodes_[id].count += stack.count;
  }

  void add_stack(const Profile& profile, NodeId thread_node, const StackWeight& stack,
                 const std::vector<LabelId>& frame_label_ids) {
    add_weight(thread_node, stack);
    NodeId at = thread_node;
    for (FrameId frame : profile.stacks().frames(stack.stack)) {
      at = child(at, frame_label_ids.at(frame), kind_of(profile.frames().get(frame).kind));
      add_weight(at, stack);
    }
  }

  static NodeKind kind_of(FrameKind kind) {
    switch (kind) {
      case FrameKind::kPython: return NodeKind::kPython;
      case FrameKind::kNative: return NodeKind::kNative;
      case FrameKind::kMarker: return NodeKind::kMarker;
    }
    return NodeKind::kMarker;
  }

  // Processes and threads stay in pid and tid order; stack frames are
  // alphabetical, as in other flame graphs.
  void sort_frame_children() {
    for (FlameNode& node : nodes_) {
      if (node.kind == NodeKind::kAll || node.kind == NodeKind::kProcess) continue;
      std::sort(node.children.begin(), node.children.end(),
                [&](NodeId a, NodeId b) { return labels_[nodes_[a].label] < labels_[nodes_[b].label]; });
    }
  }

  std::vector<FlameNode> nodes_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, LabelId> label_ids_;
  std::unordered_map<uint64_t, NodeId> children_;  // (parent << 32 | label) -> child
};

// ---- layout ----

constexpr double kMinFrameWidthPx = 0.1;
constexpr uint32_t kNoParent = std::numeric_limits<uint32_t>::max();

struct DrawnFrame {
  NodeId node = 0;
  uint32_t parent = kNoParent;  // index in the drawn frames
  uint32_t depth = 0;
  double x = 0;
  double width = 0;
  uint32_t last_descendant = 0;  // index of the last drawn frame of its subtree
};

// The frames to draw in depth-first order, so every subtree is one
// contiguous range; the script zooms with those ranges. An explicit stack
// instead of recursion: a trace may nest spans arbitrarily deep.
std::vector<DrawnFrame> layout(const FlameTree& tree, double left_px, double full_width_px) {
  std::vector<DrawnFrame> drawn;
  const int64_t total_ns = tree.node(FlameTree::kAllNode).weight_ns;
  if (total_ns <= 0) return drawn;
  const double px_per_ns = full_width_px / static_cast<double>(total_ns);
  std::vector<DrawnFrame> pending = {{FlameTree::kAllNode, kNoParent, 0, left_px, full_width_px, 0}};
  while (!pending.empty()) {
    DrawnFrame frame = pending.back();
    pending.pop_back();
    if (frame.width < kMinFrameWidthPx) continue;
    auto index = static_cast<uint32_t>(drawn.size());
    frame.last_descendant = index;
    drawn.push_back(frame);
    const auto& children = tree.node(frame.node).children;
    double x = frame.x;
    size_t first_pending = pending.size();
    for (NodeId child : children) {
      double width = static_cast<double>(tree.node(child).weight_ns) * px_per_ns;
      pending.push_back({child, index, frame.depth + 1, x, width, 0});
      x += width;
    }
    std::reverse(pending.begin() + static_cast<std::ptrdiff_t>(first_pending), pending.end());
  }
  for (size_t i = drawn.size(); i-- > 1;) {
    DrawnFrame& parent = drawn[drawn[i].parent];
    parent.last_descendant = std::max(parent.last_descendant, drawn[i].last_descendant);
  }
  return drawn;
}

// ---- text ----

template <typename... Args>
void append(std::string& svg, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(svg), format, std::forward<Args>(args)...);
}

std::string format_duration(int64_t ns) {
  auto value = static_cast<double>(ns);
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000000) return fmt::format("{:.2f} us", value / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f} ms", value / 1e6);
  return fmt::format("{:.2f} s", value / 1e9);
}

std::string amount(ProfileSource source, const FlameNode& node) {
  if (source != ProfileSource::kSamples) return format_duration(node.weight_ns);
  return fmt::format("{} sample{}", node.count, node.count == 1 ? "" : "s");
}

size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// The first `count` code points of UTF-8 `text`.
std::string_view first_code_points(std::string_view text, size_t count) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (seen++ == count) return text.substr(0, i);
  }
  return text;
}

// What fits of `label` in a frame `width_px` wide, cut with "..". The
// script's fitLabel() does the same when zooming; keep them in step.
std::string fitted_label(const std::string& printable_label, double width_px, double char_width_px) {
  double fit_chars = std::floor((width_px - 6) / char_width_px);
  if (fit_chars < 3) return {};
  auto fit = static_cast<size_t>(fit_chars);
  if (code_points(printable_label) <= fit) return printable_label;
  return std::string(first_code_points(printable_label, fit - 2)) + "..";
}

// ---- colors ----

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Deterministic from the name, so a function keeps its color across graphs.
std::string frame_color(NodeKind kind, std::string_view label) {
  uint64_t hash = fnv1a(label);
  auto part = [&](int shift) { return static_cast<double>((hash >> shift) & 0xFFFF) / 65535.0; };
  double a = part(0), b = part(16), c = part(32);
  auto rgb = [](double r, double g, double bl) {
    return fmt::format("rgb({},{},{})", static_cast<int>(r), static_cast<int>(g), static_cast<int>(bl));
  };
  switch (kind) {
    case NodeKind::kAll: return "rgb(200,200,200)";
    case NodeKind::kProcess: return rgb(165 + 40 * a, 135 + 40 * b, 215 + 40 * c);
    case NodeKind::kThread: return rgb(105 + 50 * a, 185 + 50 * b, 105 + 50 * c);
    case NodeKind::kPython: return rgb(205 + 50 * a, 230 * b, 55 * c);
    case NodeKind::kNative: return rgb(175 + 55 * a, 175 + 55 * a, 50 + 20 * b);
    case NodeKind::kMarker: return rgb(50 + 60 * a, 165 + 55 * a, 165 + 55 * a);
  }
  return "rgb(200,200,200)";
}

// ---- the document ----

struct Geometry {
  double width = 0;
  double height = 0;
  double pad_x = 10;
  double full_width = 0;   // of the "all" frame
  double font_size = 0;
  double char_width = 0;   // an estimate for a monospace font
  double frame_height = 0;
  double frames_top = 0;
  uint32_t levels = 0;

  Geometry(const FlamegraphOptions& options, uint32_t level_count) : levels(level_count) {
    width = options.width_px;
    frame_height = options.frame_height_px;
    font_size = std::round(frame_height * 0.75);
    char_width = font_size * 0.59;
    full_width = width - 2 * pad_x;
    frames_top = font_size * 3;
    height = frames_top + levels * frame_height + font_size * 2;
  }
  // The root is at the bottom, as in a classic flame graph.
  double frame_y(uint32_t depth) const { return frames_top + (levels - 1 - depth) * frame_height; }
};

constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  var svg = document.documentElement;
  var padX = Number(svg.getAttribute('data-pad-x'));
  var fullWidth = Number(svg.getAttribute('data-full-width'));
  var charWidth = Number(svg.getAttribute('data-char-width'));
  var details = document.getElementById('details');
  var matched = document.getElementById('matched');
  var resetButton = document.getElementById('reset');
  var searchButton = document.getElementById('search');
  var group = document.getElementById('frames');
  var frames = Array.prototype.map.call(document.querySelectorAll('#frames > g'), function (g) {
    var rect = g.querySelector('rect');
    return {
      g: g, rect: rect, text: g.querySelector('text'), title: g.querySelector('title'),
      name: g.getAttribute('data-name'), value: Number(g.getAttribute('data-v')),
      last: Number(g.getAttribute('data-last')),
      x: Number(rect.getAttribute('x')), width: Number(rect.getAttribute('width')),
      fill: rect.getAttribute('fill')
    };
  });
  var indexOf = new Map();
  frames.forEach(function (f, i) { indexOf.set(f.g, i); });
  var searching = false;

  // Must agree with fitted_label() in flamegraph_svg.cpp.
  function fitLabel(name, width) {
    var fit = Math.floor((width - 6) / charWidth);
    if (fit < 3) return '';
    var chars = Array.from(name);
    return chars.length <= fit ? name : chars.slice(0, fit - 2).join('') + '..';
  }
  function place(f, x, width) {
    f.rect.setAttribute('x', x.toFixed(2));
    f.rect.setAttribute('width', width.toFixed(2));
    f.text.setAttribute('x', (x + 3).toFixed(2));
    f.text.textContent = fitLabel(f.name, width);
  }
  // Frames are in depth-first order and data-last closes each subtree, so
  // ancestors and descendants are index ranges.
  function zoom(i) {
    var target = frames[i], scale = fullWidth / target.width;
    frames.forEach(function (f, j) {
      var enclosing = j <= i && f.last >= i;
      var inside = j > i && j <= target.last;
      f.g.classList.toggle('hidden', !enclosing && !inside);
      f.g.classList.toggle('ancestor', enclosing && j < i);
      if (enclosing) place(f, padX, fullWidth);
      else if (inside) place(f, padX + (f.x - target.x) * scale, f.width * scale);
    });
    resetButton.classList.toggle('hidden', i === 0);
  }
  function resetZoom() {
    frames.forEach(function (f) {
      f.g.classList.remove('hidden', 'ancestor');
      place(f, f.x, f.width);
    });
    resetButton.classList.add('hidden');
  }
  function clearSearch() {
    frames.forEach(function (f) { f.rect.setAttribute('fill', f.fill); });
    matched.textContent = '';
    searchButton.textContent = 'Search';
    searching = false;
  }
  function search() {
    if (searching) { clearSearch(); return; }
    var term = window.prompt('Search frames for a regular expression', '');
    if (!term) return;
    var pattern;
    try { pattern = new RegExp(term); } catch (e) { window.alert('Not a valid regular expression.'); return; }
    var matchedValue = 0, countedUntil = -1;
    frames.forEach(function (f, j) {
      if (!pattern.test(f.name)) return;
      f.rect.setAttribute('fill', 'rgb(230,0,230)');
      // A match inside a counted match is already in its value.
      if (j > countedUntil) { matchedValue += f.value; countedUntil = f.last; }
    });
    var total = frames.length > 0 ? frames[0].value : 0;
    matched.textContent = 'Matched: ' + (total > 0 ? 100 * matchedValue / total : 0).toFixed(1) + '%';
    searchButton.textContent = 'Reset search';
    searching = true;
  }
  function frameIndex(event) {
    var g = event.target.closest ? event.target.closest('#frames > g') : null;
    return g !== null && indexOf.has(g) ? indexOf.get(g) : -1;
  }
  group.addEventListener('click', function (e) {
    var i = frameIndex(e);
    if (i >= 0) zoom(i);
  });
  group.addEventListener('mouseover', function (e) {
    var i = frameIndex(e);
    if (i >= 0) details.textContent = frames[i].title.textContent;
  });
  group.addEventListener('mouseout', function () { details.textContent = ' '; });
  resetButton.addEventListener('click', resetZoom);
  searchButton.addEventListener('click', search);
})();
)JS";

void append_head(std::string& svg, const Geometry& geometry, const std::string& title) {
  append(svg,
         "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
         "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
         "height=\"{1}\" viewBox=\"0 0 {0} {1}\" data-pad-x=\"{2}\" data-full-width=\"{3}\" "
         "data-char-width=\"{4}\">\n",
         geometry.width, geometry.height, geometry.pad_x, geometry.full_width,
         geometry.char_width);
  append(svg,
         "<style type=\"text/css\">\n"
         "text {{ font-family: monospace; font-size: {0}px; fill: rgb(0,0,0); }}\n"
         "#title {{ text-anchor: middle; font-size: {1}px; }}\n"
         ".button {{ cursor: pointer; fill: rgb(0,0,170); }}\n"
         ".button:hover {{ text-decoration: underline; }}\n"
         ".hidden {{ display: none; }}\n"
         ".ancestor {{ opacity: 0.6; }}\n"
         "#frames > g {{ cursor: pointer; }}\n"
         "#frames > g:hover > rect {{ stroke: rgb(0,0,0); stroke-width: 0.5; }}\n"
         "</style>\n",
         geometry.font_size, geometry.font_size + 5);
  append(svg, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"rgb(248,248,248)\"/>\n",
         geometry.width, geometry.height);
  append(svg, "<text id=\"title\" x=\"{}\" y=\"{}\">", geometry.width / 2, geometry.font_size * 2);
  append_xml_text(svg, title);
  svg += "</text>\n";
  double button_y = geometry.font_size * 2;
  append(svg, "<text id=\"reset\" class=\"button hidden\" x=\"{}\" y=\"{}\">Reset zoom</text>\n",
         geometry.pad_x, button_y);
  append(svg,
         "<text id=\"search\" class=\"button\" x=\"{}\" y=\"{}\" text-anchor=\"end\">Search</text>\n",
         geometry.width - geometry.pad_x, button_y);
  double bottom_y = geometry.height - geometry.font_size * 0.6;
  append(svg, "<text id=\"details\" x=\"{}\" y=\"{}\"> </text>\n", geometry.pad_x, bottom_y);
  append(svg, "<text id=\"matched\" x=\"{}\" y=\"{}\" text-anchor=\"end\"></text>\n",
         geometry.width - geometry.pad_x, bottom_y);
}

void append_frame(std::string& svg, const FlameTree& tree, ProfileSource source,
                  const DrawnFrame& frame, const Geometry& geometry) {
  const FlameNode& node = tree.node(frame.node);
  const int64_t total_ns = tree.node(FlameTree::kAllNode).weight_ns;
  const std::string name = printable_utf8(tree.label(frame.node));
  const double percent = 100.0 * static_cast<double>(node.weight_ns) / static_cast<double>(total_ns);
  const double y = geometry.frame_y(frame.depth);
  svg += "<g data-name=\"";
  append_xml_text(svg, name);
  append(svg, "\" data-v=\"{}\" data-last=\"{}\"><title>", node.weight_ns, frame.last_descendant);
  append_xml_text(svg, name);
  append(svg, " ({}, {:.2f}%)</title>", amount(source, node), percent);
  append(svg, "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" rx=\"2\" ry=\"2\"/>",
         frame.x, y, frame.width, geometry.frame_height - 1, frame_color(node.kind, name));
  append(svg, "<text x=\"{:.2f}\" y=\"{:.2f}\">", frame.x + 3,
         y + geometry.frame_height / 2 + geometry.font_size * 0.35);
  append_xml_text(svg, fitted_label(name, frame.width, geometry.char_width));
  svg += "</text></g>\n";
}

void write_text(std::ostream& out, std::string& text) {
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  text.clear();
}

void check_options(const FlamegraphOptions& options) {
  if (options.width_px < 100 || options.width_px > 100000) {
    throw InputError(fmt::format("flame graph width {} px is out of range (100 to 100000)",
                                 options.width_px));
  }
  if (options.frame_height_px < 8 || options.frame_height_px > 100) {
    throw InputError(fmt::format("flame graph frame height {} px is out of range (8 to 100)",
                                 options.frame_height_px));
  }
}

}  // namespace

void write_flamegraph_svg(const Run& run, const Profile& profile, std::ostream& out,
                          const FlamegraphOptions& options) {
  check_options(options);
  FlameTree tree(run, profile);
  Geometry unplaced(options, 1);
  std::vector<DrawnFrame> drawn = layout(tree, unplaced.pad_x, unplaced.full_width);
  uint32_t levels = 1;
  for (const DrawnFrame& frame : drawn) levels = std::max(levels, frame.depth + 1);
  Geometry geometry(options, levels);

  std::string svg;
  append_head(svg, geometry, options.title);
  svg += "<g id=\"frames\">\n";
  for (const DrawnFrame& frame : drawn) {
    append_frame(svg, tree, profile.source, frame, geometry);
    if (svg.size() >= (1 << 20)) write_text(out, svg);
  }
  svg += "</g>\n";
  if (drawn.empty()) {
    append(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">No samples</text>\n",
           geometry.width / 2, geometry.frame_y(0) + geometry.frame_height / 2);
  }
  svg += "<script type=\"text/ecmascript\"><![CDATA[";
  svg += kScript;
  svg += "]]></script>\n</svg>\n";
  write_text(out, svg);
}

}  // namespace stepscope
