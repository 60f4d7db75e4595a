// libethx-gpu (<ethx/gpu.h>, qemu-device/sdk/) against a fake sysfs tree in a temporary
// directory: PCI functions with vendor/device files and BARs as regular files (resource0 the
// registers, resource2 the memory, resource4 the window), so a register read returns whatever
// the test wrote at its offset and a store lands in the file. Enumeration, opening by index and
// by fabric id, every refusal and its message, the register sequences of atomics, copies and
// FLUSH, all-ones loads told apart by ERROR, and the lock between processes and handles.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "ethx/gpu.h"

namespace ethx {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 1 << 20;

struct FakeGpu {
  std::uint32_t gpu_id = 0;
  std::uint32_t version = ETHX_REGISTER_MAP_VERSION;
  std::uint32_t status = ETHX_STATUS_FABRIC_UP;
  std::uint32_t gpu_count = 4;
  std::uint32_t aperture_mib = 1;
  std::uint32_t hbm_mib = 1;
  std::uint32_t ident = ETHX_IDENT;
  bool memory_enabled = true;  // the config space's command register decodes memory
  bool window = true;          // resource4 exists
};

struct DevCloser {
  void operator()(ethx_dev* dev) const { ethx_dev_close(dev); }
};
using Dev = std::unique_ptr<ethx_dev, DevCloser>;

class SdkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ethx-sdk-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "devices");
    fs::create_directories(root_ / "lock");
    ::setenv("ETHX_SYSFS_PCI_DEVICES", (root_ / "devices").c_str(), 1);
    ::setenv("ETHX_DEV_LOCK_DIR", (root_ / "lock").c_str(), 1);
    ::unsetenv("ETHX_DEV_LOCK_TIMEOUT_MS");
  }
  void TearDown() override {
    ::unsetenv("ETHX_SYSFS_PCI_DEVICES");
    ::unsetenv("ETHX_DEV_LOCK_DIR");
    ::unsetenv("ETHX_DEV_LOCK_TIMEOUT_MS");
    fs::remove_all(root_);
  }

  fs::path dir(const std::string& bdf) const { return root_ / "devices" / bdf; }

  void add_function(const std::string& bdf, unsigned vendor, unsigned device) {
    fs::create_directories(dir(bdf));
    char text[16];
    std::snprintf(text, sizeof text, "0x%04x\n", vendor);
    std::ofstream(dir(bdf) / "vendor") << text;
    std::snprintf(text, sizeof text, "0x%04x\n", device);
    std::ofstream(dir(bdf) / "device") << text;
  }

  void make_file(const fs::path& path, std::uint64_t bytes) {
    std::ofstream(path).close();
    fs::resize_file(path, bytes);  // sparse
  }

  void add_gpu(const std::string& bdf, const FakeGpu& gpu) {
    add_function(bdf, ETHX_GPU_VENDOR_ID, ETHX_GPU_DEVICE_ID);
    std::string config(64, '\0');
    config[4] = gpu.memory_enabled ? 0x02 : 0x00;
    std::ofstream(dir(bdf) / "config", std::ios::binary) << config;
    make_file(dir(bdf) / "resource0", ETHX_GPU_CTRL_BAR_BYTES);
    make_file(dir(bdf) / "resource2", gpu.hbm_mib * kMiB);
    if (gpu.window) make_file(dir(bdf) / "resource4", gpu.gpu_count * gpu.aperture_mib * kMiB);
    write_reg(bdf, ETHX_REG_IDENT, 4, gpu.ident);
    write_reg(bdf, ETHX_REG_VERSION, 4, gpu.version);
    write_reg(bdf, ETHX_REG_GPU_ID, 4, gpu.gpu_id);
    write_reg(bdf, ETHX_REG_STATUS, 4, gpu.status);
    write_reg(bdf, ETHX_REG_GPU_COUNT, 4, gpu.gpu_count);
    write_reg(bdf, ETHX_REG_APERTURE_MIB, 4, gpu.aperture_mib);
    write_reg(bdf, ETHX_REG_HBM_MIB, 4, gpu.hbm_mib);
  }

  void write_file(const fs::path& path, std::uint64_t offset, unsigned width, std::uint64_t value) {
    const int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::pwrite(fd, &value, width, static_cast<off_t>(offset)), static_cast<ssize_t>(width));
    ::close(fd);
  }
  std::uint64_t read_file(const fs::path& path, std::uint64_t offset, unsigned width) {
    std::uint64_t value = 0;
    const int fd = ::open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << path;
    EXPECT_EQ(::pread(fd, &value, width, static_cast<off_t>(offset)), static_cast<ssize_t>(width));
    ::close(fd);
    return value;
  }
  void write_reg(const std::string& bdf, unsigned offset, unsigned width, std::uint64_t value) {
    write_file(dir(bdf) / "resource0", offset, width, value);
  }
  std::uint64_t read_reg(const std::string& bdf, unsigned offset, unsigned width) {
    return read_file(dir(bdf) / "resource0", offset, width);
  }

  // Opens GPU `index`; on failure the test fails with the library's reason.
  Dev open(int index) {
    char error[256] = "";
    Dev dev(ethx_dev_open(index, error, sizeof error));
    EXPECT_NE(dev, nullptr) << error;
    return dev;
  }
  // The reason ethx_dev_open(index) gives for failing ("" if it opened).
  std::string open_error(int index) {
    char error[256] = "";
    Dev dev(ethx_dev_open(index, error, sizeof error));
    return dev ? std::string() : error;
  }

  static bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }

  fs::path root_;
};

