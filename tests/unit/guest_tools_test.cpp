// The guest tools' library against a fake sysfs tree: a regular file stands in for a BAR
// (mmap of a file behaves like the resource file, without a VM).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
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
  BarAccess& bar = gpus[0].bar(0);
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
  EXPECT_THROW(parse_command_line({"peek", "--offset", "0", "--value", "1"}), UsageError);
}

TEST(GuestCliTest, ParsesWindowAtomicCopyBenchAndAlltoall) {
  const auto load = parse_command_line({"load", "--target", "2", "--offset", "0x100"});
  EXPECT_EQ(load.target, 2u);
  EXPECT_EQ(load.offset, 0x100u);
  EXPECT_EQ(load.width, 8u);  // window accesses default to 8 bytes
  EXPECT_EQ(parse_command_line({"peek", "--offset", "0"}).width, 4u);
  EXPECT_EQ(parse_command_line({"store", "--addr", "8", "--width", "2", "--value", "0xffff"}).addr,
            8u);
  EXPECT_THROW(parse_command_line({"load", "--target", "2"}), UsageError);  // no offset
  EXPECT_THROW(parse_command_line({"load", "--addr", "0", "--target", "1", "--offset", "0"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"store", "--addr", "0"}), UsageError);  // no value
  EXPECT_THROW(parse_command_line({"load", "--addr", "0", "--bar", "2"}), UsageError);

  const auto cas = parse_command_line({"atomic", "--op", "cas", "--addr", "0x40", "--width", "4",
                                       "--operand", "7", "--compare", "5"});
  EXPECT_EQ(cas.op, "cas");
  EXPECT_EQ(cas.compare, 5u);
  EXPECT_EQ(cas.width, 4u);
  EXPECT_THROW(parse_command_line({"atomic", "--op", "cas", "--addr", "0", "--operand", "1"}),
               UsageError);  // cas without --compare
  EXPECT_THROW(parse_command_line(
                   {"atomic", "--op", "swap", "--addr", "0", "--operand", "1", "--compare", "0"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"atomic", "--op", "fetch-add", "--addr", "0", "--operand", "1",
                                   "--width", "2"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"atomic", "--op", "fetch-add", "--addr", "0", "--operand",
                                   "0x100000000", "--width", "4"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"atomic", "--op", "add", "--addr", "0", "--operand", "1"}),
               UsageError);

  const auto copy = parse_command_line(
      {"copy", "--src", "0", "--dst", "0x4000000", "--bytes", "4096", "--timeout", "5"});
  EXPECT_EQ(copy.dst, 0x4000000u);
  EXPECT_EQ(copy.timeout_s, 5u);
  EXPECT_THROW(parse_command_line({"copy", "--src", "0", "--dst", "8"}), UsageError);

  const auto bench = parse_command_line({"bench", "--quick", "--gpu", "3", "--peer", "1"});
  EXPECT_TRUE(bench.quick);
  EXPECT_EQ(bench.gpu_id, 3u);
  EXPECT_EQ(bench.peer, 1u);
  EXPECT_FALSE(parse_command_line({"bench"}).quick);
  EXPECT_FALSE(bench.latency_only);
  EXPECT_TRUE(parse_command_line({"bench", "--latency-only", "--peer", "1"}).latency_only);
  EXPECT_THROW(parse_command_line({"load", "--latency-only"}), UsageError);

  const auto all = parse_command_line({"alltoall", "--bytes-per-peer", "4096", "--salt", "9"});
  EXPECT_EQ(all.bytes_per_peer, 4096u);
  EXPECT_EQ(all.salt, 9u);
  EXPECT_THROW(parse_command_line({"alltoall", "--bytes-per-peer", "12", "--salt", "1"}),
               UsageError);
  EXPECT_THROW(parse_command_line({"alltoall", "--bytes-per-peer", "8"}), UsageError);
  EXPECT_THROW(
      parse_command_line({"alltoall", "--bytes-per-peer", "8", "--salt", "1", "--gpu", "0"}),
      UsageError);
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

// ---------------------------------------------------------------------------------------------
// Register map version 2 against device models: GpuFunction implementations whose BARs emulate
// the window, the atomic command and the copy engine on anonymous memory.

constexpr std::uint64_t kMiB = 1u << 20;

// Zero-filled memory allocated on touch: a fabric of 64 MiB GPUs costs what the test touches.
class AnonMemory {
 public:
  explicit AnonMemory(std::size_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    data_ = static_cast<std::uint8_t*>(p);
  }
  ~AnonMemory() { ::munmap(data_, size_); }
  AnonMemory(const AnonMemory&) = delete;
  AnonMemory& operator=(const AnonMemory&) = delete;
  std::uint8_t* data() { return data_; }

 private:
  std::uint8_t* data_;
  std::size_t size_;
};

std::uint64_t load_bytes(const std::uint8_t* p, unsigned width) {
  if (width == 8)
    return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(p), __ATOMIC_ACQUIRE);
  std::uint64_t value = 0;
  std::memcpy(&value, p, width);
  return value;
}
void store_bytes(std::uint8_t* p, unsigned width, std::uint64_t value) {
  if (width == 8) {
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(p), value, __ATOMIC_RELEASE);
  } else {
    std::memcpy(p, &value, width);
  }
}

