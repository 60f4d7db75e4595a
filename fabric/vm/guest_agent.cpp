#include "fabric/vm/guest_agent.hpp"

#include <sstream>

#include "fabric/vm/agent_client.hpp"

namespace ethx {

GuestAgent::GuestAgent(std::string log_directory, std::size_t vm, std::int64_t connect_timeout_ms)
    : log_directory_(std::move(log_directory)), vm_(vm), connect_timeout_ms_(connect_timeout_ms) {}

GuestBlock GuestAgent::run(const std::string& arguments, std::int64_t timeout_ms,
                           const std::string& working_directory) {
  agent::StartRequest request;
  request.working_directory = working_directory;
  if (!arguments.empty() && arguments[0] == '!') {
    request.argv = {"sh", "-c", arguments.substr(1)};
  } else {
    // Words, as the shell of the legacy agent split them.
    request.argv = {"ethx-guest"};
    std::istringstream words(arguments);
    for (std::string word; words >> word;) request.argv.push_back(word);
  }
  AgentClient client(log_directory_, vm_, connect_timeout_ms_);
  GuestBlock block;
  const AgentCommandResult result = run_agent_command(
      client, request, timeout_ms,
      [&block](bool /*is_stderr*/, const std::string& data) { block.output += data; });
  for (const std::string& error : result.errors) block.output += "ethx-agent: " + error + "\n";
  block.exit_status = static_cast<int>(result.exit_status);
  return block;
}

}  // namespace ethx