const std::string kGpu0 = "0000:00:02.0";
const std::string kGpu1 = "0000:00:03.0";

TEST_F(SdkTest, EnumeratesOnlyEthxFunctionsInBdfOrderAndReadsTheirGeometry) {
  add_function("0000:00:01.0", 0x8086, 0x100e);              // a NIC
  add_function("0000:00:05.0", ETHX_GPU_VENDOR_ID, 0x11e8);  // edu, same vendor
  add_gpu(kGpu1, FakeGpu{.gpu_id = 5});
  add_gpu(kGpu0, FakeGpu{.gpu_id = 4, .hbm_mib = 2});
  ASSERT_EQ(ethx_dev_count(), 2);

  Dev first = open(0);
  ASSERT_NE(first, nullptr);
  ethx_dev_info info{};
  ASSERT_EQ(ethx_dev_get_info(first.get(), &info), ETHX_GPU_OK);
  EXPECT_STREQ(info.bdf, kGpu0.c_str());
  EXPECT_EQ(info.gpu_id, 4u);
  EXPECT_EQ(info.gpu_count, 4u);
  EXPECT_EQ(info.register_map_version, ETHX_REGISTER_MAP_VERSION);
  EXPECT_EQ(info.status, ETHX_STATUS_FABRIC_UP);
  EXPECT_EQ(info.aperture_bytes, kMiB);
  EXPECT_EQ(info.hbm_bytes, 2 * kMiB);
  EXPECT_EQ(info.window_bytes, 4 * kMiB);
  EXPECT_EQ(ethx_dev_window_addr(first.get(), 3, 0x10), 3 * kMiB + 0x10);

  // STATUS is read again for every ethx_dev_get_info.
  write_reg(kGpu0, ETHX_REG_STATUS, 4, ETHX_STATUS_FABRIC_UP | ETHX_STATUS_ERROR);
  ASSERT_EQ(ethx_dev_get_info(first.get(), &info), ETHX_GPU_OK);
  EXPECT_EQ(info.status, ETHX_STATUS_FABRIC_UP | ETHX_STATUS_ERROR);

  Dev second = open(1);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(ethx_dev_get_info(second.get(), &info), ETHX_GPU_OK);
  EXPECT_STREQ(info.bdf, kGpu1.c_str());
  EXPECT_EQ(info.gpu_id, 5u);
}