struct FakeFabric {
  explicit FakeFabric(std::uint32_t gpus) : gpu_count(gpus) {
    for (std::uint32_t k = 0; k < gpus; ++k) memory.push_back(std::make_unique<AnonMemory>(hbm()));
  }
  std::uint64_t hbm() const { return std::uint64_t{hbm_mib} << 20; }
  std::uint64_t aperture() const { return std::uint64_t{aperture_mib} << 20; }
  std::uint8_t* at(std::uint32_t gpu, std::uint64_t offset) { return memory[gpu]->data() + offset; }
  // The byte a window address names, or the status code of the failure.
  std::uint8_t* translate(std::uint64_t addr, unsigned width, std::uint32_t& code) {
    const std::uint64_t gpu = addr / aperture();
    const std::uint64_t offset = addr % aperture();
    code = 0;
    if (gpu >= gpu_count || offset + width > hbm()) code = 1;  // out of window
    if (code == 0 && unreachable.count(static_cast<std::uint32_t>(gpu)) != 0) code = 6;
    return code == 0 ? at(static_cast<std::uint32_t>(gpu), offset) : nullptr;
  }

  std::uint32_t gpu_count;
  std::uint32_t aperture_mib = 64;
  std::uint32_t hbm_mib = 64;
  std::vector<std::unique_ptr<AnonMemory>> memory;
  std::set<std::uint64_t> corrupt;      // window addresses whose loads come back wrong
  std::set<std::uint32_t> unreachable;  // GPUs every access to fails
};

enum class CopyMode { kComplete, kFail, kNever };

struct RegAccess {
  bool write;
  std::uint64_t offset;
  unsigned width;
  std::uint64_t value;
};

class FakeGpu;

// BAR 0: the control registers, with ATOMIC_CMD and COPY_CMD performing on the fabric.
class FakeControl : public BarAccess {
 public:
  explicit FakeControl(FakeGpu& gpu) : gpu_(gpu) {}
  std::size_t size() const override { return 4096; }
  std::uint64_t read(std::uint64_t offset, unsigned width) override;
  void write(std::uint64_t offset, unsigned width, std::uint64_t value) override;

  void latch(std::uint32_t code, std::uint64_t addr) {
    static constexpr std::uint32_t kBitOfCode[] = {0,       1u << 1, 1u << 2, 1u << 3,
                                                   1u << 4, 1u << 5, 1u << 6};
    if (error == 0) fault_addr = addr;
    error |= kBitOfCode[code];
  }

  std::uint32_t error = 0;
  std::uint64_t fault_addr = 0;
  std::uint32_t version = ETHX_REGISTER_MAP_VERSION;
  std::uint64_t regs[64] = {};  // by offset / 8 (the 32-bit ones in the low half)
  std::uint32_t copy_status = 0;
  unsigned copy_polls_left = 0;
  CopyMode copy_mode = CopyMode::kComplete;
  std::vector<RegAccess> log;

 private:
  FakeGpu& gpu_;
};

class FakeWindow : public BarAccess {
 public:
  FakeWindow(FakeFabric& fabric, FakeControl& control) : fabric_(fabric), control_(control) {}
  std::size_t size() const override {
    std::size_t size = 1;
    while (size < fabric_.gpu_count * fabric_.aperture()) size *= 2;
    return size;
  }
  std::uint64_t read(std::uint64_t addr, unsigned width) override {
    check_access(size(), addr, width);
    std::uint32_t code = 0;
    const std::uint8_t* p = fabric_.translate(addr, width, code);
    if (p == nullptr) {
      control_.latch(code, addr);
      return ~std::uint64_t{0};
    }
    const std::uint64_t value = load_bytes(p, width);
    return fabric_.corrupt.count(addr) != 0 ? value ^ 1 : value;
  }
  void write(std::uint64_t addr, unsigned width, std::uint64_t value) override {
    check_access(size(), addr, width);
    std::uint32_t code = 0;
    std::uint8_t* p = fabric_.translate(addr, width, code);
    if (p == nullptr) {
      control_.latch(code, addr);
      return;
    }
    store_bytes(p, width, value);
  }

