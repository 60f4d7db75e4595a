// The one process watcher of the coordinators (fabric/platform/process_watcher.hpp): real
// processes, real pidfds.
#include "fabric/platform/process_watcher.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "fabric/platform/child_process.hpp"
#include "fabric/platform/process_identity.hpp"

namespace ethx {
namespace {

constexpr auto kNoticeWithin = std::chrono::seconds(5);

// A watcher whose first report fulfils a future instead of stopping the test program.
struct RecordingWatcher {
  std::promise<ProcessExit> reported;
  std::future<ProcessExit> exit = reported.get_future();
  ProcessWatcher watcher{[this](const ProcessExit& seen) {
    reported.set_value(seen);
    return true;
  }};

  ProcessExit wait() {
    if (exit.wait_for(kNoticeWithin) != std::future_status::ready) {
      ADD_FAILURE() << "no exit reported within 5 s";
      return {};
    }
    return exit.get();
  }
};

TEST(ProcessWatcher, NamesAChildKilledBySigkill) {
  ChildProcess child = ChildProcess::spawn({"/bin/sleep", "60"});
  RecordingWatcher recording;
  recording.watcher.watch({"node-3", child.pid(), "", ""});
  ::kill(child.pid(), SIGKILL);
  const ProcessExit exit = recording.wait();
  EXPECT_EQ(exit.line(),
            "node-3 (pid " + std::to_string(child.pid()) + ") exited: killed by SIGKILL");
  ASSERT_TRUE(recording.watcher.first_exit().has_value());
  EXPECT_EQ(recording.watcher.first_exit()->pid, child.pid());
}

TEST(ProcessWatcher, LeavesTheExitStatusToTheChildsOwner) {
  ChildProcess child = ChildProcess::spawn({"/bin/sleep", "60"});
  RecordingWatcher recording;
  recording.watcher.watch({"switch", child.pid(), "", "its log: /tmp/x.log"});
  ::kill(child.pid(), SIGKILL);
  const ProcessExit exit = recording.wait();
  EXPECT_EQ(exit.how, "killed by SIGKILL");
  EXPECT_NE(exit.line().find("; its log: /tmp/x.log"), std::string::npos) << exit.line();
  // The watcher did not reap it: ChildProcess still learns how it ended.
  ASSERT_TRUE(child.wait_exit(5000));
  EXPECT_EQ(child.exit_description(), "killed by signal 9");
}

TEST(ProcessWatcher, ReportsAnExitStatus) {
  ChildProcess child = ChildProcess::spawn({"/bin/sh", "-c", "exit 3"});
  RecordingWatcher recording;
  recording.watcher.watch({"vm-1", child.pid(), "", ""});
  EXPECT_EQ(recording.wait().line(),
            "vm-1 (pid " + std::to_string(child.pid()) + ") exited: exit status 3");
  ASSERT_TRUE(child.wait_exit(5000));
  EXPECT_EQ(child.exit_description(), "exit status 3");
}

TEST(ProcessWatcher, WatchesAProcessThatIsNotItsChild) {
  // sh starts a sleep in the background and exits: the sleep is an orphan, not our child
  // (as the processes `ethx up` leaves running are to `ethx bench --fabric`).
  const std::string pid_file =
      std::filesystem::temp_directory_path() / ("ethx-watcher-test-" + std::to_string(::getpid()));
  ChildProcess starter = ChildProcess::spawn({"/bin/sh", "-c", "sleep 60 & echo $! > " + pid_file});
  ASSERT_TRUE(starter.wait_exit(5000));
  pid_t orphan = -1;
  std::ifstream(pid_file) >> orphan;
  std::filesystem::remove(pid_file);
  ASSERT_GT(orphan, 0);
  const std::string start_time = process_start_time(orphan);
  ASSERT_FALSE(start_time.empty());
  RecordingWatcher recording;
  recording.watcher.watch({"node-5", orphan, start_time, ""});
  ::kill(orphan, SIGKILL);
  const ProcessExit exit = recording.wait();
  EXPECT_EQ(exit.pid, orphan);
  EXPECT_EQ(exit.how, "");
  EXPECT_EQ(exit.line(), "node-5 (pid " + std::to_string(orphan) +
                             ") exited (not a child of this command: how it ended is unknown)");
}

TEST(ProcessWatcher, AReusedPidIsReportedAsTheRecordedProcessGone) {
  ChildProcess child = ChildProcess::spawn({"/bin/sleep", "60"});
  RecordingWatcher recording;
  // The same PID with another start time: a different process now has it.
  recording.watcher.watch({"switch", child.pid(), "1", ""});
  ASSERT_EQ(recording.exit.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "watch() must report a record that no longer matches at once";
  EXPECT_EQ(recording.exit.get().name, "switch");
  EXPECT_TRUE(child.running()) << "the process that has the PID now is left alone";
}

TEST(ProcessWatcher, ProcessesEndedOnPurposeAreNotReported) {
  ChildProcess ended_on_purpose = ChildProcess::spawn({"/bin/sleep", "60"});
  ChildProcess later = ChildProcess::spawn({"/bin/sleep", "60"});
  RecordingWatcher recording;
  recording.watcher.watch({"node-0", ended_on_purpose.pid(), "", ""});
  recording.watcher.stop_watching();
  ended_on_purpose.terminate(1000);
  // A process watched afterwards is the first (and only) one reported.
  recording.watcher.watch({"node-1", later.pid(), "", ""});
  ::kill(later.pid(), SIGKILL);
  EXPECT_EQ(recording.wait().name, "node-1");
}

TEST(ProcessWatcher, AnExitTheHandlerForgivesLeavesTheOthersWatched) {
  ChildProcess replaced = ChildProcess::spawn({"/bin/sleep", "60"});
  ChildProcess node = ChildProcess::spawn({"/bin/sleep", "60"});
  std::promise<void> forgiven;
  std::promise<ProcessExit> stopping;
  ProcessWatcher watcher([&](const ProcessExit& exit) {
    if (exit.name == "switch") {
      forgiven.set_value();
      return false;  // e.g. `ethx restart-switch` replaces it
    }
    stopping.set_value(exit);
    return true;
  });
  watcher.watch({"switch", replaced.pid(), "", ""});
  watcher.watch({"node-0", node.pid(), "", ""});
  ::kill(replaced.pid(), SIGKILL);
  ASSERT_EQ(forgiven.get_future().wait_for(kNoticeWithin), std::future_status::ready);
  EXPECT_FALSE(watcher.first_exit().has_value());
  ::kill(node.pid(), SIGKILL);
  auto stopped = stopping.get_future();
  ASSERT_EQ(stopped.wait_for(kNoticeWithin), std::future_status::ready);
  EXPECT_EQ(stopped.get().name, "node-0");
  EXPECT_EQ(watcher.first_exit()->name, "node-0");
}

TEST(ProcessWatcher, DescribesHowAChildEnded) {
  EXPECT_EQ(describe_child_exit(CLD_EXITED, 0), "exit status 0");
  EXPECT_EQ(describe_child_exit(CLD_KILLED, SIGTERM), "killed by SIGTERM");
  EXPECT_EQ(describe_child_exit(CLD_DUMPED, SIGSEGV), "killed by SIGSEGV (core dumped)");
}

}  // namespace
}  // namespace ethx