TEST_F(SdkTest, OpensByFabricGpuIdAndNamesTheGpusThereWhenTheIdIsAbsent) {
  add_gpu(kGpu0, FakeGpu{.gpu_id = 6});
  add_gpu(kGpu1, FakeGpu{.gpu_id = 2});
  char error[256] = "";
  Dev dev(ethx_dev_open_gpu(2, error, sizeof error));
  ASSERT_NE(dev, nullptr) << error;
  ethx_dev_info info{};
  ethx_dev_get_info(dev.get(), &info);
  EXPECT_STREQ(info.bdf, kGpu1.c_str());

  Dev absent(ethx_dev_open_gpu(7, error, sizeof error));
  EXPECT_EQ(absent, nullptr);
  EXPECT_TRUE(contains(error, "no GPU with fabric id 7")) << error;
  EXPECT_TRUE(contains(error, kGpu0 + " = 6")) << error;
  EXPECT_TRUE(contains(error, kGpu1 + " = 2")) << error;
}

TEST_F(SdkTest, NoGpusBadIndexesAndAMissingSysfsAreClearErrors) {
  EXPECT_EQ(ethx_dev_count(), 0);
  EXPECT_TRUE(contains(open_error(0), "no ethx GPU in this VM")) << open_error(0);
  char error[256] = "";
  EXPECT_EQ(ethx_dev_open_gpu(0, error, sizeof error), nullptr);
  EXPECT_TRUE(contains(error, "no GPU with fabric id 0")) << error;

  add_gpu(kGpu0, FakeGpu{});
  add_gpu(kGpu1, FakeGpu{.gpu_id = 1});
  EXPECT_EQ(open_error(2), "GPU index 2: this VM has 2 ethx GPUs (0-1)");
  EXPECT_EQ(open_error(-1), "GPU index -1: this VM has 2 ethx GPUs (0-1)");

  ::setenv("ETHX_SYSFS_PCI_DEVICES", (root_ / "absent").c_str(), 1);
  EXPECT_EQ(ethx_dev_count(), ETHX_DEV_ESYS);
  EXPECT_TRUE(contains(open_error(0), "cannot list " + (root_ / "absent").string()))
      << open_error(0);
}

TEST_F(SdkTest, OpenRefusesAForeignIdentAnOldMapAGpuOutsideAFabricAndAMissingWindow) {
  add_gpu(kGpu0, FakeGpu{.ident = 0x12345678});
  EXPECT_TRUE(contains(open_error(0), "IDENT reads 0x12345678")) << open_error(0);

  add_gpu(kGpu0, FakeGpu{.version = 1});
  EXPECT_TRUE(contains(open_error(0), "register map version 1")) << open_error(0);

  add_gpu(kGpu0, FakeGpu{.status = 0});
  EXPECT_TRUE(contains(open_error(0), "has not joined a fabric")) << open_error(0);

  fs::remove_all(dir(kGpu0));
  add_gpu(kGpu0, FakeGpu{.window = false});
  EXPECT_TRUE(contains(open_error(0), "resource4")) << open_error(0);
}

TEST_F(SdkTest, MemoryDecodingIsEnabledThroughSysfsOnlyWhenTheCommandRegisterLacksIt) {
  add_gpu(kGpu0, FakeGpu{});
  add_gpu(kGpu1, FakeGpu{.gpu_id = 1, .memory_enabled = false});
  Dev enabled = open(0);
  EXPECT_FALSE(fs::exists(dir(kGpu0) / "enable"));
  Dev disabled = open(1);
  std::string written;
  std::ifstream(dir(kGpu1) / "enable") >> written;
  EXPECT_EQ(written, "1");
}

