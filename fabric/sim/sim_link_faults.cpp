#include "fabric/sim/sim_link_faults.hpp"

#include <charconv>
#include <stdexcept>

namespace ethx::sim {
namespace {

[[noreturn]] void fail(std::string_view text, const std::string& reason) {
  throw std::invalid_argument("--link-down \"" + std::string(text) + "\": " + reason +
                              " (expected GPU@TIME_NS or GPU@TIME_NS-UNTIL_NS)");
}

// A whole decimal number and nothing else (no sign, no spaces); nullopt otherwise or on
// overflow.
std::optional<std::uint64_t> parse_number(std::string_view digits) {
  std::uint64_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

TimeNs parse_time(std::string_view text, std::string_view digits, const char* name) {
  const auto value = parse_number(digits);
  if (!value) fail(text, std::string(name) + " must be a whole number of nanoseconds");
  if (*value > kMaxLinkFaultNs) {
    fail(text, std::string(name) + " must be at most " + std::to_string(kMaxLinkFaultNs) +
                   " ns (an hour)");
  }
  return *value;
}

bool overlap(const LinkFault& a, const LinkFault& b) {
  const auto before = [](const LinkFault& first, const LinkFault& second) {
    return first.up_ns && *first.up_ns <= second.down_ns;
  };
  return a.gpu == b.gpu && !before(a, b) && !before(b, a);
}

}  // namespace

LinkFault parse_link_fault(std::string_view text, std::size_t gpus) {
  const std::size_t at = text.find('@');
  if (at == std::string_view::npos) fail(text, "no '@'");
  LinkFault fault;
  const auto gpu = parse_number(text.substr(0, at));
  if (!gpu) fail(text, "GPU must be a GPU id");
  if (*gpu >= gpus) {
    fail(text, "GPU " + std::to_string(*gpu) + " is out of range: the fabric has GPUs 0-" +
                   std::to_string(gpus - 1));
  }
  fault.gpu = static_cast<GpuId>(*gpu);
  const std::string_view times = text.substr(at + 1);
  const std::size_t dash = times.find('-');
  fault.down_ns = parse_time(text, times.substr(0, dash), "TIME_NS");
  if (dash != std::string_view::npos) {
    fault.up_ns = parse_time(text, times.substr(dash + 1), "UNTIL_NS");
    if (*fault.up_ns <= fault.down_ns) fail(text, "UNTIL_NS must be after TIME_NS");
  }
  return fault;
}

std::vector<LinkFault> parse_link_faults(const std::vector<std::string>& values, std::size_t gpus) {
  std::vector<LinkFault> faults;
  for (const std::string& value : values) {
    const LinkFault fault = parse_link_fault(value, gpus);
    for (const LinkFault& earlier : faults) {
      if (overlap(earlier, fault)) {
        fail(value, "overlaps --link-down " + to_string(earlier) + " on the same GPU");
      }
    }
    faults.push_back(fault);
  }
  return faults;
}

std::string to_string(const LinkFault& fault) {
  std::string text = std::to_string(fault.gpu) + "@" + std::to_string(fault.down_ns);
  if (fault.up_ns) text += "-" + std::to_string(*fault.up_ns);
  return text;
}

}  // namespace ethx::sim
