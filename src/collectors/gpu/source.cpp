#include "collectors/gpu/source.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "util/companion_library.hpp"

namespace stepscope {

namespace {

constexpr const char* kLibraryName = "libstepscope-cupti.so";
// A poll reads at most this much of one file, so a flood cannot starve the sampler.
constexpr size_t kMaxReadPerPoll = 64u << 20;

std::string make_private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string templ = base + "/stepscope-gpu-XXXXXX";
  if (!mkdtemp(templ.data())) return {};
  return templ;
}

class InertSource : public RecordingSource {
 public:
  InertSource(std::string why, bool asked) : why_(std::move(why)), asked_(asked) {}
  int64_t poll_interval_ns() const override { return 3'600'000'000'000; }
  void poll(Run& run, const std::vector<pid_t>&, int64_t) override { run.metadata["gpu"] = "off: " + why_; }
  std::vector<std::string> notes() const override {
    if (!asked_) return {};
    return {"--gpu on: no GPU activity recorded: " + why_};
  }

 private:
  std::string why_;
  bool asked_;
};

}  // namespace

std::string find_cupti_library() {
#ifdef STEPSCOPE_CUPTI_BUILD_PATH
  const char* build_path = STEPSCOPE_CUPTI_BUILD_PATH;
#else
  const char* build_path = nullptr;
#endif
  return find_companion_library(kLibraryName, "STEPSCOPE_CUPTI_LIB", build_path);
}

bool cuda_driver_present() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

GpuSource::GpuSource(GpuSourceSettings settings) : settings_(std::move(settings)), buffer_(1u << 20) {
  if (settings_.mode == GpuMode::kOff) {
    off_reason_ = "--gpu off";
  } else if (settings_.library.empty()) {
    off_reason_ = "stepscope was built without CUPTI headers, so libstepscope-cupti.so does not exist";
  } else if (!settings_.existing_injection.empty()) {
    off_reason_ = fmt::format("another tool's CUDA injection is already set "
                              "(CUDA_INJECTION64_PATH={}); stepscope leaves it in place",
                              settings_.existing_injection);
  } else if (settings_.mode == GpuMode::kAuto && !settings_.driver_present) {
    off_reason_ = "no CUDA driver (libcuda.so.1) on this machine";
  }
  if (!off_reason_.empty()) {
    if (settings_.mode == GpuMode::kOn) notes_.push_back("--gpu on: no GPU activity recorded: " + off_reason_);
    return;
  }
  dir_ = make_private_dir();
  if (dir_.empty()) {
    off_reason_ = fmt::format("no folder for GPU activity files: {}", std::strerror(errno));
    notes_.push_back("no GPU activity recorded: " + off_reason_);
  }
}

GpuSource::~GpuSource() { remove_dir(); }

std::vector<std::string> GpuSource::child_environment() {
  if (dir_.empty()) return {};
  return {"CUDA_INJECTION64_PATH=" + settings_.library, "NVTX_INJECTION64_PATH=" + settings_.library,
          "STEPSCOPE_GPU_DIR=" + dir_};
}

void GpuSource::poll(Run& run, const std::vector<pid_t>&, int64_t) {
  if (!described_) {
    run.metadata["gpu"] = enabled() ? "on" : "off: " + off_reason_;
    described_ = true;
  }
  if (!enabled()) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".gpu") continue;
    std::string path = entry.path().string();
    auto found = files_.find(path);
    if (found == files_.end()) found = files_.emplace(path, FileState(path)).first;
    read_file(run, found->second);
  }
  report_bad_files(run, false);
}

void GpuSource::read_file(Run& run, FileState& file) {
  if (!file.decoder.error().empty()) return;
  // The folder is the recorded program's to write: a FIFO or a link to a
  // device must not block or feed the recorder.
  int fd = open(file.decoder.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return;
  }
  size_t total = 0;
  while (total < kMaxReadPerPoll && file.decoder.error().empty()) {
    ssize_t n = pread(fd, buffer_.data(), buffer_.size(), static_cast<off_t>(file.offset));
    if (n <= 0) break;
    file.offset += static_cast<uint64_t>(n);
    total += static_cast<size_t>(n);
    records_.clear();
    file.decoder.feed(std::string_view(buffer_.data(), static_cast<size_t>(n)), records_);
    for (const gpu::Record& record : records_) builder_.add(run, file.decoder.pid(), record);
  }
  close(fd);
}

void GpuSource::report_bad_files(Run& run, bool at_end) {
  uint64_t truncated = 0;
  for (auto& [path, file] : files_) {
    if (!file.decoder.error().empty() && !file.reported) {
      file.reported = true;
      run.metadata["gpu_bad_file." + std::to_string(file.decoder.pid())] = file.decoder.error();
      notes_.push_back("GPU activity file is corrupt, the rest of it is skipped: " + file.decoder.error());
    }
    if (at_end && file.decoder.error().empty()) truncated += file.decoder.pending_bytes();
  }
  if (truncated > 0) {
    run.metadata["gpu_truncated_bytes"] = std::to_string(truncated);
    notes_.push_back(fmt::format("GPU activity files ended in {} bytes of an unfinished record "
                                 "(a process killed while writing); they were dropped", truncated));
  }
}

void GpuSource::finish(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) {
  poll(run, tree, now_ns);
  if (!enabled()) return;
  report_bad_files(run, true);
  builder_.finish(run);
  for (const std::string& note : builder_.notes()) notes_.push_back(note);
  run.metadata["gpu_processes"] = std::to_string(files_.size());
  if (files_.empty() && settings_.mode == GpuMode::kOn) {
    notes_.push_back(settings_.driver_present
                         ? "--gpu on: no GPU activity recorded: no process of the command initialized CUDA"
                         : "--gpu on: no GPU activity recorded: no CUDA driver (libcuda.so.1) on this machine");
  }
  remove_dir();
}

void GpuSource::remove_dir() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

std::unique_ptr<RecordingSource> make_gpu_source(const RecordOptions& options) {
  if (options.command.empty()) {
    return std::make_unique<InertSource>("attach mode: a running process cannot be made to load the collector",
                                         options.gpu == GpuMode::kOn);
  }
  GpuSourceSettings settings;
  settings.mode = options.gpu;
  if (settings.mode != GpuMode::kOff) {
    settings.library = find_cupti_library();
    settings.driver_present = cuda_driver_present();
    if (const char* existing = std::getenv("CUDA_INJECTION64_PATH"); existing && *existing) {
      settings.existing_injection = existing;
    }
  }
  return std::make_unique<GpuSource>(std::move(settings));
}

}  // namespace stepscope