TEST_F(SdkTest, LoadsAndStoresOfEachWidthAreSingleAccessesAtTheirWindowAddress) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  const fs::path window = dir(kGpu0) / "resource4";
  write_file(window, 0x100010, 8, 0x0123456789abcdefull);
  const std::uint64_t at = ethx_dev_window_addr(dev.get(), 1, 0x10);
  std::uint8_t v8 = 0;
  std::uint16_t v16 = 0;
  std::uint32_t v32 = 0;
  std::uint64_t v64 = 0;
  EXPECT_EQ(ethx_dev_load8(dev.get(), at + 1, &v8), ETHX_GPU_OK);
  EXPECT_EQ(v8, 0xcd);
  EXPECT_EQ(ethx_dev_load16(dev.get(), at + 2, &v16), ETHX_GPU_OK);
  EXPECT_EQ(v16, 0x89ab);
  EXPECT_EQ(ethx_dev_load32(dev.get(), at + 4, &v32), ETHX_GPU_OK);
  EXPECT_EQ(v32, 0x01234567u);
  EXPECT_EQ(ethx_dev_load64(dev.get(), at, &v64), ETHX_GPU_OK);
  EXPECT_EQ(v64, 0x0123456789abcdefull);

  EXPECT_EQ(ethx_dev_store8(dev.get(), at + 0x20, 0x5a), ETHX_GPU_OK);
  EXPECT_EQ(ethx_dev_store16(dev.get(), at + 0x22, 0xbeef), ETHX_GPU_OK);
  EXPECT_EQ(ethx_dev_store32(dev.get(), at + 0x24, 0xcafef00d), ETHX_GPU_OK);
  EXPECT_EQ(ethx_dev_store64(dev.get(), at + 0x28, 0x1122334455667788ull), ETHX_GPU_OK);
  EXPECT_EQ(read_file(window, 0x100030, 1), 0x5au);
  EXPECT_EQ(read_file(window, 0x100032, 2), 0xbeefu);
  EXPECT_EQ(read_file(window, 0x100034, 4), 0xcafef00du);
  EXPECT_EQ(read_file(window, 0x100038, 8), 0x1122334455667788ull);

  uint64_t window_bytes = 0;
  EXPECT_NE(ethx_dev_window(dev.get(), &window_bytes), nullptr);
  EXPECT_EQ(window_bytes, 4 * kMiB);
}

TEST_F(SdkTest, AnAllOnesLoadIsAFailureOnlyWhenErrorSaysSoAndTheErrorStaysLatched) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  write_file(dir(kGpu0) / "resource4", 0x200, 8, ~std::uint64_t{0});
  std::uint64_t value = 0;
  EXPECT_EQ(ethx_dev_load64(dev.get(), 0x200, &value), ETHX_GPU_OK);  // a real all-ones word
  EXPECT_EQ(value, ~std::uint64_t{0});
  write_reg(kGpu0, ETHX_REG_ERROR, 4, ETHX_ERROR_COPY_BUSY);  // not about loads
  EXPECT_EQ(ethx_dev_load64(dev.get(), 0x200, &value), ETHX_GPU_OK);

  write_reg(kGpu0, ETHX_REG_ERROR, 4, ETHX_ERROR_TIMEOUT | ETHX_ERROR_UNREACHABLE);
  write_reg(kGpu0, ETHX_REG_FAULT_ADDR, 8, 0x200);
  std::uint32_t word = 0;
  EXPECT_EQ(ethx_dev_load32(dev.get(), 0x204, &word), ETHX_GPU_TIMEOUT);  // the lowest bit
  EXPECT_EQ(word, 0xffffffffu);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "timeout"))
      << ethx_dev_last_error(dev.get());
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ERROR, 4), ETHX_ERROR_TIMEOUT | ETHX_ERROR_UNREACHABLE);

  ethx_dev_fault fault{};
  EXPECT_EQ(ethx_dev_take_error(dev.get(), &fault), ETHX_GPU_TIMEOUT);
  EXPECT_EQ(fault.error_bits, ETHX_ERROR_TIMEOUT | ETHX_ERROR_UNREACHABLE);
  EXPECT_EQ(fault.fault_addr, 0x200u);
  write_reg(kGpu0, ETHX_REG_ERROR, 4, ETHX_ERROR_NO_FABRIC);
  EXPECT_EQ(ethx_dev_take_error(dev.get(), nullptr), ETHX_GPU_UNREACHABLE);
  write_reg(kGpu0, ETHX_REG_ERROR, 4, 0);
  EXPECT_EQ(ethx_dev_take_error(dev.get(), &fault), ETHX_GPU_OK);
  EXPECT_EQ(fault.error_bits, 0u);
}

