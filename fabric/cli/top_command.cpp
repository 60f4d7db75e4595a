#include "fabric/cli/top_command.hpp"

#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "fabric/cli/top_view.hpp"
#include "fabric/control/run_state.hpp"

namespace ethx {
namespace {

std::atomic<bool> interrupted{false};

void on_interrupt(int) {
  interrupted.store(true);
}

// The terminal in character mode without echo while `ethx top` runs, so `q` needs no Enter;
// restored on every way out. Nothing when stdin is not a terminal (a pipe still delivers `q`).
class KeyboardMode {
 public:
  KeyboardMode() : active_(::isatty(STDIN_FILENO) != 0 && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    if (!active_) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  ~KeyboardMode() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  KeyboardMode(const KeyboardMode&) = delete;
  KeyboardMode& operator=(const KeyboardMode&) = delete;

 private:
  termios saved_{};
  bool active_;
};

std::optional<nlohmann::json> read_stats(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json stats = nlohmann::json::parse(in, nullptr, false);
  if (stats.is_discarded() || !stats.contains("ports")) return std::nullopt;
  return stats;
}

// Waits up to `seconds` for a key; true if it was `q` or Ctrl-C came. A stdin that ends
// (/dev/null, a closed pipe) is not read again: only `q` quits.
bool quit_asked(double seconds, bool& keys_open) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6));
  for (;;) {
    if (interrupted.load()) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    // At most 100 ms at a time, so a Ctrl-C is noticed even if poll is restarted.
    const int wait_ms = static_cast<int>(std::min<std::int64_t>(left.count(), 100));
    pollfd in{keys_open ? STDIN_FILENO : -1, POLLIN, 0};
    if (::poll(&in, 1, wait_ms) <= 0 || (in.revents & (POLLIN | POLLHUP)) == 0) continue;
    char key = 0;
    if (::read(STDIN_FILENO, &key, 1) <= 0) {
      keys_open = false;
      continue;
    }
    if (key == 'q' || key == 'Q') return true;
  }
}

// Whether the process that wrote the counters still runs (a killed switch leaves its file).
bool switch_alive(const nlohmann::json& stats) {
  const auto pid = static_cast<pid_t>(stats.value("pid", 0));
  return pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH;
}

void draw(const TopOptions& options, const std::vector<PortRates>& rows, double seconds) {
  if (options.json) {
    std::cout << top_json(rows, seconds).dump() << std::endl;
    return;
  }
  // Home and clear, then the page: one screen that is rewritten, as top does.
  std::cout << "\x1b[H\x1b[2J" << format_top(options.name, rows, seconds) << std::flush;
}

int watch(const TopOptions& options, const std::string& stats_file) {
  std::optional<nlohmann::json> before = read_stats(stats_file);
  if (!before) {
    std::cerr << "ethx top: the switch of '" << options.name << "' publishes no counters ("
              << stats_file << ")\n";
    return 1;
  }
  auto taken = std::chrono::steady_clock::now();
  bool keys_open = true;
  for (long long shown = 0; options.iterations == 0 || shown < options.iterations; ++shown) {
    if (quit_asked(options.interval_s, keys_open)) return 0;
    std::optional<nlohmann::json> after = read_stats(stats_file);
    if (!after) {
      std::cerr << "ethx top: the switch of '" << options.name << "' stopped publishing\n";
      return 1;
    }
    if (!switch_alive(*after)) {
      std::cerr << "ethx top: the switch of '" << options.name << "' (pid "
                << after->value("pid", 0) << ") is not running\n";
      return 1;
    }
    const auto now = std::chrono::steady_clock::now();
    const double seconds =
        seconds_between(*before, *after, std::chrono::duration<double>(now - taken).count());
    draw(options, port_rates(*before, *after, seconds), seconds);
    before = std::move(after);
    taken = now;
  }
  return 0;
}

}  // namespace

int run_top(const TopOptions& options) {
  if (!(options.interval_s >= 0.05 && options.interval_s <= 3600)) {
    std::cerr << "ethx top: --interval-s: must be between 0.05 and 3600\n";
    return 2;
  }
  if (options.iterations < 0) {
    std::cerr << "ethx top: --iterations: must be 0 (until q) or more\n";
    return 2;
  }
  RunDirectory directory(options.name);
  const std::optional<RunState> state = directory.load();
  if (!state) {
    std::cerr << "ethx top: no fabric '" << options.name << "' is up\n";
    return 3;
  }
  // Every way out restores the terminal: these end the loop instead of the process.
  const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  void (*previous[4])(int) = {};
  for (std::size_t i = 0; i < 4; ++i) previous[i] = std::signal(signals[i], on_interrupt);
  int status = 0;
  {
    const KeyboardMode keyboard;
    status = watch(options, state->stats_file);
  }
  for (std::size_t i = 0; i < 4; ++i) std::signal(signals[i], previous[i]);
  return status;
}

}  // namespace ethx
