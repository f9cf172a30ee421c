// A thread that takes no signal: SIGINT and SIGTERM stay with the thread that
// waits for them (record's sampling loop blocks them and reads a signalfd).
// It starts with every signal blocked, so none can reach it even before it
// runs. Throws std::system_error as std::thread does.
#pragma once

#include <functional>
#include <thread>

namespace stepscope {

std::thread start_signal_free_thread(std::function<void()> body);

}  // namespace stepscope
