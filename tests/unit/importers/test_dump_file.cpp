#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "importers/dump_file.hpp"
#include "importers/flight_recorder.hpp"
#include "renderers/stack_snapshot.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

class DumpFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("stepscope-dump-test-" + std::to_string(::getpid()));
};

Dump sample_dump() {
  Dump dump;
  dump.host = "node-\"7\"";
  dump.time_unix_ns = 1'796'555'635'774'790'778;
  dump.root_pid = 41;
  ProcessSnapshot& process = dump.processes.emplace_back();
  process.pid = 42;
  process.command = "python -u train.py\n--bad";
  process.python_version = "3.11.2";
  process.image = "/usr/bin/python3.11";
  process.rank = 3;
  process.local_rank = 1;
  process.world_size = 8;
  process.job = "job-\u00e9";
  process.flight_recorder = parse_flight_recorder(
      R"({"version": "2.10", "entries": [{"collective_seq_id": 5, "process_group": ["0", "default_pg"],
          "profiling_name": "nccl:all_reduce</script>", "state": "started", "retired": false}],
          "pg_status": {"0": {"last_enqueued_collective": "5", "last_completed_collective": "4"}}})",
      "test");
  ThreadSnapshot& thread = process.threads.emplace_back();
  thread.tid = 42;
  thread.name = "python";
  thread.state = ThreadState::kIdle;
  thread.frames = {{"wait", "/job/train.py", 9}};
  ProcessSnapshot& launcher = dump.processes.emplace_back();
  launcher.pid = 41;
  launcher.problem = "not a Python process";
  launcher.flight_recorder_problem = "";
  ExitedRank& exited = dump.exited.emplace_back();
  exited.pid = 43;
  exited.rank = 4;
  exited.status = 1;
  exited.exception = "ValueError: x";
  return dump;
}

TEST_F(DumpFile, ReadsBackWhatDumpWrote) {
  std::ostringstream json;
  write_dump_json(sample_dump(), json);
  std::string path = write("dump.json", json.str());
  ASSERT_TRUE(is_dump_file(path));

  Dump dump = read_dump_file(path);
  EXPECT_EQ(dump.source, path);
  EXPECT_EQ(dump.host, "node-\"7\"");
  EXPECT_EQ(dump.time_unix_ns, 1'796'555'635'774'790'778);
  ASSERT_EQ(dump.processes.size(), 2u);
  const ProcessSnapshot& process = dump.processes[0];
  EXPECT_EQ(process.command, "python -u train.py\\x0A--bad");  // written printable, as every output is
  EXPECT_EQ(process.rank, 3);
  EXPECT_EQ(process.local_rank, 1);
  EXPECT_EQ(process.world_size, 8);
  EXPECT_EQ(process.job, "job-\u00e9");
  ASSERT_TRUE(process.flight_recorder);
  ASSERT_EQ(process.flight_recorder->entries.size(), 1u);
  EXPECT_EQ(process.flight_recorder->entries[0].profiling_name, "nccl:all_reduce</script>");
  EXPECT_EQ(process.flight_recorder->groups.at("0").last_completed, 4);
  EXPECT_EQ(process.threads[0].state, ThreadState::kIdle);
  EXPECT_EQ(process.threads[0].frames[0].function, "wait");
  EXPECT_FALSE(dump.processes[1].rank);
  EXPECT_FALSE(dump.processes[1].flight_recorder);
  ASSERT_EQ(dump.exited.size(), 1u);
  EXPECT_EQ(dump.exited[0].rank, 4);
  EXPECT_EQ(dump.exited[0].status, 1);
  EXPECT_EQ(dump.exited[0].exception, "ValueError: x");
}

TEST_F(DumpFile, RefusesDumpsCutShortOrOfAnotherVersion) {
  std::ostringstream json;
  write_dump_json(sample_dump(), json);
  std::string cut = write("cut.json", json.str().substr(0, json.str().size() / 2));
  EXPECT_TRUE(is_dump_file(cut));
  try {
    read_dump_file(cut);
    FAIL() << "a dump cut short was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.json: not a whole stepscope dump (cut short"), std::string::npos);
  }
  std::string later = write("later.json", R"({"format":"stepscope.dump/2","processes":[]})");
  EXPECT_THROW(read_dump_file(later), InputError);
  EXPECT_FALSE(is_dump_file(write("trace.json", R"({"traceEvents": []})")));
  EXPECT_FALSE(is_dump_file((dir_ / "missing.json").string()));
}

}  // namespace
}  // namespace stepscope
