// `ethx top`: a live per-port view of a running fabric's switch (`ethx up`), refreshed in the
// terminal: frame and byte rates each way, egress queue depth, drops by reason (top_view.hpp).
//   ethx top [--name N] [--interval-s S] [--iterations K] [--json]
// `q` (or Ctrl-C) quits; with --iterations it stops after K refreshes, and with --json it prints
// one JSON object a refresh instead of drawing (docs/operations.md).
#pragma once

#include <string>

namespace ethx {

struct TopOptions {
  std::string name = "default";
  double interval_s = 1.0;
  long long iterations = 0;  // 0: until q
  bool json = false;
};
// Exit status: 0 done (q, Ctrl-C or the iterations), 1 the switch stopped publishing, 2 bad
// input, 3 no such fabric.
int run_top(const TopOptions& options);

}  // namespace ethx