 private:
  FakeFabric& fabric_;
  FakeControl& control_;
};

// BAR 2: RAM, this GPU's memory.
class FakeHbm : public BarAccess {
 public:
  FakeHbm(FakeFabric& fabric, std::uint32_t id) : fabric_(fabric), id_(id) {}
  std::size_t size() const override { return fabric_.hbm(); }
  std::uint64_t read(std::uint64_t offset, unsigned width) override {
    check_access(size(), offset, width);
    return load_bytes(ram() + offset, width);
  }
  void write(std::uint64_t offset, unsigned width, std::uint64_t value) override {
    check_access(size(), offset, width);
    store_bytes(ram() + offset, width, value);
  }
  std::uint8_t* ram() override { return fabric_.at(id_, 0); }

 private:
  FakeFabric& fabric_;
  std::uint32_t id_;
};

class FakeGpu : public GpuFunction {
 public:
  FakeGpu(FakeFabric& in_fabric, std::uint32_t gpu_id)
      : fabric(in_fabric),
        id(gpu_id),
        bdf_("0000:00:1" + std::to_string(gpu_id) + ".0"),
        control(*this),
        window(fabric, control),
        hbm(fabric, id) {}
  const std::string& bdf() const override { return bdf_; }
  BarAccess& bar(unsigned index) override {
    if (index == 0) return control;
    if (index == 2) return hbm;
    if (index == 4) return window;
    throw std::runtime_error("no BAR " + std::to_string(index));
  }

  FakeFabric& fabric;
  std::uint32_t id;
  std::string bdf_;
  FakeControl control;
  FakeWindow window;
  FakeHbm hbm;
};

// What run_command gets (and destroys): a handle on a FakeGpu the test keeps.
class GpuRef : public GpuFunction {
 public:
  explicit GpuRef(FakeGpu& gpu) : gpu_(gpu) {}
  const std::string& bdf() const override { return gpu_.bdf(); }
  BarAccess& bar(unsigned index) override { return gpu_.bar(index); }

 private:
  FakeGpu& gpu_;
};

std::uint64_t FakeControl::read(std::uint64_t offset, unsigned width) {
  check_access(size(), offset, width);
  std::uint64_t value = 0;
  if (offset == kIdent.offset) {
    value = kIdentValue;
  } else if (offset == kVersion.offset) {
    value = version;
  } else if (offset == kGpuId.offset) {
    value = gpu_.id;
  } else if (offset == kStatus.offset) {
    value = kStatusFabricUp | (error != 0 ? kStatusErrorLatched : 0) |
            ((copy_status & 0xff) == kCopyBusy ? kStatusCopyBusy : 0);
  } else if (offset == kError.offset) {
    value = error;
  } else if (offset == kFaultAddr.offset) {
    value = fault_addr;
  } else if (offset == kGpuCount.offset) {
    value = gpu_.fabric.gpu_count;
  } else if (offset == kApertureMib.offset) {
    value = gpu_.fabric.aperture_mib;
  } else if (offset == kHbmMib.offset) {
    value = gpu_.fabric.hbm_mib;
  } else if (offset == kCopyStatus.offset) {
    if ((copy_status & 0xff) == kCopyBusy && copy_mode != CopyMode::kNever &&
        --copy_polls_left == 0) {
      if (copy_mode == CopyMode::kFail) {
        copy_status = kCopyFailed | (3u << 8);  // timeout
        latch(3, regs[kCopySrc.offset / 8]);
      } else {
        for (std::uint64_t i = 0; i < regs[kCopyLen.offset / 8]; ++i) {
          std::uint32_t code = 0;
          const std::uint8_t* from = gpu_.fabric.translate(regs[kCopySrc.offset / 8] + i, 1, code);
          std::uint8_t* to = gpu_.fabric.translate(regs[kCopyDst.offset / 8] + i, 1, code);
          if (from == nullptr || to == nullptr) {  // as the device: the copy fails with the code
            copy_status = kCopyFailed | (code << 8);
            latch(code, regs[kCopySrc.offset / 8] + i);
            break;
          }
          *to = *from;
        }
        if ((copy_status & 0xff) == kCopyBusy) copy_status = kCopyDone;
      }
    }
    value = copy_status;
  } else {
    value = regs[offset / 8];
  }
  log.push_back({false, offset, width, value});
  return value;
}

