// Publishes a recording's live metrics the way Prometheus collects them:
// served over HTTP at /metrics (`record --metrics [ADDR:]PORT`, through
// publish/http_server.hpp), and written to a file for node_exporter's textfile
// collector (`--metrics-textfile PATH`: a temporary file renamed over PATH, so
// a reader never sees half of it).
//
// The recording thread calls update() after each commit of the run file (every
// second): it takes in what arrived and renders the exposition text once; a
// scrape only copies that text under a lock, so scrapers never slow the
// sampler's rounds.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analyses/live_counters.hpp"
#include "analyses/live_steps.hpp"
#include "collectors/sampler.hpp"
#include "publish/http_server.hpp"
#include "renderers/metrics/prometheus.hpp"
#include "run/run.hpp"

namespace stepscope {

struct MetricsOptions {
  std::string listen{};    // "[ADDR:]PORT", empty: no server
  std::string textfile{};  // empty: no file
  std::string job{};       // the `job` label, empty when unknown (`host` is the run's)
};

class MetricsPublisher {
 public:
  // Throws InputError when the address is malformed or cannot be listened on
  // (a port in use): before anything is recorded.
  explicit MetricsPublisher(MetricsOptions options);
  ~MetricsPublisher();
  MetricsPublisher(const MetricsPublisher&) = delete;
  MetricsPublisher& operator=(const MetricsPublisher&) = delete;

  // The address the server listens on, with the port the kernel chose for 0.
  std::string address() const;

  // On the recording thread: takes in what the run gained and republishes.
  // Never throws for a textfile that can no longer be written: that is a note.
  void update(const Run& run, const SamplerStats& stats, int64_t now_ns, bool last);

  // After the last update: waits until a scraper has fetched the final
  // numbers, so that Prometheus keeps them, for at most 1.5 times the interval
  // seen between its scrapes (15 s at most); at once when nothing scraped.
  void wait_for_final_scrape();

  // What went wrong while recording, for the user.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void write_textfile(const std::string& text);
  std::string serve_scrape();  // on the server's thread

  MetricsOptions options_;
  LiveSteps steps_;
  LiveCounters counters_;
  int64_t unix_minus_run_clock_ns_ = 0;
  int64_t start_ns_ = 0;  // the run's clock, when publishing started
  int64_t next_textfile_ns_ = 0;
  std::mutex mutex_;
  std::condition_variable scraped_;
  std::string text_;  // the last exposition, what a scrape gets
  bool final_ = false;            // text_ holds the last update's numbers
  bool final_scraped_ = false;    // and a scraper fetched them
  int64_t last_scrape_ns_ = 0;    // the run's clock
  int64_t scrape_interval_ns_ = 0;
  std::string host_;  // what the server listens on
  std::unique_ptr<HttpServer> server_;
  std::vector<std::string> notes_;
};

}  // namespace stepscope
