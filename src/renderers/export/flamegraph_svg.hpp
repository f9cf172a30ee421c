// A self-contained, interactive SVG flame graph (in the manner of
// flamegraph.pl and inferno, written afresh).
//
// From the bottom up: one "all" frame, a frame per process, per thread, then
// the stack frames (labelled as frame_label.hpp says), siblings in
// alphabetical order, each as wide as its share of the profile's time.
// Frames narrower than 0.1 px are not drawn; their time still counts in
// their parent's width.
//
// In a browser: hovering a frame shows its name, samples (or time for a
// span profile) and percentage; clicking zooms into it ("Reset zoom" undoes
// it); "Search" highlights the frames whose name matches a regular
// expression and shows the matched share of the total.
//
// Names from the run appear only as escaped XML text and attribute values.
// The one <script> is constant: it reads names from the DOM and writes them
// back only as text, so a hostile name cannot inject markup or script.
#pragma once

#include <ostream>
#include <string>

#include "analyses/profile.hpp"
#include "run/run.hpp"

namespace stepscope {

struct FlamegraphOptions {
  std::string title = "Flame Graph";
  int width_px = 1200;        // 100..100000
  int frame_height_px = 16;   // 8..100
};

// Throws InputError when the options are out of range.
void write_flamegraph_svg(const Run& run, const Profile& profile, std::ostream& out,
                          const FlamegraphOptions& options = {});

}  // namespace stepscope
