#include "collectors/flight_recorder_client.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <simdjson.h>

#include "importers/dump_file.hpp"
#include "importers/flight_recorder.hpp"
#include "util/error.hpp"
#include "util/unique_fd.hpp"

namespace stepscope {

namespace {

// A rank answers from its own thread at once; a stuck interpreter (a thread
// holding the GIL for good) must not stop the dump of the others.
constexpr auto kAnswerTimeout = std::chrono::seconds(5);
constexpr size_t kMaxAnswerBytes = size_t{256} << 20;

UniqueFd connect_to(const std::string& path, std::string& problem) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    problem = "its socket's path is too long";
    return {};
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    problem = errno == ENOENT ? "no Flight Recorder here: the process has no process group (or no hooks)"
                              : fmt::format("cannot reach its hooks: {}", std::strerror(errno));
    return {};
  }
  return fd;
}

// Everything the rank sends until it closes; nothing after the deadline.
bool read_answer(int fd, std::string& answer, std::string& problem) {
  auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
  char buffer[65536];
  while (answer.size() < kMaxAnswerBytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd wait{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&wait, 1, static_cast<int>(left.count())) == 0) {
      problem = fmt::format("no answer from its hooks within {} s", kAnswerTimeout.count());
      return false;
    }
    ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got == 0) return true;
    if (got < 0 && errno != EINTR) {
      problem = fmt::format("its answer broke off: {}", std::strerror(errno));
      return false;
    }
    if (got > 0) answer.append(buffer, static_cast<size_t>(got));
  }
  problem = "its answer is larger than 256 MiB";
  return false;
}

std::optional<ExitedRank> read_exit_note(const std::filesystem::path& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element note;
  if (parser.load(path.string()).get(note) != simdjson::SUCCESS) return std::nullopt;
  ExitedRank exited = exited_rank_from(note);
  if (exited.pid <= 0 || kill(exited.pid, 0) == 0) return std::nullopt;  // still running
  return exited;
}

}  // namespace

std::string recorder_folder(const std::string& channel) {
  return channel.empty() ? std::string() : std::filesystem::path(channel).parent_path().string();
}

std::optional<FlightRecorder> ask_flight_recorder(pid_t pid, const std::string& folder, std::string& problem) {
  if (folder.empty()) {
    problem = "not launched under stepscope record: no hooks to ask";
    return std::nullopt;
  }
  UniqueFd fd = connect_to(fmt::format("{}/flight.{}", folder, pid), problem);
  std::string answer;
  if (!fd.valid() || !read_answer(fd.get(), answer, problem)) return std::nullopt;
  try {
    std::string where = fmt::format("the Flight Recorder of pid {}", pid);
    simdjson::dom::parser parser;
    simdjson::dom::element document;
    if (auto error = parser.parse(answer).get(document)) {
      throw InputError(fmt::format("{}: not JSON: {}", where, simdjson::error_message(error)));
    }
    std::string_view hooks_problem;
    if (document["stepscope_problem"].get_string().get(hooks_problem) == simdjson::SUCCESS) {
      problem = fmt::format("torch could not give it: {}", hooks_problem);
      return std::nullopt;
    }
    return flight_recorder_from(document, where);
  } catch (const InputError& e) {
    problem = e.what();
    return std::nullopt;
  }
}

std::vector<ExitedRank> exited_ranks(const std::string& folder) {
  std::vector<ExitedRank> exited;
  std::error_code ec;
  if (folder.empty()) return exited;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("exit.", 0) != 0 || entry.path().extension() != ".json") continue;
    if (auto note = read_exit_note(entry.path())) exited.push_back(*note);
  }
  std::sort(exited.begin(), exited.end(), [](const ExitedRank& a, const ExitedRank& b) { return a.pid < b.pid; });
  return exited;
}

}  // namespace stepscope