void FakeControl::write(std::uint64_t offset, unsigned width, std::uint64_t value) {
  check_access(size(), offset, width);
  log.push_back({true, offset, width, value});
  if (offset == kError.offset) {
    error &= ~static_cast<std::uint32_t>(value);
    if (error == 0) fault_addr = 0;
  } else if (offset == kAtomicCmd.offset) {
    const auto op = static_cast<AtomicOp>(value & 3);
    const auto atomic_width = static_cast<unsigned>(value >> 8 & 0xf);
    const std::uint64_t addr = regs[kAtomicAddr.offset / 8];
    std::uint32_t code = 0;
    std::uint8_t* p = gpu_.fabric.translate(addr, atomic_width, code);
    if (p == nullptr) {
      latch(code, addr);
      regs[kAtomicResult.offset / 8] = ~std::uint64_t{0};
      regs[kAtomicStatus.offset / 8] = code;
      return;
    }
    ASSERT_EQ(atomic_width, 8u) << "the model does 8-byte atomics";
    auto* word = reinterpret_cast<std::uint64_t*>(p);
    const std::uint64_t operand = regs[kAtomicOperand.offset / 8];
    std::uint64_t old = 0;
    if (op == AtomicOp::kFetchAdd) {
      old = __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
    } else if (op == AtomicOp::kSwap) {
      old = __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
    } else {
      old = regs[kAtomicCompare.offset / 8];
      __atomic_compare_exchange_n(word, &old, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    regs[kAtomicResult.offset / 8] = old;
    regs[kAtomicStatus.offset / 8] = 0;
  } else if (offset == kCopyCmd.offset) {
    if ((copy_status & 0xff) == kCopyBusy) {
      error |= kErrorCopyBusy;
      return;
    }
    copy_status = kCopyBusy;
    copy_polls_left = 3;
  } else {
    regs[offset / 8] = value;
  }
}

class GuestFabricTest : public testing::Test {
 protected:
  void SetUp() override {
    lock_dir_ = fs::temp_directory_path() / ("ethx-guest-locks-" + std::to_string(::getpid()));
    fs::create_directories(lock_dir_);
    options_.lock_dir = lock_dir_;
    options_.copy_timeout = std::chrono::milliseconds(200);
    options_.barrier_timeout = std::chrono::milliseconds(300);
  }
  void TearDown() override { fs::remove_all(lock_dir_); }

  // The GPUs of this VM: `ids` of `fabric`. run_command consumes the list; the devices stay
  // (in owned_, reachable through gpus_) for the test to inspect.
  GpuList vm(FakeFabric& fabric, std::vector<std::uint32_t> ids) {
    GpuList list;
    gpus_.clear();
    for (const auto id : ids) {
      owned_.push_back(std::make_unique<FakeGpu>(fabric, id));
      gpus_.push_back(owned_.back().get());
      list.push_back(std::make_unique<GpuRef>(*owned_.back()));
    }
    return list;
  }
  nlohmann::json run(FakeFabric& fabric, std::vector<std::uint32_t> ids,
                     const std::vector<std::string>& args) {
    return run_command(parse_command_line(args), vm(fabric, ids), options_);
  }

  fs::path lock_dir_;
  RunOptions options_;
  std::vector<std::unique_ptr<FakeGpu>> owned_;
  std::vector<FakeGpu*> gpus_;  // of the latest vm()
};

TEST_F(GuestFabricTest, WindowStoreAndLoadReachTheTargetGpu) {
  FakeFabric fabric(2);
  const auto store =
      run(fabric, {0},
          {"store", "--target", "1", "--offset", "0x100", "--width", "4", "--value", "0xdeadbeef"});
  EXPECT_EQ(store["addr"], 64 * kMiB + 0x100);
  EXPECT_EQ(store["error"], 0);
  std::uint32_t in_memory = 0;
  std::memcpy(&in_memory, fabric.at(1, 0x100), 4);
  EXPECT_EQ(in_memory, 0xdeadbeefu);

  const auto load = run(fabric, {0}, {"load", "--addr", std::to_string(64 * kMiB + 0x100)});
  EXPECT_EQ(load["value"], 0xdeadbeefu);  // 8-byte load: the upper half is still zero
  EXPECT_EQ(load["target"], 1);
  EXPECT_EQ(load["offset"], 0x100);
  EXPECT_TRUE(load["error_names"].empty());
}

TEST_F(GuestFabricTest, WindowErrorsAreReportedAndStaleOnesCleared) {
  FakeFabric fabric(2);
  fabric.unreachable.insert(1);
  auto gpus = vm(fabric, {0});
  FakeGpu& gpu = *gpus_[0];
  try {
    run_command(parse_command_line({"load", "--target", "1", "--offset", "8"}), std::move(gpus),
                options_);
    FAIL() << "a load from an unreachable GPU must fail";
  } catch (const CommandFailed& failed) {
    EXPECT_EQ(failed.result["value"], ~std::uint64_t{0});
    EXPECT_EQ(failed.result["error_names"], nlohmann::json::array({"unreachable"}));
    EXPECT_EQ(failed.result["fault_addr"], 64 * kMiB + 8);
  }
  // The error is cleared (RW1C) after the command; a stale one before a command is too.
  EXPECT_EQ(gpu.control.error, 0u);
  auto again = vm(fabric, {0});
  gpus_[0]->control.error = kErrorTimeout;
  const auto ok = run_command(parse_command_line({"load", "--target", "0", "--offset", "8"}),
                              std::move(again), options_);
  EXPECT_EQ(ok["error"], 0);
  EXPECT_THROW(run(fabric, {0}, {"load", "--target", "0", "--offset", std::to_string(64 * kMiB)}),
               CommandError);  // outside the aperture
}

TEST_F(GuestFabricTest, AtomicWritesTheRegistersInOrderThenRings) {
  FakeFabric fabric(2);
  store_bytes(fabric.at(1, 0x40), 8, 5);
  auto gpus = vm(fabric, {0});
  FakeGpu& gpu = *gpus_[0];
  const auto result =
      run_command(parse_command_line({"atomic", "--op", "cas", "--target", "1", "--offset", "0x40",
                                      "--operand", "9", "--compare", "5"}),
                  std::move(gpus), options_);
  EXPECT_EQ(result["old"], 5);
  EXPECT_EQ(result["swapped"], true);
  EXPECT_EQ(result["status_name"], "ok");
  EXPECT_EQ(load_bytes(fabric.at(1, 0x40), 8), 9u);

  std::vector<RegAccess> writes;
  std::vector<std::uint64_t> reads_after_cmd;
  bool rung = false;
  for (const auto& access : gpu.control.log) {
    if (access.write && access.offset != kError.offset) writes.push_back(access);
    if (access.write && access.offset == kAtomicCmd.offset) rung = true;
    if (!access.write && rung) reads_after_cmd.push_back(access.offset);
  }
  ASSERT_EQ(writes.size(), 4u);
  EXPECT_EQ(writes[0].offset, kAtomicAddr.offset);
  EXPECT_EQ(writes[0].value, 64 * kMiB + 0x40);
  EXPECT_EQ(writes[0].width, 8u);
  EXPECT_EQ(writes[1].offset, kAtomicOperand.offset);
  EXPECT_EQ(writes[1].value, 9u);
  EXPECT_EQ(writes[2].offset, kAtomicCompare.offset);
  EXPECT_EQ(writes[2].value, 5u);
  EXPECT_EQ(writes[3].offset, kAtomicCmd.offset);
  EXPECT_EQ(writes[3].width, 4u);
  EXPECT_EQ(writes[3].value, 0x802u);  // compare-swap, 8 bytes
  ASSERT_GE(reads_after_cmd.size(), 2u);
  EXPECT_EQ(reads_after_cmd[0], kAtomicResult.offset);
  EXPECT_EQ(reads_after_cmd[1], kAtomicStatus.offset);
  EXPECT_TRUE(fs::exists(lock_dir_ / ("ethx-gpu-" + gpu.bdf() + ".lock")));

  // fetch-add: no COMPARE write; the command encodes op 0.
  auto again = vm(fabric, {0});
  run_command(
      parse_command_line({"atomic", "--op", "fetch-add", "--addr", "0x40", "--operand", "3"}),
      std::move(again), options_);
  std::vector<std::uint64_t> offsets;
  std::uint64_t command = 0;
  for (const auto& access : gpus_[0]->control.log) {
    if (!access.write || access.offset == kError.offset) continue;
    offsets.push_back(access.offset);
    if (access.offset == kAtomicCmd.offset) command = access.value;
  }
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{kAtomicAddr.offset, kAtomicOperand.offset,
                                                 kAtomicCmd.offset}));
  EXPECT_EQ(command, 0x800u);
  EXPECT_EQ(command, atomic_command(AtomicOp::kFetchAdd, 8));
  EXPECT_EQ(atomic_command(AtomicOp::kSwap, 4), 0x401u);
}