TEST_F(SdkTest, BadWidthsAlignmentsAndRangesAreInvalidArgumentsThatTouchNothing) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  std::uint32_t v32 = 0;
  std::uint64_t v64 = 0;
  EXPECT_EQ(ethx_dev_load32(dev.get(), 2, &v32), ETHX_DEV_EINVAL);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "not aligned"));
  EXPECT_EQ(ethx_dev_load64(dev.get(), 4 * kMiB, &v64), ETHX_DEV_EINVAL);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "outside the window"));
  EXPECT_EQ(ethx_dev_store16(dev.get(), 1, 7), ETHX_DEV_EINVAL);
  EXPECT_EQ(ethx_dev_load64(dev.get(), 0, nullptr), ETHX_DEV_EINVAL);

  EXPECT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_FETCH_ADD, 0, 2, 1, 0, &v64), ETHX_DEV_EINVAL);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "4 or 8 bytes"));
  EXPECT_EQ(v64, ~std::uint64_t{0});
  EXPECT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_SWAP, 4, 8, 1, 0, &v64), ETHX_DEV_EINVAL);
  EXPECT_EQ(ethx_dev_atomic(dev.get(), 3, 0, 8, 1, 0, &v64), ETHX_DEV_EINVAL);
  EXPECT_EQ(ethx_dev_copy(dev.get(), 4 * kMiB - 8, 0, 16, 0), ETHX_DEV_EINVAL);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_CMD, 4), 0u);  // no command was issued
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_COPY_CMD, 4), 0u);

  EXPECT_EQ(ethx_dev_read_reg(dev.get(), 0x2, 4), ~std::uint64_t{0});
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "0x2 of 4 bytes"));
  EXPECT_EQ(ethx_dev_read_reg(dev.get(), ETHX_REG_GPU_ID, 2), ~std::uint64_t{0});
  EXPECT_EQ(ethx_dev_read_reg(dev.get(), ETHX_GPU_CTRL_BAR_BYTES, 4), ~std::uint64_t{0});
  EXPECT_EQ(ethx_dev_read_reg(dev.get(), ETHX_REG_IDENT, 4), ETHX_IDENT);
  ethx_dev_write_reg(dev.get(), ETHX_REG_SCRATCH, 8, 0xfeedull);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_SCRATCH, 8), 0xfeedull);
}

TEST_F(SdkTest, AnAtomicWritesItsCommandAndReadsResultAndStatus) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  const std::uint64_t at = ethx_dev_window_addr(dev.get(), 2, 0x40);
  write_reg(kGpu0, ETHX_REG_ATOMIC_RESULT, 8, 41);
  std::uint64_t old = 0;
  ASSERT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_COMPARE_SWAP, at, 8, 7, 41, &old), ETHX_GPU_OK)
      << ethx_dev_last_error(dev.get());
  EXPECT_EQ(old, 41u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_ADDR, 8), at);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_OPERAND, 8), 7u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_COMPARE, 8), 41u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_CMD, 4), ETHX_ATOMIC_CMD(ETHX_GPU_COMPARE_SWAP, 8u));

  write_reg(kGpu0, ETHX_REG_ATOMIC_STATUS, 4, ETHX_GPU_TIMEOUT);
  EXPECT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_FETCH_ADD, at + 8, 4, 1, 0, &old),
            ETHX_GPU_TIMEOUT);
  EXPECT_EQ(old, ~std::uint64_t{0});
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_CMD, 4), ETHX_ATOMIC_CMD(ETHX_GPU_FETCH_ADD, 4u));
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "failed: timeout"));
}

