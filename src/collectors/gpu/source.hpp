// The recorder's end of the GPU collector: `record --gpu auto|on|off`.
//
// When on, the launched command's environment makes the CUDA driver load
// libstepscope-cupti.so (CUDA_INJECTION64_PATH; NVTX_INJECTION64_PATH too,
// so NVTX ranges reach CUPTI) and names a private folder (STEPSCOPE_GPU_DIR)
// where each process that initializes CUDA streams its activity to PID.gpu.
// The source reads what the files grew by at each poll and adds spans and
// flows to the Run (gpu/run_builder.hpp). A file cut short by a killed
// process loses only its partial last record, which is counted.
//
// auto is on when the library was built and this machine has a CUDA driver
// (libcuda.so.1 loads): the driver itself loads the library only into
// processes that initialize CUDA, so every other program is untouched.
// docs/gpu-collector.md says more.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/gpu/run_builder.hpp"
#include "collectors/recorder.hpp"
#include "collectors/recording_source.hpp"

namespace stepscope {

// The injected library: STEPSCOPE_CUPTI_LIB when set, else
// libstepscope-cupti.so next to the executable (build/ in a checkout), else
// ../lib/stepscope/ beside it (an installed tree), else the build folder this
// binary came from. Empty when none exists (built without CUPTI headers).
std::string find_cupti_library();

// Whether the CUDA driver library loads on this machine.
bool cuda_driver_present();

struct GpuSourceSettings {
  GpuMode mode = GpuMode::kAuto;
  std::string library;             // find_cupti_library()
  bool driver_present = false;     // cuda_driver_present()
  std::string existing_injection;  // CUDA_INJECTION64_PATH already in our environment
};

class GpuSource : public RecordingSource {
 public:
  explicit GpuSource(GpuSourceSettings settings);
  ~GpuSource() override;
  GpuSource(const GpuSource&) = delete;
  GpuSource& operator=(const GpuSource&) = delete;

  std::vector<std::string> child_environment() override;
  int64_t poll_interval_ns() const override { return 200'000'000; }
  void poll(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) override;
  void finish(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) override;
  std::vector<std::string> notes() const override { return notes_; }

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

 private:
  struct FileState {
    explicit FileState(std::string path) : decoder(std::move(path)) {}
    gpu::FileDecoder decoder;
    uint64_t offset = 0;
    bool reported = false;
  };

  void read_file(Run& run, FileState& file);
  void report_bad_files(Run& run, bool at_end);
  void remove_dir();

  GpuSourceSettings settings_;
  std::string dir_;
  std::string off_reason_;
  std::map<std::string, FileState> files_;
  gpu::RunBuilder builder_;
  std::vector<gpu::Record> records_;
  std::vector<char> buffer_;
  std::vector<std::string> notes_;
  bool described_ = false;
};

std::unique_ptr<RecordingSource> make_gpu_source(const RecordOptions& options);

}  // namespace stepscope