TEST_F(GuestFabricTest, FailedAtomicPrintsItsStatus) {
  FakeFabric fabric(2);
  fabric.unreachable.insert(1);
  try {
    run(fabric, {0},
        {"atomic", "--op", "swap", "--target", "1", "--offset", "0", "--operand", "1"});
    FAIL() << "an atomic on an unreachable GPU must fail";
  } catch (const CommandFailed& failed) {
    EXPECT_EQ(failed.result["status_name"], "unreachable");
    EXPECT_EQ(failed.result["old"], ~std::uint64_t{0});
  }
}

// `flush` reads FLUSH once (version 3) and reports its status; a failure is the command's.
TEST_F(GuestFabricTest, FlushReadsTheFlushRegisterOnceAndReportsItsStatus) {
  FakeFabric fabric(2);
  auto gpus = vm(fabric, {0});
  FakeGpu& gpu = *gpus_[0];
  const auto ok = run_command(parse_command_line({"flush"}), std::move(gpus), options_);
  EXPECT_EQ(ok["op"], "flush");
  EXPECT_EQ(ok["status"], 0);
  int flush_reads = 0;
  for (const auto& access : gpu.control.log) flush_reads += access.offset == kFlush.offset;
  EXPECT_EQ(flush_reads, 1);

  auto failing = vm(fabric, {0});
  gpus_[0]->control.regs[kFlush.offset / 8] = ETHX_GPU_UNREACHABLE;
  try {
    run_command(parse_command_line({"flush"}), std::move(failing), options_);
    FAIL() << "a flush that reads a failure must fail";
  } catch (const CommandFailed& failed) {
    EXPECT_EQ(failed.result["status_name"], "unreachable");
    EXPECT_NE(std::string(failed.what()).find("unreachable"), std::string::npos);
  }

  auto old = vm(fabric, {0});
  gpus_[0]->control.version = 2;
  try {
    run_command(parse_command_line({"flush"}), std::move(old), options_);
    FAIL() << "register map 2 has no FLUSH";
  } catch (const CommandError& error) {
    EXPECT_NE(std::string(error.what()).find("needs version 3"), std::string::npos);
  }
}