TEST_F(SdkTest, ACopyStartsThroughItsRegistersAndReportsHowItEnded) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4, ETHX_COPY_DONE);
  ASSERT_EQ(ethx_dev_copy(dev.get(), 0x1000, 0x300000, 4096, 0), ETHX_GPU_OK)
      << ethx_dev_last_error(dev.get());
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_COPY_SRC, 8), 0x1000u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_COPY_DST, 8), 0x300000u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_COPY_LEN, 8), 4096u);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_COPY_CMD, 4), ETHX_COPY_CMD_START);  // polled, no IRQ

  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4,
            ETHX_COPY_FAILED | (ETHX_GPU_REMOTE_ERROR << ETHX_COPY_STATUS_CODE_SHIFT));
  EXPECT_EQ(ethx_dev_copy(dev.get(), 0, 8, 8, 0), ETHX_GPU_REMOTE_ERROR);
  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4, ETHX_COPY_BUSY);
  EXPECT_EQ(ethx_dev_copy(dev.get(), 0, 8, 8, 0), ETHX_DEV_EBUSY);
  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4, ETHX_COPY_IDLE);  // the device refused the start
  EXPECT_EQ(ethx_dev_copy(dev.get(), 0, 8, 8, 0), ETHX_DEV_EBUSY);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "refused the start"));

  // Started and polled by hand: only under the lock.
  EXPECT_EQ(ethx_dev_copy_start(dev.get(), 0, 8, 8), ETHX_DEV_EINVAL);
  ASSERT_EQ(ethx_dev_lock(dev.get(), 0), ETHX_GPU_OK);
  ASSERT_EQ(ethx_dev_copy_start(dev.get(), 0, 16, 8), ETHX_GPU_OK);
  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4, ETHX_COPY_BUSY);
  int status = -100;
  EXPECT_EQ(ethx_dev_copy_poll(dev.get(), &status), 1);
  write_reg(kGpu0, ETHX_REG_COPY_STATUS, 4, ETHX_COPY_DONE);
  EXPECT_EQ(ethx_dev_copy_poll(dev.get(), &status), 0);
  EXPECT_EQ(status, ETHX_GPU_OK);
  ethx_dev_unlock(dev.get());
}

TEST_F(SdkTest, FlushReturnsTheFlushRegistersStatusAndNeedsRegisterMapThree) {
  add_gpu(kGpu0, FakeGpu{});
  add_gpu(kGpu1, FakeGpu{.gpu_id = 1, .version = 2});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(ethx_dev_flush(dev.get()), ETHX_GPU_OK);
  write_reg(kGpu0, ETHX_REG_FLUSH, 4, ETHX_GPU_UNREACHABLE);
  EXPECT_EQ(ethx_dev_flush(dev.get()), ETHX_GPU_UNREACHABLE);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "flush failed: unreachable"));

  Dev old = open(1);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(ethx_dev_flush(old.get()), ETHX_DEV_EVERSION);
  EXPECT_TRUE(contains(ethx_dev_last_error(old.get()), "register map version 2"));
}

TEST_F(SdkTest, CountersAndHbmAreTheDevicesOwn) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  for (unsigned i = 0; i < ETHX_GPU_COUNTER_COUNT; ++i) {
    write_reg(kGpu0, ETHX_REG_COUNTERS + 8 * i, 8, 100 + i);
  }
  ethx_dev_counters counters{};
  ASSERT_EQ(ethx_dev_get_counters(dev.get(), &counters), ETHX_GPU_OK);
  EXPECT_EQ(counters.loads, 100u);
  EXPECT_EQ(counters.stores, 101u);
  EXPECT_EQ(counters.atomics, 102u);
  EXPECT_EQ(counters.errors, 103u);
  EXPECT_EQ(counters.timeouts, 104u);
  EXPECT_EQ(counters.served_requests, 105u);
  EXPECT_EQ(counters.copies, 106u);
  EXPECT_EQ(counters.copy_bytes, 107u);

  std::uint64_t bytes = 0;
  auto* hbm = static_cast<std::uint64_t*>(ethx_dev_hbm(dev.get(), &bytes));
  ASSERT_NE(hbm, nullptr) << ethx_dev_last_error(dev.get());
  EXPECT_EQ(bytes, kMiB);
  hbm[3] = 0xabcdef;
  EXPECT_EQ(read_file(dir(kGpu0) / "resource2", 24, 8), 0xabcdefu);
}

