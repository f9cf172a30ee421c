#include "publish/metrics_publisher.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "collectors/recorder.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

constexpr int64_t kTextfileIntervalNs = 2'000'000'000;
constexpr int64_t kMaxFinalScrapeWaitNs = 15'000'000'000;
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct ListenAddress {
  std::string host = "0.0.0.0";  // every interface, as exporters listen
  int port = 0;
};

// "PORT", "ADDR:PORT" or "[IPV6]:PORT".
ListenAddress parse_listen(const std::string& text) {
  ListenAddress out;
  std::string port = text;
  if (size_t colon = text.rfind(':'); colon != std::string::npos) {
    out.host = text.substr(0, colon);
    if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
      out.host = out.host.substr(1, out.host.size() - 2);
    }
    port = text.substr(colon + 1);
  }
  bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) > 65535 || out.host.empty()) {
    throw InputError(fmt::format("--metrics {}: not [ADDR:]PORT (a port from 0 to 65535)", text));
  }
  out.port = std::stoi(port);
  return out;
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MetricsPublisher::MetricsPublisher(MetricsOptions options)
    : options_(std::move(options)), unix_minus_run_clock_ns_(unix_now_ns() - monotonic_ns()),
      start_ns_(monotonic_ns()) {
  if (!options_.textfile.empty()) write_textfile("");  // an unwritable place fails now, not later
  if (options_.listen.empty()) return;
  ListenAddress address = parse_listen(options_.listen);
  host_ = address.host;
  server_ = std::make_unique<HttpServer>("--metrics " + options_.listen, address.host, address.port, "/metrics",
                                         kContentType, [this] { return serve_scrape(); });
}

MetricsPublisher::~MetricsPublisher() = default;

std::string MetricsPublisher::serve_scrape() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t now = monotonic_ns();
  if (last_scrape_ns_ > 0) scrape_interval_ns_ = now - last_scrape_ns_;
  last_scrape_ns_ = now;
  if (final_) {
    final_scraped_ = true;
    scraped_.notify_all();
  }
  return text_;
}

std::string MetricsPublisher::address() const {
  int port = server_ ? server_->port() : 0;
  bool ipv6 = host_.find(':') != std::string::npos;
  return ipv6 ? fmt::format("[{}]:{}", host_, port) : fmt::format("{}:{}", host_, port);
}

void MetricsPublisher::update(const Run& run, const SamplerStats& stats, int64_t now_ns, bool last) {
  steps_.update(run);
  counters_.update(run);
  auto host = run.metadata.find("host");
  ExpositionContext context{.host = host != run.metadata.end() ? host->second : std::string(),
                            .job = options_.job,
                            .unix_minus_run_clock_ns = unix_minus_run_clock_ns_,
                            .recording_seconds = static_cast<double>(now_ns - start_ns_) * 1e-9};
  std::string text = prometheus_exposition(run, steps_, counters_.gauges(), stats, context);
  if (!options_.textfile.empty() && (last || now_ns >= next_textfile_ns_)) {
    try {
      write_textfile(text);
    } catch (const InputError& error) {  // the disk filled up: the recording goes on without the file
      notes_.push_back(fmt::format("{}; stopped writing it", error.what()));
      options_.textfile.clear();
    }
    next_textfile_ns_ = now_ns + kTextfileIntervalNs;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  text_ = std::move(text);
  final_ = last;
}

void MetricsPublisher::wait_for_final_scrape() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!server_ || !final_ || scrape_interval_ns_ <= 0) return;
  auto wait = std::chrono::nanoseconds(std::min(scrape_interval_ns_ * 3 / 2, kMaxFinalScrapeWaitNs));
  scraped_.wait_for(lock, wait, [this] { return final_scraped_; });
}

void MetricsPublisher::write_textfile(const std::string& text) {
  // Beside the file, so that the rename stays in one file system.
  std::string temporary = options_.textfile + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw InputError(fmt::format("--metrics-textfile {}: cannot write {}", options_.textfile, temporary));
  }
  if (std::rename(temporary.c_str(), options_.textfile.c_str()) != 0) {
    throw InputError(fmt::format("--metrics-textfile {}: cannot rename {} over it", options_.textfile, temporary));
  }
}

}  // namespace stepscope
