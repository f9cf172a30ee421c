#include "publish/metrics_publisher.hpp"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "collectors/hooks/events.hpp"
#include "collectors/recorder.hpp"
#include "util/error.hpp"

namespace stepscope {
namespace {

Run one_step() {
  stepscope::Run run;
  HookRunBuilder builder;
  builder.add(run, *decode_hook_datagram("SS1 42\nP rank 0\nA 43 1000000 1000000\nS 43 2000000 2000000 4 -1\n"));
  return run;
}

int port_of(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

TEST(MetricsPublisher, ServesTheLastUpdateAtSlashMetrics) {
  MetricsPublisher publisher({.listen = "127.0.0.1:0"});
  stepscope::Run run = one_step();
  publisher.update(run, SamplerStats{}, monotonic_ns(), false);
  httplib::Client client("127.0.0.1", port_of(publisher.address()));
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(response->body.find("stepscope_steps_total{rank=\"0\"} 1\n"), std::string::npos) << response->body;
  auto missing = client.Get("/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(MetricsPublisher, APortInUseIsAnErrorAtStart) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  std::string taken = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  EXPECT_THROW(MetricsPublisher({.listen = taken}), InputError);
  close(fd);
}

TEST(MetricsPublisher, RefusesMalformedAddresses) {
  for (const char* bad : {":", "host:", "1:2:x", "99999", "127.0.0.1:-1", "a b:1 2"}) {
    EXPECT_THROW(MetricsPublisher({.listen = bad}), InputError) << bad;
  }
}

TEST(MetricsPublisher, WritesTheTextfileByRenaming) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stepscope-textfile-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "steps.prom").string();
  {
    MetricsPublisher publisher({.textfile = path});
    stepscope::Run run = one_step();
    publisher.update(run, SamplerStats{}, monotonic_ns(), true);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("stepscope_steps_total"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  EXPECT_THROW(MetricsPublisher({.textfile = (dir / "no" / "such" / "dir.prom").string()}), InputError);
  std::filesystem::remove_all(dir);
}

TEST(MetricsPublisher, DoesNotWaitForAScraperThatNeverCame) {
  MetricsPublisher publisher({.listen = "127.0.0.1:0"});
  stepscope::Run run = one_step();
  publisher.update(run, SamplerStats{}, monotonic_ns(), true);
  publisher.wait_for_final_scrape();  // returns at once: nothing scraped
  SUCCEED();
}

}  // namespace
}  // namespace stepscope
