#include "collectors/hooks/channel.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "collectors/flight_recorder_client.hpp"

namespace stepscope {

namespace {

// The largest datagram accepted; the hooks send a few kilobytes at most.
constexpr size_t kMaxDatagram = 64 * 1024;
// A poll reads at most this many datagrams, so a flood cannot starve the sampler.
constexpr int kMaxDatagramsPerPoll = 4096;
// Room for bursts (a process's final flush, many workers at once).
constexpr int kReceiveBuffer = 8 * 1024 * 1024;

bool holds_hooks(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "stepscope_boot" / "sitecustomize.py", ec) &&
         std::filesystem::is_regular_file(dir / "stepscope" / "__init__.py", ec);
}

// A private folder for the socket: mkdtemp makes it 0700, so only this user
// can send. TMPDIR is used when its path leaves room in sun_path.
std::string make_private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp && std::strlen(tmp) < 60 ? tmp : "/tmp";
  std::string templ = base + "/stepscope-XXXXXX";
  if (!mkdtemp(templ.data())) return {};
  return templ;
}

class InertSource : public RecordingSource {
 public:
  int64_t poll_interval_ns() const override { return 3'600'000'000'000; }
  void poll(Run&, const std::vector<pid_t>&, int64_t) override {}
};

}  // namespace

std::string find_python_hooks_dir() {
  if (const char* env = std::getenv("STEPSCOPE_PYTHON_DIR"); env && *env) {
    return holds_hooks(env) ? std::filesystem::absolute(env).string() : std::string{};
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const char* relative : {"../python", "../lib/stepscope/python"}) {
    if (ec) break;
    std::filesystem::path dir = (exe.parent_path() / relative).lexically_normal();
    if (holds_hooks(dir)) return dir.string();
  }
#ifdef STEPSCOPE_SOURCE_DIR
  // A build folder outside the checkout still knows where its sources are.
  std::filesystem::path source_tree = STEPSCOPE_SOURCE_DIR "/python";
  if (holds_hooks(source_tree)) return source_tree.string();
#endif
  return {};
}

HookChannel::HookChannel(std::string python_dir) : python_dir_(std::move(python_dir)), buffer_(kMaxDatagram + 1) {
  if (python_dir_.empty()) {
    error_ = "python hooks not found (set STEPSCOPE_PYTHON_DIR to the repository's python/ folder)";
    return;
  }
  dir_ = make_private_dir();
  if (dir_.empty()) {
    error_ = fmt::format("no folder for the hook channel: {}", std::strerror(errno));
    return;
  }
  socket_path_ = dir_ + "/hooks.sock";
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    error_ = fmt::format("cannot open the hook channel {}: {}", socket_path_, std::strerror(errno));
    close_socket();
    return;
  }
  // Best effort: the kernel caps it at net.core.rmem_max.
  int size = kReceiveBuffer;
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

HookChannel::~HookChannel() { close_socket(); }

std::vector<std::string> HookChannel::child_environment() {
  if (fd_ < 0) return {};
  std::string pythonpath = python_dir_ + "/stepscope_boot:" + python_dir_;
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing) {
    pythonpath += std::string(":") + existing;
  }
  return {"STEPSCOPE_CHANNEL=" + socket_path_, "PYTHONPATH=" + pythonpath};
}

void HookChannel::poll(Run& run, const std::vector<pid_t>&, int64_t) {
  if (!described_) {
    run.metadata["hooks"] = fd_ >= 0 ? "on" : "off: " + error_;
    described_ = true;
  }
  if (fd_ < 0) return;
  for (int i = 0; i < kMaxDatagramsPerPoll; ++i) {
    ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) break;  // EAGAIN: drained (other errors: nothing more to read either)
    if (static_cast<size_t>(n) > kMaxDatagram) {
      builder_.add_bad_datagram(run);
      continue;
    }
    auto datagram = decode_hook_datagram(std::string_view(buffer_.data(), static_cast<size_t>(n)));
    if (datagram) {
      builder_.add(run, *datagram);
    } else {
      builder_.add_bad_datagram(run);
    }
  }
}

void HookChannel::finish(Run& run, const std::vector<pid_t>& tree, int64_t now_ns) {
  poll(run, tree, now_ns);
  builder_.finish(run);
  keep_exit_notes(run);
  close_socket();
}

// A rank that died of an exception left a note: the run keeps it, so that a
// report over the dumps of the nodes still hung can say why it is missing.
void HookChannel::keep_exit_notes(Run& run) const {
  for (const ExitedRank& exited : exited_ranks(dir_)) {
    if (exited.status) run.metadata[fmt::format("hooks.{}.exit_status", exited.pid)] = std::to_string(*exited.status);
    if (!exited.exception.empty()) run.metadata[fmt::format("hooks.{}.exception", exited.pid)] = exited.exception;
  }
}

void HookChannel::close_socket() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  std::error_code ec;
  if (!socket_path_.empty()) std::filesystem::remove(socket_path_, ec);
  // The ranks leave their Flight Recorder sockets and exit notes here too.
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

std::unique_ptr<RecordingSource> make_hook_channel(const RecordOptions& options) {
  if (options.command.empty()) return std::make_unique<InertSource>();
  return std::make_unique<HookChannel>(find_python_hooks_dir());
}

}  // namespace stepscope
