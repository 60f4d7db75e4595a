// The guest tools' library against a fake sysfs tree: a regular file stands in for a BAR
// (mmap of a file behaves like the resource file, without a VM).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "qemu-device/guest-tools/ethx_gpu.hpp"
#include "qemu-device/guest-tools/guest_cli.hpp"
#include "qemu-device/guest-tools/guest_commands.hpp"

namespace ethx::guest {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
}

// A PCI function directory as sysfs shows it; `bar` is resource0's contents.
void add_function(const fs::path& devices, const std::string& bdf, const std::string& vendor,
                  const std::string& device, const std::vector<std::uint8_t>& bar) {
  const fs::path dir = devices / bdf;
  fs::create_directories(dir);
  write_text(dir / "vendor", vendor + "\n");
  write_text(dir / "device", device + "\n");
  std::vector<char> config(64, 0);
  config[4] = 0x02;  // memory space decoding already enabled, as the firmware leaves it
  std::ofstream(dir / "config", std::ios::binary).write(config.data(), 64);
  std::ofstream(dir / "resource0", std::ios::binary)
      .write(reinterpret_cast<const char*>(bar.data()), static_cast<std::streamsize>(bar.size()));
}

std::vector<std::uint8_t> control_bar(std::uint32_t gpu_id) {
  std::vector<std::uint8_t> bar(4096, 0);
  const std::uint32_t words[] = {kIdentValue, 1, gpu_id};
  std::memcpy(bar.data(), words, sizeof words);  // a file, not MMIO
  return bar;
}

class GuestToolsTest : public testing::Test {
 protected:
  void SetUp() override {
    devices_ = fs::temp_directory_path() / ("ethx-guest-test-" + std::to_string(::getpid()));
    fs::remove_all(devices_);
    add_function(devices_, "0000:00:05.0", "0x1234", "0xe7e0", control_bar(5));
    add_function(devices_, "0000:00:03.0", "0x1234", "0xe7e0", control_bar(3));
    add_function(devices_, "0000:00:04.0", "0x8086", "0x100e", std::vector<std::uint8_t>(64));
  }
  void TearDown() override { fs::remove_all(devices_); }

  fs::path devices_;
};

TEST_F(GuestToolsTest, FindsOnlyEthxGpusInBdfOrder) {
  auto gpus = find_ethx_gpus(devices_);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].bdf(), "0000:00:03.0");
  EXPECT_EQ(gpus[0].read(kGpuId), 3u);
  EXPECT_EQ(gpus[1].read(kIdent), kIdentValue);
}

TEST_F(GuestToolsTest, MissingSysfsIsAClearError) {
  EXPECT_THROW(find_ethx_gpus(devices_ / "absent"), std::runtime_error);
}

TEST_F(GuestToolsTest, BarAccessesHaveTheirWidthAndStayInside) {
  auto gpus = find_ethx_gpus(devices_);
  const MmioBar& bar = gpus[0].bar(0);
  EXPECT_EQ(bar.size(), 4096u);
  bar.write(0x20, 8, 0x1122334455667788);
  EXPECT_EQ(bar.read(0x20, 8), 0x1122334455667788u);
  EXPECT_EQ(bar.read(0x20, 4), 0x55667788u);  // little-endian, like the guest
  EXPECT_EQ(bar.read(0x27, 1), 0x11u);
  EXPECT_EQ(bar.read(0x22, 2), 0x5566u);
  EXPECT_THROW(bar.read(0x21, 4), std::invalid_argument);  // misaligned
  EXPECT_THROW(bar.read(4096, 4), std::invalid_argument);  // outside
  EXPECT_THROW(bar.read(0x20, 3), std::invalid_argument);  // no such width
  EXPECT_THROW(gpus[0].bar(2), std::runtime_error);        // no such BAR
}

TEST(GuestCliTest, ParsesAccessesAndRejectsBadOnes) {
  const auto poke = parse_command_line(
      {"poke", "--gpu", "3", "--bar", "0", "--offset", "0x20", "--width", "8", "--value", "42"});
  EXPECT_EQ(poke.gpu_id, 3u);
  EXPECT_EQ(poke.offset, 0x20u);
  EXPECT_EQ(poke.width, 8u);
  EXPECT_EQ(poke.value, 42u);
  EXPECT_THROW(parse_command_line({"peek", "--offset", "0", "--width", "3"}), UsageError);
  EXPECT_THROW(parse_command_line({"peek"}), UsageError);
  EXPECT_THROW(parse_command_line({"poke", "--offset", "0"}), UsageError);
  EXPECT_THROW(parse_command_line({"poke", "--offset", "0", "--width", "1", "--value", "256"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"frobnicate"}), UsageError);
  EXPECT_THROW(parse_command_line({"peek", "--offset", "-1"}), UsageError);
}

TEST_F(GuestToolsTest, CommandsPrintJsonAndNameMissingGpus) {
  const auto list = run_command(parse_command_line({"list"}), devices_);
  ASSERT_EQ(list.at("gpus").size(), 2u);
  EXPECT_EQ(list["gpus"][1]["gpu_id"], 5);
  EXPECT_EQ(list["gpus"][1]["ident_ok"], true);

  run_command(parse_command_line(
                  {"poke", "--gpu", "5", "--offset", "0x20", "--width", "8", "--value", "0xabc"}),
              devices_);
  const auto status = run_command(parse_command_line({"status", "--gpu", "5"}), devices_);
  EXPECT_EQ(status["gpus"][0]["registers"]["scratch"], 0xabc);

  EXPECT_THROW(run_command(parse_command_line({"peek", "--offset", "0"}), devices_),
               CommandError);  // two GPUs: which one?
  EXPECT_THROW(run_command(parse_command_line({"status", "--gpu", "7"}), devices_), CommandError);
}

}  // namespace
}  // namespace ethx::guest
