// The one exception ethx throws: a configuration that cannot be built. Raised while loading
// or validating config, never on a data path; the message names the offending field or window.
#pragma once

#include <stdexcept>

namespace ethx {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ethx
