// Step times (ms) of a real recording: examples/train_lm.py (a small
// PyTorch language model on the CPU, batch 8, no DataLoader workers), 150
// steps under `stepscope record` on a loaded 2-core VM, the first 15 left
// out. Skewed and noisy, as step times on shared machines are: the
// statistics tests draw runs from it.
#pragma once

#include <array>

namespace stepscope::fixtures {

inline constexpr std::array<double, 135> kRecordedStepTimesMs = {
    113.1, 85.3, 94.1, 93.6, 97.8, 90.5, 82.4, 86.5, 98.5, 88.6,
    92.7, 91.8, 94.9, 86.6, 99.5, 94.1, 92.3, 84.0, 91.9, 98.3,
    93.9, 84.0, 89.2, 88.3, 77.4, 88.2, 97.9, 92.5, 78.1, 95.3,
    99.3, 97.2, 116.3, 95.3, 129.4, 122.1, 153.6, 103.1, 109.8, 120.7,
    110.6, 104.1, 101.6, 112.5, 101.7, 106.5, 146.4, 105.3, 123.1, 122.5,
    111.5, 113.5, 108.8, 103.8, 109.7, 82.2, 95.1, 108.4, 96.5, 98.7,
    93.9, 101.6, 98.7, 102.6, 103.3, 99.8, 100.7, 103.9, 115.2, 103.1,
    86.5, 91.7, 95.7, 110.2, 89.3, 115.4, 107.2, 96.5, 107.3, 118.4,
    99.8, 107.3, 90.3, 96.8, 105.2, 117.6, 101.9, 100.2, 90.1, 73.1,
    85.1, 123.7, 94.5, 93.5, 93.4, 85.7, 72.6, 90.4, 91.1, 88.3,
    87.7, 81.4, 89.5, 79.8, 86.1, 71.2, 83.6, 84.1, 73.7, 86.6,
    84.9, 89.7, 89.5, 76.8, 84.6, 86.0, 80.8, 84.4, 80.8, 80.4,
    87.6, 85.5, 44.2, 25.5, 25.7, 24.5, 23.4, 82.9, 97.5, 95.0,
    99.8, 113.1, 104.7, 102.0, 113.4,
};

}  // namespace stepscope::fixtures
