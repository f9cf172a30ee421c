// The recorder's end of the in-process Python hooks (python/stepscope): a
// Unix datagram socket in a private directory, whose path the launched
// command finds in STEPSCOPE_CHANNEL, and PYTHONPATH entries that make every
// Python process of the tree load the hooks at start-up.
//
// Attach mode has no environment to give, so there the source does nothing:
// a process already running cannot be made to load the hooks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/hooks/events.hpp"
#include "collectors/recorder.hpp"
#include "collectors/recording_source.hpp"

namespace stepscope {

// The folder holding python/stepscope and python/stepscope_boot: the
// environment variable STEPSCOPE_PYTHON_DIR when set, else ../python next to
// the executable's folder (build/stepscope in a checkout), else ../share/
// stepscope/python (an installed tree), else the python/ folder of the
// source tree it was built from. Empty when none holds the hooks.
std::string find_python_hooks_dir();

class HookChannel : public RecordingSource {
 public:
  // Opens the socket; on failure the channel stays inert and says why in the
  // run's metadata (`hooks`), since recording stacks must still work.
  explicit HookChannel(std::string python_dir);
  ~HookChannel() override;
  HookChannel(const HookChannel&) = delete;
  HookChannel& operator=(const HookChannel&) = delete;

  std::vector<std::string> child_environment() override;
  int64_t poll_interval_ns() const override { return 10'000'000; }
  void poll(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) override;
  void finish(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) override;

  const std::string& socket_path() const { return socket_path_; }

 private:
  void close_socket();
  void keep_exit_notes(Run& run) const;

  std::string python_dir_;
  std::string dir_;
  std::string socket_path_;
  std::string error_;
  int fd_ = -1;
  bool described_ = false;
  HookRunBuilder builder_;
  std::vector<char> buffer_;
};

// The hooks for a launched command; an inert source in attach mode.
std::unique_ptr<RecordingSource> make_hook_channel(const RecordOptions& options);

}  // namespace stepscope