TEST_F(SdkTest, EveryStatusHasItsOwnName) {
  EXPECT_STREQ(ethx_dev_status_name(ETHX_GPU_OK), "ok");
  EXPECT_STREQ(ethx_dev_status_name(ETHX_GPU_TIMEOUT), "timeout");
  EXPECT_STREQ(ethx_dev_status_name(ETHX_DEV_ELOCK), "lock held");
  EXPECT_STREQ(ethx_dev_status_name(99), "unknown status");
  EXPECT_STREQ(ethx_dev_status_name(-99), "unknown status");
  std::set<std::string> names;
  for (int status = ETHX_DEV_EVERSION; status < ETHX_GPU_STATUS_COUNT; ++status) {
    const std::string name = ethx_dev_status_name(status);
    EXPECT_NE(name, "unknown status") << status;
    EXPECT_TRUE(names.insert(name).second) << name << " names two statuses";
  }
}

// A child process that holds GPU 0's lock until told to let go (its stdin-like pipe closes).
class LockHolder {
 public:
  LockHolder() {
    int ready[2];
    int release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      char error[256];
      ethx_dev* dev = ethx_dev_open(0, error, sizeof error);
      const char ok = dev != nullptr && ethx_dev_lock(dev, 1000) == ETHX_GPU_OK ? 'y' : 'n';
      (void)!::write(ready[1], &ok, 1);
      char byte = 0;
      (void)!::read(release[0], &byte, 1);  // returns at EOF: the parent let go
      ethx_dev_close(dev);
      ::_exit(ok == 'y' ? 0 : 1);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_fd_ = release[1];
    char ok = 0;
    holding_ = ::read(ready[0], &ok, 1) == 1 && ok == 'y';
    ::close(ready[0]);
  }
  ~LockHolder() { finish(); }
  // Lets go and reaps the child: its exit status (-1 if it failed).
  int finish() {
    if (release_fd_ >= 0) ::close(release_fd_);
    release_fd_ = -1;
    if (pid_ <= 0) return -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid() const { return pid_; }
  bool holding() const { return holding_; }

 private:
  pid_t pid_ = -1;
  int release_fd_ = -1;
  bool holding_ = false;
};

TEST_F(SdkTest, ALockHeldByAnotherProcessTimesOutNamingItsPid) {
  add_gpu(kGpu0, FakeGpu{});
  LockHolder holder;
  ASSERT_TRUE(holder.holding());
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(ethx_dev_lock(dev.get(), 50), ETHX_DEV_ELOCK);
  const std::string expected = "GPU " + kGpu0 + ": command registers held by pid " +
                               std::to_string(holder.pid()) +
                               " for 50 ms (ETHX_DEV_LOCK_TIMEOUT_MS)";
  EXPECT_EQ(ethx_dev_last_error(dev.get()), expected);

  // Atomics and copies take the lock themselves, with the default timeout.
  ::setenv("ETHX_DEV_LOCK_TIMEOUT_MS", "20", 1);
  std::uint64_t old = 0;
  EXPECT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_FETCH_ADD, 0, 8, 1, 0, &old), ETHX_DEV_ELOCK);
  EXPECT_TRUE(contains(ethx_dev_last_error(dev.get()), "for 20 ms"));
  EXPECT_EQ(ethx_dev_copy(dev.get(), 0, 8, 8, 0), ETHX_DEV_ELOCK);
  EXPECT_EQ(read_reg(kGpu0, ETHX_REG_ATOMIC_CMD, 4), 0u);  // nothing issued without the lock

  EXPECT_EQ(holder.finish(), 0);
  write_reg(kGpu0, ETHX_REG_ATOMIC_RESULT, 8, 9);
  EXPECT_EQ(ethx_dev_atomic(dev.get(), ETHX_GPU_FETCH_ADD, 0, 8, 1, 0, &old), ETHX_GPU_OK);
  EXPECT_EQ(old, 9u);
  EXPECT_EQ(ethx_dev_lock(dev.get(), 0), ETHX_GPU_OK);
}

