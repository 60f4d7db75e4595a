// `ethx run`'s command line (fabric/cli/run_command.hpp): where ethx's options end and the
// program begins, and the one-line errors for what cannot run; the agent ports every VM's
// QEMU command line gets (fabric/vm/vm_plan.cpp).
#include <gtest/gtest.h>

#include <boost/program_options.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/cli/run_command.hpp"
#include "fabric/vm/vm_plan.hpp"

namespace ethx {
namespace {

using Args = std::vector<std::string>;

std::string error_of(const Args& args) {
  try {
    parse_run_options(args);
  } catch (const boost::program_options::error& error) {
    return error.what();
  }
  return "accepted";
}

TEST(RunOptions, OptionsThenTheProgramAfterTheSeparator) {
  const RunOptions options =
      parse_run_options({"--name", "f1", "--vm", "1", "--per-gpu", "--timeout-s", "30", "--env",
                         "A=1", "--env=B=x=y", "--", "./prog", "--vm", "7", "-x"});
  EXPECT_EQ(options.name, "f1");
  ASSERT_TRUE(options.vm);
  EXPECT_EQ(*options.vm, 1u);
  EXPECT_FALSE(options.all_vms);
  EXPECT_TRUE(options.per_gpu);
  EXPECT_EQ(options.timeout_s, 30);
  EXPECT_EQ(options.env, (Args{"A=1", "B=x=y"}));
  // Everything after -- is the program's, even what looks like ethx's options.
  EXPECT_EQ(options.argv, (Args{"./prog", "--vm", "7", "-x"}));
}

TEST(RunOptions, WithoutSeparatorTheFirstWordStartsTheProgram) {
  const RunOptions options = parse_run_options({"--all-vms", "sh", "-c", "echo $ETHX_VM"});
  EXPECT_TRUE(options.all_vms);
  EXPECT_FALSE(options.vm);
  EXPECT_EQ(options.argv, (Args{"sh", "-c", "echo $ETHX_VM"}));
  const RunOptions defaults = parse_run_options({"--", "true"});
  EXPECT_EQ(defaults.name, "default");
  EXPECT_FALSE(defaults.vm);
  EXPECT_EQ(defaults.timeout_s, 0);
  EXPECT_TRUE(parse_run_options({"--help"}).help);
}

TEST(RunOptions, BadInputIsOneLineNamingTheOption) {
  EXPECT_NE(error_of({"--vm", "1", "--all-vms", "--", "true"}).find("--all-vms"),
            std::string::npos);
  EXPECT_NE(error_of({"--env", "NOVALUE", "--", "true"}).find("--env NOVALUE"), std::string::npos);
  EXPECT_NE(error_of({"--env", "1A=2", "--", "true"}).find("not NAME=VALUE"), std::string::npos);
  EXPECT_NE(error_of({"--timeout-s", "-3", "--", "true"}).find("--timeout-s"), std::string::npos);
  EXPECT_NE(error_of({"--per-gpu"}).find("no program"), std::string::npos);
  EXPECT_NE(error_of({"--"}).find("no program"), std::string::npos);
  EXPECT_NE(error_of({"--vm", "x", "--", "true"}).find("vm"), std::string::npos);
  EXPECT_NE(error_of({"--bogus", "--", "true"}).find("bogus"), std::string::npos);
  for (const Args& args : {Args{"--vm", "1", "--all-vms", "--", "true"}, Args{"--per-gpu"}}) {
    EXPECT_EQ(error_of(args).find('\n'), std::string::npos);
  }
}

TEST(VmPlanAgentPorts, QemuCommandHasThePortsAfterTheGpus) {
  VmPlan plan;
  plan.count = plan.gpus_per_vm = 2;
  std::tie(plan.qemu, plan.kernel, plan.initrd) = std::tuple("/q", "/k", "/i");
  const VmFabric fabric{"up-x", "shm", "", "", 4, "/run/x"};
  const Args argv = qemu_command(plan, 1, fabric);
  const auto at = [&argv](const std::string& arg) {
    return std::find(argv.begin(), argv.end(), arg) - argv.begin();
  };
  ASSERT_EQ(plan.agent_ports(), 6u);  // one per GPU (--per-gpu) and 4 more
  const auto controller = at("virtio-serial-pci");
  ASSERT_LT(controller, static_cast<std::ptrdiff_t>(argv.size()));
  EXPECT_GT(controller, at("ethx-gpu,gpu-id=3,fabric=up-x,transport=shm,gpus=4"));
  for (std::size_t port = 0; port < plan.agent_ports(); ++port) {
    const std::string id = "agent" + std::to_string(port);
    const auto chardev = at("socket,id=" + id + ",path=/run/x/vm-1.agent-" + std::to_string(port) +
                            ".sock,server=on,wait=off");
    const auto device =
        at("virtserialport,chardev=" + id + ",name=org.ethx.agent." + std::to_string(port));
    ASSERT_LT(device, static_cast<std::ptrdiff_t>(argv.size())) << id;
    EXPECT_EQ(argv[static_cast<std::size_t>(chardev - 1)], "-chardev");
    EXPECT_GT(device, controller);
  }
  EXPECT_EQ(at("socket,id=agent6,path=/run/x/vm-1.agent-6.sock,server=on,wait=off"),
            static_cast<std::ptrdiff_t>(argv.size()));
  const auto append = at("-append");
  EXPECT_NE(argv[static_cast<std::size_t>(append + 1)].find("ethx.agent_ports=6"),
            std::string::npos);
  // The legacy agent on ttyS1 stays.
  EXPECT_LT(at("chardev:agent"), static_cast<std::ptrdiff_t>(argv.size()));
  EXPECT_EQ(vm_agent_lock_path("/run/x", 1, 2), "/run/x/vm-1.agent-2.lock");
}

}  // namespace
}  // namespace ethx
