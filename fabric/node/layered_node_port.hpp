// A NodePort that runs one layer of the link protocol above another port: LlrNodePort above the
// transport's port, FlowNodePort above that (open_node_port stacks them). What a layer does not
// change goes straight through to the port below.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>

#include "fabric/transport/node_port.hpp"

namespace ethx {

class LayeredNodePort : public NodePort {
 public:
  const char* transport() const override { return inner_->transport(); }
  void kick() override { inner_->kick(); }
  void interrupt() override { inner_->interrupt(); }
  // The caller does not own the port: it bounds the wait by next_timer_ns() itself (read while
  // it did own it).
  void wait_unowned(std::int64_t timeout_ns, const std::function<bool()>& ready) override {
    inner_->wait_unowned(timeout_ns, ready);
  }
  void nap(std::int64_t timeout_ns, const std::function<bool()>& ready) override {
    inner_->nap(timeout_ns, ready);
  }
  std::size_t frames_queued() const override { return inner_->frames_queued(); }

 protected:
  explicit LayeredNodePort(std::unique_ptr<NodePort> inner) : inner_(std::move(inner)) {}

  // `timeout_ns` (negative: none) shortened so that a wait ends at `deadline_ns` (monotonic),
  // a layer's next timer; 0 when that is due already.
  static std::int64_t until_deadline(std::int64_t timeout_ns,
                                     std::optional<std::uint64_t> deadline_ns,
                                     std::uint64_t now_ns) {
    if (!deadline_ns) return timeout_ns;
    const auto left_ns =
        static_cast<std::int64_t>(*deadline_ns > now_ns ? *deadline_ns - now_ns : 0);
    return timeout_ns < 0 ? left_ns : std::min(timeout_ns, left_ns);
  }

  std::unique_ptr<NodePort> inner_;
};

}  // namespace ethx