// Whether another process could take `lock_file` now (fcntl F_SETLK from a child).
bool another_process_could_lock(const fs::path& lock_file) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(lock_file.c_str(), O_RDWR);
    struct flock whole {};
    whole.l_type = F_WRLCK;
    whole.l_whence = SEEK_SET;
    ::_exit(fd >= 0 && ::fcntl(fd, F_SETLK, &whole) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Record locks belong to the process: the library makes its handles take turns themselves, and
// closing one handle must not drop the lock another holds.
TEST_F(SdkTest, HandlesOfOneProcessExcludeEachOtherAndClosingOneKeepsAnothersLock) {
  add_gpu(kGpu0, FakeGpu{});
  const fs::path lock_file = root_ / "lock" / ("ethx-gpu-" + kGpu0 + ".lock");
  Dev a = open(0);
  Dev b = open(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(ethx_dev_lock(a.get(), 0), ETHX_GPU_OK);
  EXPECT_EQ(ethx_dev_lock(a.get(), 0), ETHX_GPU_OK);  // held already
  EXPECT_EQ(ethx_dev_lock(b.get(), 20), ETHX_DEV_ELOCK);
  EXPECT_TRUE(contains(ethx_dev_last_error(b.get()), "another handle of this process"))
      << ethx_dev_last_error(b.get());
  EXPECT_FALSE(another_process_could_lock(lock_file));

  Dev c = open(0);
  c.reset();  // closes a descriptor of the lock file, were it opened per handle
  EXPECT_FALSE(another_process_could_lock(lock_file));

  ethx_dev_unlock(a.get());
  EXPECT_TRUE(another_process_could_lock(lock_file));
  EXPECT_EQ(ethx_dev_lock(b.get(), 0), ETHX_GPU_OK);
  a.reset();  // b holds it; a's close leaves it held
  EXPECT_FALSE(another_process_could_lock(lock_file));
  b.reset();  // closing the holder releases it
  EXPECT_TRUE(another_process_could_lock(lock_file));
}

// A child forked while its parent holds the lock holds nothing itself (record locks are not
// inherited): neither its copy of the parent's handle nor a handle of its own may act as if the
// lock were its own, and both time out naming the parent.
TEST_F(SdkTest, AChildForkedWhileItsParentHoldsTheLockWaitsForItsParent) {
  add_gpu(kGpu0, FakeGpu{});
  Dev dev = open(0);
  ASSERT_NE(dev, nullptr);
  ASSERT_EQ(ethx_dev_lock(dev.get(), 0), ETHX_GPU_OK);
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    const int inherited = ethx_dev_lock(dev.get(), 30);
    std::string text = std::to_string(inherited) + "|" + ethx_dev_last_error(dev.get()) + "|";
    char error[256];
    ethx_dev* own = ethx_dev_open(0, error, sizeof error);
    const int fresh = own != nullptr ? ethx_dev_lock(own, 30) : ETHX_DEV_ENODEV;
    text += std::to_string(fresh) + "|" + (own != nullptr ? ethx_dev_last_error(own) : error);
    (void)!::write(report[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string text;
  char buffer[512];
  for (ssize_t got; (got = ::read(report[0], buffer, sizeof buffer)) > 0;) text.append(buffer, got);
  ::close(report[0]);
  ::waitpid(child, nullptr, 0);
  const std::string held_by_parent = "held by pid " + std::to_string(::getpid()) + " for 30 ms";
  const std::string elock = std::to_string(ETHX_DEV_ELOCK);
  const std::size_t first = text.find('|');
  const std::size_t second = text.find('|', first + 1);
  const std::size_t third = text.find('|', second + 1);
  ASSERT_NE(third, std::string::npos) << text;
  EXPECT_EQ(text.substr(0, first), elock) << text;
  EXPECT_TRUE(contains(text.substr(first + 1, second - first - 1), held_by_parent)) << text;
  EXPECT_EQ(text.substr(second + 1, third - second - 1), elock) << text;
  EXPECT_TRUE(contains(text.substr(third + 1), held_by_parent)) << text;
  // The parent's lock survived the child's exit (which closed its copies of the lock file).
  EXPECT_FALSE(another_process_could_lock(root_ / "lock" / ("ethx-gpu-" + kGpu0 + ".lock")));
}

}  // namespace
}  // namespace ethx