TEST_F(GuestFabricTest, CopyPollsUntilDoneFailedOrTimeout) {
  FakeFabric fabric(2);
  for (std::uint64_t i = 0; i < 512; ++i) store_bytes(fabric.at(1, 8 * i), 8, pattern_word(7, i));
  const std::vector<std::string> args = {
      "copy", "--src", std::to_string(64 * kMiB), "--dst", "0x10000", "--bytes", "4096"};
  const auto done = run(fabric, {0}, args);
  EXPECT_EQ(done["done"], true);
  EXPECT_EQ(std::memcmp(fabric.at(0, 0x10000), fabric.at(1, 0), 4096), 0);
  std::uint64_t polls = 0;
  for (const auto& access : gpus_[0]->control.log) {
    polls += !access.write && access.offset == kCopyStatus.offset;
  }
  EXPECT_EQ(polls, 4u);  // one before the start, three until done

  auto failing = vm(fabric, {0});
  gpus_[0]->control.copy_mode = CopyMode::kFail;
  try {
    run_command(parse_command_line(args), std::move(failing), options_);
    FAIL() << "a failed copy must fail the command";
  } catch (const CommandFailed& failed) {
    EXPECT_EQ(failed.result["done"], false);
    EXPECT_EQ(failed.result["code_name"], "timeout");
  }

  auto stuck = vm(fabric, {0});
  gpus_[0]->control.copy_mode = CopyMode::kNever;
  const auto start = std::chrono::steady_clock::now();
  try {
    run_command(parse_command_line(args), std::move(stuck), options_);
    FAIL() << "a copy that never finishes must time out";
  } catch (const CommandFailed&) {
    FAIL() << "a timeout is not a result";
  } catch (const CommandError& error) {
    EXPECT_NE(std::string(error.what()).find("did not finish"), std::string::npos);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));

  auto busy = vm(fabric, {0});
  gpus_[0]->control.copy_status = kCopyBusy;
  EXPECT_THROW(run_command(parse_command_line(args), std::move(busy), options_), CommandError);
}

