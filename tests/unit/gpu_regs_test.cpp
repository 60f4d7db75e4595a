// The ethx-gpu register map (qemu-device/ethx_gpu_regs.h) holds together: registers do not
// overlap and are naturally aligned, the counters are one block, every status code and ERROR bit
// has a name in the guest tools, and the guest tools' registers are the header's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "qemu-device/ethx_gpu_regs.h"
#include "qemu-device/guest-tools/ethx_regs.hpp"

namespace ethx {
namespace {

struct RegisterRow {
  std::string name;
  std::uint64_t offset;
  unsigned width;
  ethx_reg_access access;
};

std::vector<RegisterRow> register_rows() {
#define ETHX_TEST_ROW(NAME, offset, width, access) \
  RegisterRow{#NAME, offset, width, ETHX_ACCESS_##access},
  return {ETHX_GPU_REGISTERS(ETHX_TEST_ROW)};
#undef ETHX_TEST_ROW
}

const RegisterRow* row_at(std::uint64_t offset) {
  static const std::vector<RegisterRow> rows = register_rows();
  const auto found = std::find_if(rows.begin(), rows.end(),
                                  [&](const RegisterRow& row) { return row.offset == offset; });
  return found == rows.end() ? nullptr : &*found;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

TEST(GpuRegisterMap, RegistersAreAlignedInOrderAndDoNotOverlap) {
  const std::vector<RegisterRow> rows = register_rows();
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().offset, 0u);  // IDENT first: what a probe reads
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RegisterRow& row = rows[i];
    EXPECT_TRUE(row.width == 4 || row.width == 8) << row.name;
    EXPECT_EQ(row.offset % row.width, 0u) << row.name << " is not aligned to its width";
    EXPECT_LE(row.offset + row.width, std::uint64_t{ETHX_GPU_CTRL_BAR_BYTES}) << row.name;
    if (i + 1 < rows.size()) {
      EXPECT_LE(row.offset + row.width, rows[i + 1].offset)
          << row.name << " overlaps " << rows[i + 1].name;
    }
  }
}

TEST(GpuRegisterMap, CountersAreOneBlockOfSixtyFourBitRegisters) {
  EXPECT_EQ(ETHX_REG_COUNTERS, ETHX_REG_CNT_LOADS);
  EXPECT_EQ(ETHX_REG_COUNTERS_END, int{ETHX_REG_CNT_COPY_BYTES} + ETHX_REG_CNT_COPY_BYTES_WIDTH);
  for (unsigned i = 0; i < ETHX_GPU_COUNTER_COUNT; ++i) {
    const RegisterRow* row = row_at(ETHX_REG_COUNTERS + 8 * i);
    ASSERT_NE(row, nullptr) << "no counter " << i;
    EXPECT_EQ(row->width, 8u) << row->name;
    EXPECT_EQ(row->access, ETHX_ACCESS_RO) << row->name;
  }
}

TEST(GpuRegisterMap, DoorbellsAreWriteOnlyAndErrorIsWriteOneToClear) {
  EXPECT_EQ(row_at(ETHX_REG_ATOMIC_CMD)->access, ETHX_ACCESS_WO);
  EXPECT_EQ(row_at(ETHX_REG_COPY_CMD)->access, ETHX_ACCESS_WO);
  EXPECT_EQ(row_at(ETHX_REG_ERROR)->access, ETHX_ACCESS_RW1C);
  EXPECT_EQ(row_at(ETHX_REG_IDENT)->access, ETHX_ACCESS_RO);
}

TEST(GpuRegisterMap, EveryStatusCodeAndErrorBitHasAName) {
  ASSERT_EQ(guest::kStatusCodeNames.size(), std::size_t{ETHX_GPU_STATUS_COUNT});
  EXPECT_EQ(ETHX_GPU_INTERNAL + 1, ETHX_GPU_STATUS_COUNT);  // the last code
  for (const char* name : guest::kStatusCodeNames) EXPECT_NE(name, nullptr);
  EXPECT_STREQ(guest::kStatusCodeNames[ETHX_GPU_REMOTE_ERROR], "remote_error");

  ASSERT_EQ(guest::kErrorBitNames.size(), std::size_t{ETHX_ERROR_BIT_COUNT});
  for (const char* name : guest::kErrorBitNames) EXPECT_NE(name, nullptr);
  const std::uint32_t bits[] = {
      ETHX_ERROR_BAD_REGISTER, ETHX_ERROR_OUT_OF_WINDOW, ETHX_ERROR_NO_RIGHTS,
      ETHX_ERROR_TIMEOUT,      ETHX_ERROR_REMOTE_ERROR,  ETHX_ERROR_BAD_WIDTH,
      ETHX_ERROR_UNREACHABLE,  ETHX_ERROR_NO_FABRIC,     ETHX_ERROR_COPY_BUSY};
  std::uint32_t all = 0;
  for (std::uint32_t bit : bits) {
    EXPECT_EQ(all & bit, 0u) << "two ERROR bits share bit " << bit;
    all |= bit;
  }
  EXPECT_EQ(all, (1u << ETHX_ERROR_BIT_COUNT) - 1);  // bits 0..count-1, no gap
}

TEST(GpuRegisterMap, AFailedAccessLatchesTheErrorBitOfItsStatusCode) {
  for (int code = ETHX_GPU_OUT_OF_WINDOW; code <= ETHX_GPU_UNREACHABLE; ++code) {
    EXPECT_EQ(ethx_error_bit_of_status(code), 1u << code);
    EXPECT_STREQ(guest::kErrorBitNames[code], guest::kStatusCodeNames[code]) << code;
  }
  EXPECT_EQ(ethx_error_bit_of_status(ETHX_GPU_INTERNAL), ETHX_ERROR_BAD_REGISTER);
}

TEST(GpuRegisterMap, CommandAndCopyStatusFieldsRoundTrip) {
  const std::uint32_t command = ETHX_ATOMIC_CMD(ETHX_GPU_COMPARE_SWAP, 8u);
  EXPECT_EQ(command & ETHX_ATOMIC_CMD_OP_MASK, std::uint32_t{ETHX_GPU_COMPARE_SWAP});
  EXPECT_EQ(command >> ETHX_ATOMIC_CMD_WIDTH_SHIFT & ETHX_ATOMIC_CMD_WIDTH_MASK, 8u);
  EXPECT_EQ(guest::atomic_command(guest::AtomicOp::kSwap, 4), ETHX_ATOMIC_CMD(ETHX_GPU_SWAP, 4u));

  const std::uint32_t failed =
      ETHX_COPY_FAILED | (std::uint32_t{ETHX_GPU_TIMEOUT} << ETHX_COPY_STATUS_CODE_SHIFT);
  EXPECT_EQ(guest::copy_state(failed), guest::kCopyFailed);
  EXPECT_EQ(guest::copy_code(failed), std::uint32_t{ETHX_GPU_TIMEOUT});
  EXPECT_LE(std::uint32_t{ETHX_COPY_FAILED}, ETHX_COPY_STATUS_STATE_MASK);
  EXPECT_LE(std::uint32_t{ETHX_GPU_STATUS_COUNT - 1}, ETHX_COPY_STATUS_CODE_MASK);
}

// FLUSH (version 3) is read for its side effect: it waits for the GPU's posted stores. So it is
// a 4-byte read-only status register that nothing reads by accident: the guest tools' `status`
// does not print it.
TEST(GpuRegisterMap, FlushIsAReadOnlyStatusRegisterOfVersionThreeThatStatusDoesNotRead) {
  EXPECT_GE(ETHX_REGISTER_MAP_VERSION, 3u);
  const RegisterRow* flush = row_at(ETHX_REG_FLUSH);
  ASSERT_NE(flush, nullptr);
  EXPECT_EQ(flush->width, 4u);
  EXPECT_EQ(flush->access, ETHX_ACCESS_RO);
  for (const guest::Register& reg : guest::kControlRegisters) {
    EXPECT_NE(reg.offset, std::uint64_t{ETHX_REG_FLUSH}) << reg.name;
  }
  for (const guest::Register& reg : guest::kControlRegistersV2) {
    EXPECT_NE(reg.offset, std::uint64_t{ETHX_REG_FLUSH}) << reg.name;
  }
}

TEST(GpuRegisterMap, GuestToolsPrintTheHeadersRegistersByTheirOwnNames) {
  std::set<std::uint64_t> seen;
  auto check = [&](const guest::Register& reg) {
    const RegisterRow* row = row_at(reg.offset);
    ASSERT_NE(row, nullptr) << reg.name;
    EXPECT_EQ(reg.width, row->width) << reg.name;
    EXPECT_EQ(reg.name, lower(row->name));
    EXPECT_NE(row->access, ETHX_ACCESS_WO) << reg.name << " is printed but write-only";
    EXPECT_TRUE(seen.insert(reg.offset).second) << reg.name << " is listed twice";
  };
  for (const guest::Register& reg : guest::kControlRegisters) check(reg);
  for (const guest::Register& reg : guest::kControlRegistersV2) check(reg);
}

}  // namespace
}  // namespace ethx
