#include "analyses/side_by_side.hpp"

#include <algorithm>
#include <system_error>
#include <thread>

namespace stepscope {

size_t analysis_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

SideBySide::Task SideBySide::add(std::function<void()> work) {
  work_.push_back(std::move(work));
  done_.emplace_back(false);
  errors_.emplace_back();
  return work_.size() - 1;
}

void SideBySide::wait_for(Task task) const {
  done_[task].wait(false, std::memory_order_acquire);
  // The release store of done_ publishes the task's error and results.
  if (errors_[task]) std::rethrow_exception(errors_[task]);
}

void SideBySide::run_tasks() {
  for (size_t task = next_.fetch_add(1); task < work_.size(); task = next_.fetch_add(1)) {
    try {
      work_[task]();
    } catch (...) {
      errors_[task] = std::current_exception();
    }
    done_[task].store(true, std::memory_order_release);
    done_[task].notify_all();
  }
}

void SideBySide::run(size_t threads) {
  next_ = 0;
  size_t helpers = work_.empty() ? 0 : std::min(std::max<size_t>(threads, 1), work_.size()) - 1;
  {
    std::vector<std::jthread> pool;
    pool.reserve(helpers);
    try {
      for (size_t i = 0; i < helpers; ++i) pool.emplace_back([this] { run_tasks(); });
    } catch (const std::system_error&) {
      // No thread to be had: the threads started (the caller's at least) do all the work.
    }
    run_tasks();
  }  // joins the helpers
  for (const std::exception_ptr& error : errors_) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace stepscope