TEST_F(GuestFabricTest, BenchVerifiesEveryPhase) {
  FakeFabric fabric(2);
  const auto bench = run(fabric, {0, 1}, {"bench", "--quick"});  // the first GPU: 0
  EXPECT_EQ(bench["gpu_id"], 0);
  EXPECT_EQ(bench["peer"], 1);
  EXPECT_EQ(bench["mismatches"], 0);
  EXPECT_EQ(bench["errors"], 0);
  EXPECT_EQ(bench["atomic"]["final"], 256);
  ASSERT_EQ(bench["copy"].size(), 3u);
  EXPECT_EQ(bench["copy"][2]["bytes"], kMiB);
  // --quick: 8 copies of 4 KiB, 4 of 64 KiB, 2 of 1 MiB, each timed and verified.
  EXPECT_EQ(bench["copy"][0]["samples"], 8);
  EXPECT_EQ(bench["copy"][2]["samples"], 2);
  EXPECT_LE(bench["copy"][0]["p50_ns"].get<std::uint64_t>(),
            bench["copy"][0]["p99_ns"].get<std::uint64_t>());
  // latency samples (3 x 256) + 1 + store words checked + atomics (256 + 1) + copied words
  const std::uint64_t copied = (8 * 4096 + 4 * 65536 + 2 * kMiB) / 8;
  EXPECT_EQ(bench["verified_ops"],
            3 * 256 + 1 + bench["store"]["words_checked"].get<std::uint64_t>() + 257 + copied);
  EXPECT_GT(bench["mmio_trap_ns"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(bench["region"]["peer_addr"], 64 * kMiB + 8 * kMiB);
  // The copied data landed in GPU 0's own memory, slot 0.
  EXPECT_NE(load_bytes(fabric.at(0, 8 * kMiB), 8), 0u);
}

TEST_F(GuestFabricTest, BenchLatencyOnlyRunsTheLatencyPhaseAlone) {
  FakeFabric fabric(2);
  const auto bench = run(fabric, {0, 1}, {"bench", "--quick", "--latency-only"});
  EXPECT_EQ(bench["verified_ops"], 3 * 256);  // window loads, HBM loads, register reads
  EXPECT_EQ(bench["mismatches"], 0);
  EXPECT_GT(bench["latency"]["window_load"]["p50_ns"].get<std::uint64_t>(), 0u);
  EXPECT_GT(bench["mmio_trap_ns"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(bench.contains("store"));
  EXPECT_FALSE(bench.contains("copy"));
}

TEST_F(GuestFabricTest, BenchCountsAMismatch) {
  FakeFabric fabric(2);
  // Word 96 of GPU 1's slot for GPU 0: read by the latency loads and the store check (stride 8).
  fabric.corrupt.insert(64 * kMiB + 8 * kMiB + 8 * 96);
  try {
    run(fabric, {1, 0}, {"bench", "--quick", "--gpu", "0"});
    FAIL() << "a corrupted word must fail the bench";
  } catch (const CommandFailed& failed) {
    EXPECT_EQ(failed.result["mismatches"], 2);
    EXPECT_EQ(failed.result["errors"], 0);
  }
}

TEST_F(GuestFabricTest, BenchCountsUnreachableApartFromTimeouts) {
  FakeFabric fabric(2);
  fabric.unreachable.insert(1);  // the device has marked GPU 1 down: every access fails at once
  try {
    run(fabric, {1, 0}, {"bench", "--quick", "--gpu", "0"});
    FAIL() << "a bench against a down peer must fail";
  } catch (const CommandFailed& failed) {
    EXPECT_GT(failed.result["unreachable"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(failed.result["timeouts"], 0);
    EXPECT_NE(std::string(failed.what()).find("unreachable"), std::string::npos);
  }
}

// GPU 2 of a 3-GPU fabric in "another VM": writes its data, arrives at both barriers.
void other_vm(FakeFabric& fabric, std::uint64_t salt, std::uint64_t n, bool corrupt) {
  const std::uint64_t barrier = 40 * kMiB + 8 * salt;
  for (std::uint32_t dst = 0; dst < 2; ++dst) {
    const std::uint64_t seed = alltoall_seed(salt, 2, dst);
    for (std::uint64_t i = 0; i < n / 8; ++i) {
      const std::uint64_t word = pattern_word(seed, i) ^ (corrupt && dst == 1 && i == 5 ? 4 : 0);
      store_bytes(fabric.at(dst, 48 * kMiB + 2 * n + 8 * i), 8, word);
    }
  }
  auto* counter = reinterpret_cast<std::uint64_t*>(fabric.at(0, barrier));
  for (std::uint64_t phase = 1; phase <= 2; ++phase) {
    __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < 3 * phase &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

TEST_F(GuestFabricTest, AlltoallWritesBarriersAndVerifies) {
  FakeFabric fabric(3);
  constexpr std::uint64_t kN = 4096;
  std::thread other(other_vm, std::ref(fabric), 7, kN, false);
  const auto result = run(fabric, {0, 1}, {"alltoall", "--bytes-per-peer", "4096", "--salt", "7"});
  other.join();
  EXPECT_EQ(result["gpus_total"], 3);
  EXPECT_EQ(result["local_gpus"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(result["mismatches"], 0);
  EXPECT_EQ(result["bytes_written"], 4 * kN);
  // 4 flush loads + 2 destinations x 2 sources x 512 words
  EXPECT_EQ(result["verified_ops"], 4 + 4 * kN / 8);
  EXPECT_EQ(result["barrier_addr"], 40 * kMiB + 8 * 7);
  EXPECT_EQ(load_bytes(fabric.at(0, 40 * kMiB + 8 * 7), 8), 6u);  // two generations of 3
  // What GPU 1 wrote into GPU 2 (of the other VM).
  EXPECT_EQ(load_bytes(fabric.at(2, 48 * kMiB + 1 * kN + 8 * 10), 8),
            pattern_word(alltoall_seed(7, 1, 2), 10));
}

TEST_F(GuestFabricTest, AlltoallCountsMismatchesAndTimesOut) {
  {
    FakeFabric fabric(3);
    std::thread other(other_vm, std::ref(fabric), 3, 1024, true);
    try {
      run(fabric, {0, 1}, {"alltoall", "--bytes-per-peer", "1024", "--salt", "3"});
      ADD_FAILURE() << "a corrupted word must fail alltoall";
    } catch (const CommandFailed& failed) {
      EXPECT_EQ(failed.result["mismatches"], 1);
    }
    other.join();
  }
  FakeFabric fabric(3);  // nobody else arrives
  try {
    run(fabric, {0, 1}, {"alltoall", "--bytes-per-peer", "1024", "--salt", "3"});
    FAIL() << "a barrier nobody else reaches must time out";
  } catch (const CommandError& error) {
    EXPECT_NE(std::string(error.what()).find("timed out"), std::string::npos);
  }
}

// The sysfs path: BAR 4 as a resource file, reached through EthxGpu's mapping.
TEST_F(GuestToolsTest, WindowCommandsGoThroughResource4) {
  const fs::path dir = devices_ / "0000:00:06.0";
  std::vector<std::uint8_t> bar0 = control_bar(1);
  const std::uint32_t v2[] = {2};
  std::memcpy(bar0.data() + kVersion.offset, v2, 4);
  const std::uint32_t status[] = {kStatusFabricUp};
  std::memcpy(bar0.data() + kStatus.offset, status, 4);
  const std::uint32_t geometry[] = {2, 1, 1};  // GPU_COUNT, APERTURE_MIB, HBM_MIB
  std::memcpy(bar0.data() + kGpuCount.offset, geometry, sizeof geometry);
  add_function(devices_, "0000:00:06.0", "0x1234", "0xe7e0", bar0);
  std::ofstream(dir / "resource4", std::ios::binary).flush();
  fs::resize_file(dir / "resource4", 2 * kMiB);

  const auto store = run_command(parse_command_line({"store", "--gpu", "1", "--target", "1",
                                                     "--offset", "8", "--value", "0x1234abcd"}),
                                 devices_);
  EXPECT_EQ(store["addr"], kMiB + 8);
  std::ifstream window(dir / "resource4", std::ios::binary);
  window.seekg(static_cast<std::streamoff>(kMiB + 8));
  std::uint64_t stored = 0;
  window.read(reinterpret_cast<char*>(&stored), 8);
  EXPECT_EQ(stored, 0x1234abcdu);
  const auto load = run_command(
      parse_command_line({"load", "--gpu", "1", "--addr", std::to_string(kMiB + 8)}), devices_);
  EXPECT_EQ(load["value"], 0x1234abcd);
  EXPECT_EQ(load["error"], 0);
  // Version 1 devices (GPUs 3 and 5 here) have no window.
  EXPECT_THROW(run_command(parse_command_line({"load", "--gpu", "3", "--addr", "0"}), devices_),
               CommandError);
}

}  // namespace
}  // namespace ethx::guest
