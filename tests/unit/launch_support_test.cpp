// The pieces `ethx up/down/status` and `ethx bench` stand on: run records, process identity,
// readiness pipes, the periodic counter hook, the bare forwarder and the forwarding probe's
// frames.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <vector>

#include "fabric/bench/forwarding_probe.hpp"
#include "fabric/control/run_state.hpp"
#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_identity.hpp"
#include "fabric/platform/readiness_pipe.hpp"
#include "packet-engine/wire.hpp"
#include "switch/runtime/bare_forwarder.hpp"
#include "switch/runtime/periodic_hook.hpp"

namespace ethx {
namespace {

TEST(RunState, JsonRoundTripKeepsEveryField) {
  RunState state;
  state.name = "rack-a";
  state.fabric = "up-rack-a";
  state.transport = "afxdp";
  state.gpus = 8;
  state.config_path = "/etc/ethx.toml";
  state.netns_tag = "ab12";
  state.phase = "up";
  state.created_unix_s = 1795000000;
  state.processes = {{"switch", 100, "5000"}, {"node-0", 101, "5001"}};
  state.namespaces = {"ethx-ab12-sw", "ethx-ab12-n0"};
  state.links = {"ethx-ab12-s0", "ethx-ab12-n0"};
  state.shared_memory = {"/ethx-up-rack-a-control"};
  state.stats_file = "/run/ethx/up/rack-a/switch-stats.json";
  const RunState back = RunState::from_json(state.to_json());
  EXPECT_EQ(back.to_json(), state.to_json());
  EXPECT_EQ(back.processes.at(1).role, "node-0");
  EXPECT_EQ(back.processes.at(1).pid, 101);
}

TEST(RunState, AMissingFieldIsAnErrorNamingIt) {
  nlohmann::json value = RunState{}.to_json();
  value.erase("netns_tag");
  try {
    RunState::from_json(value);
    FAIL() << "accepted a record without netns_tag";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("netns_tag"), std::string::npos) << error.what();
  }
}

TEST(RunState, FabricNamesAreShortAndPlain) {
  EXPECT_TRUE(valid_fabric_name("default"));
  EXPECT_TRUE(valid_fabric_name("rack-7"));
  EXPECT_FALSE(valid_fabric_name(""));
  EXPECT_FALSE(valid_fabric_name("-x"));
  EXPECT_FALSE(valid_fabric_name("Upper"));
  EXPECT_FALSE(valid_fabric_name("../etc"));
  EXPECT_FALSE(valid_fabric_name("a-name-of-17-char"));
  EXPECT_THROW(RunDirectory("a/b"), std::invalid_argument);
}

TEST(RunState, SaveLoadAndRemoveUnderEthxRunDir) {
  const auto root =
      std::filesystem::temp_directory_path() / ("ethx-unit-run-" + std::to_string(::getpid()));
  ::setenv("ETHX_RUN_DIR", root.c_str(), 1);
  {
    RunDirectory directory("unit");
    EXPECT_EQ(directory.path(), (root / "unit").string());
    EXPECT_FALSE(directory.load().has_value());
    directory.lock();
    directory.create();
    RunState state;
    state.name = "unit";
    state.gpus = 2;
    directory.save(state);
    ASSERT_TRUE(directory.load().has_value());
    EXPECT_EQ(directory.load()->gpus, 2u);
    EXPECT_EQ(list_run_directories(), std::vector<std::string>{"unit"});
    directory.remove();
    EXPECT_FALSE(directory.exists());
  }
  ::unsetenv("ETHX_RUN_DIR");
  std::filesystem::remove_all(root);
}

TEST(ProcessIdentity, RecognisesItselfAndNotAnEndedOrReusedProcess) {
  const std::string mine = process_start_time(::getpid());
  ASSERT_FALSE(mine.empty());
  EXPECT_TRUE(same_process_running(::getpid(), mine));
  EXPECT_FALSE(same_process_running(::getpid(), mine + "1"));  // a PID reused later
  EXPECT_FALSE(same_process_running(::getpid(), ""));
  ChildProcess child = ChildProcess::spawn({"/bin/true"});
  ASSERT_TRUE(child.wait_exit(10'000));
  EXPECT_TRUE(process_start_time(child.pid()).empty());
}

TEST(ProcessIdentity, TerminatesTheRecordedProcessOnly) {
  ChildProcess child = ChildProcess::spawn({"/bin/sleep", "30"});
  const std::string started = process_start_time(child.pid());
  ASSERT_FALSE(started.empty());
  EXPECT_FALSE(terminate_recorded_process(child.pid(), started + "9"));  // not the recorded one
  EXPECT_TRUE(child.running());
  EXPECT_TRUE(terminate_recorded_process(child.pid(), started));
  EXPECT_TRUE(child.wait_exit(5000));
  EXPECT_EQ(child.exit_description(), "killed by signal 15");
}

TEST(ReadinessPipe, ReportsReadyOrTheChildsEarlyExit) {
  {
    ReadinessPipe pipe;
    ChildProcess::SpawnOptions options;
    options.inherit_fd = pipe.child_end();
    ChildProcess child =
        ChildProcess::spawn({"/bin/sh", "-c", "echo ready >&3; exec sleep 30"}, options);
    pipe.close_child_end();
    EXPECT_EQ(pipe.wait(10'000'000'000), ReadinessPipe::Outcome::kReady);
  }
  {
    ReadinessPipe pipe;
    ChildProcess::SpawnOptions options;
    options.inherit_fd = pipe.child_end();
    ChildProcess child = ChildProcess::spawn({"/bin/sh", "-c", "exit 3"}, options);
    pipe.close_child_end();
    EXPECT_EQ(pipe.wait(10'000'000'000), ReadinessPipe::Outcome::kClosed);
  }
  {
    ReadinessPipe pipe;  // nobody writes, the write end stays open here: a timeout
    EXPECT_EQ(pipe.wait(20'000'000), ReadinessPipe::Outcome::kTimeout);
  }
}

TEST(PeriodicHook, PublishesAfterChangesAtMostOncePerInterval) {
  int published = 0;
  PeriodicHook hook([&] { ++published; }, 1000);
  EXPECT_EQ(hook.poll(0), -1);  // the initial snapshot
  EXPECT_EQ(published, 1);
  EXPECT_EQ(hook.poll(10), -1);  // nothing changed: nothing to do, sleep freely
  EXPECT_EQ(published, 1);
  hook.note_activity();
  EXPECT_EQ(hook.poll(400), 600);  // changed, but due only at 1000
  EXPECT_EQ(published, 1);
  EXPECT_EQ(hook.poll(1000), -1);
  EXPECT_EQ(published, 2);
  EXPECT_EQ(PeriodicHook::shorter(-1, 5), 5);
  EXPECT_EQ(PeriodicHook::shorter(7, -1), 7);
  EXPECT_EQ(PeriodicHook::shorter(7, 5), 5);
  EXPECT_FALSE(PeriodicHook().enabled());
}

TEST(ForwardingProbe, FramesHaveTheExactSizeAndDecode) {
  TopologyConfig topology = load_topology("", 2);
  for (std::size_t size : {64u, 1500u}) {
    const std::vector<std::byte> frame = probe_frame(topology, size);
    ASSERT_EQ(frame.size(), size);
    wire::FrameView view;
    EXPECT_EQ(wire::decode_frame(frame, view), wire::DecodeError::kOk) << size;
    EXPECT_EQ(view.src_gpu, 0);
    EXPECT_EQ(view.dst_gpu, 1);
  }
  EXPECT_THROW(probe_frame(topology, 40), std::invalid_argument);
  EXPECT_THROW(probe_frame(topology, topology.frame_bytes_max + 1), std::invalid_argument);
}

// An in-memory FrameSocket: what was sent, and frames waiting to be received.
class MemorySocket final : public FrameSocket {
 public:
  explicit MemorySocket(std::size_t tx_room = 1000) : tx_room_(tx_room) {}
  const char* transport() const override { return "memory"; }
  const std::string& interface_name() const override { return name_; }
  std::size_t max_frame_bytes() const override { return 2048; }
  int fd() const override { return -1; }
  SendResult try_send(std::span<const std::byte> frame) override {
    if (sent.size() >= tx_room_) return SendResult::kFull;
    sent.emplace_back(frame.begin(), frame.end());
    return SendResult::kQueued;
  }
  bool can_send() override { return sent.size() < tx_room_; }
  void flush() override { ++flushes; }
  std::size_t receive(std::size_t max, FrameSink& sink) override {
    std::size_t count = 0;
    while (count < max && !inbox.empty()) {
      sink.on_frame(inbox.front());
      inbox.pop_front();
      ++count;
    }
    return count;
  }
  bool has_input() override { return !inbox.empty(); }

  std::deque<std::vector<std::byte>> inbox;
  std::vector<std::vector<std::byte>> sent;
  int flushes = 0;

 private:
  std::string name_ = "memory";
  std::size_t tx_room_;
};

std::vector<std::byte> frame_to(const MacAddr& destination) {
  std::vector<std::byte> frame(64, std::byte{0x5a});
  std::memcpy(frame.data(), destination.octets.data(), 6);
  return frame;
}

TEST(BareForwarder, ForwardsByDestinationMacAndCountsWhatItCannot) {
  TopologyConfig topology = load_topology("", 3);
  MemorySocket port0, port1, port2(0);  // port 2 has no room to send
  BareForwarder forwarder(topology, {&port0, &port1, &port2});
  port0.inbox.push_back(frame_to(topology.gpus[1].mac));
  port0.inbox.push_back(frame_to(topology.gpus[2].mac));
  port1.inbox.push_back(frame_to(MacAddr{{0x02, 0, 0, 0, 0, 0x99}}));
  port1.inbox.push_back(frame_to(topology.gpus[0].mac));
  EXPECT_TRUE(forwarder.step());
  EXPECT_FALSE(forwarder.step());
  ASSERT_EQ(port1.sent.size(), 1u);
  EXPECT_EQ(port1.sent[0], frame_to(topology.gpus[1].mac));
  ASSERT_EQ(port0.sent.size(), 1u);
  EXPECT_EQ(forwarder.counters().forwarded, 2u);
  EXPECT_EQ(forwarder.counters().unknown_destination, 1u);
  EXPECT_EQ(forwarder.counters().egress_full, 1u);
  EXPECT_GE(port1.flushes, 1);
  EXPECT_THROW(BareForwarder(topology, {&port0, &port1}), std::invalid_argument);
}

}  // namespace
}  // namespace ethx
