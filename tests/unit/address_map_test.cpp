#include "address-map/address_map.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "address-map/config_error.hpp"
#include "address-map/fabric_types.hpp"

namespace ethx {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kMaxAddr = std::numeric_limits<std::uint64_t>::max();

// The message of the ConfigError `build_fn` throws, or "" if it throws none.
std::string config_error_of(const std::function<void()>& build_fn) {
  try {
    build_fn();
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

Window make_window(std::string name, std::uint64_t window_offset, std::uint64_t size_bytes,
                   GpuId dst_gpu, std::uint64_t remote_base = 0, Rights rights = kRightAll) {
  Window window;
  window.name = std::move(name);
  window.window_offset = window_offset;
  window.size_bytes = size_bytes;
  window.dst_gpu = dst_gpu;
  window.remote_base = remote_base;
  window.rights = rights;
  return window;
}

// 4 GPUs with 64 MiB each behind 256 MiB apertures: windows separated by 192 MiB gaps.
AddressMap gapped_default_map() {
  return AddressMap::build(AddressMap::default_layout(4, 256 * kMiB, 64 * kMiB, kRightAll),
                           std::vector<std::uint64_t>(4, 64 * kMiB));
}

// ---- parse_rights / rights_to_string -------------------------------------------------------

TEST(RightsText, ParsesSubsetsInAnyOrder) {
  Rights rights = kRightNone;
  ASSERT_TRUE(parse_rights("rwa", rights));
  EXPECT_EQ(rights, kRightAll);
  ASSERT_TRUE(parse_rights("aw", rights));
  EXPECT_EQ(rights, kRightWrite | kRightAtomic);
  ASSERT_TRUE(parse_rights("r", rights));
  EXPECT_EQ(rights, kRightRead);
  ASSERT_TRUE(parse_rights("r-a", rights));
  EXPECT_EQ(rights, kRightRead | kRightAtomic);
}

TEST(RightsText, DashAndEmptyMeanNone) {
  Rights rights = kRightAll;
  ASSERT_TRUE(parse_rights("-", rights));
  EXPECT_EQ(rights, kRightNone);
  rights = kRightAll;
  ASSERT_TRUE(parse_rights("", rights));
  EXPECT_EQ(rights, kRightNone);
  rights = kRightAll;
  ASSERT_TRUE(parse_rights("---", rights));
  EXPECT_EQ(rights, kRightNone);
}

TEST(RightsText, RejectsOtherCharactersAndLeavesOutputAlone) {
  for (const char* text : {"x", "rwx", "R", " r", "r w", "rw\n"}) {
    Rights rights = kRightWrite;
    EXPECT_FALSE(parse_rights(text, rights)) << text;
    EXPECT_EQ(rights, kRightWrite) << text;
  }
}

TEST(RightsText, FormatsCanonically) {
  EXPECT_EQ(rights_to_string(kRightNone), "---");
  EXPECT_EQ(rights_to_string(kRightAll), "rwa");
  EXPECT_EQ(rights_to_string(static_cast<Rights>(kRightRead | kRightAtomic)), "r-a");
  EXPECT_EQ(rights_to_string(kRightWrite), "-w-");
}

TEST(RightsText, RoundTripsEveryRightsValue) {
  for (unsigned bits = 0; bits <= kRightAll; ++bits) {
    const auto rights = static_cast<Rights>(bits);
    Rights parsed = kRightNone;
    ASSERT_TRUE(parse_rights(rights_to_string(rights), parsed)) << bits;
    EXPECT_EQ(parsed, rights) << bits;
  }
}

// ---- default_layout -------------------------------------------------------------------------

TEST(DefaultLayout, PlacesOneWindowPerGpuIncludingTheRequester) {
  const auto windows = AddressMap::default_layout(3, kGiB, 512 * kMiB, kRightRead);
  ASSERT_EQ(windows.size(), 3u);
  for (std::size_t k = 0; k < windows.size(); ++k) {
    EXPECT_EQ(windows[k].name, "gpu" + std::to_string(k));
    EXPECT_EQ(windows[k].window_offset, k * kGiB);
    EXPECT_EQ(windows[k].size_bytes, 512 * kMiB);
    EXPECT_EQ(windows[k].dst_gpu, k);
    EXPECT_EQ(windows[k].remote_base, 0u);
    EXPECT_EQ(windows[k].rights, kRightRead);
  }
}

TEST(DefaultLayout, ZeroGpusGivesAnEmptyTable) {
  EXPECT_TRUE(AddressMap::default_layout(0, kGiB, kGiB, kRightAll).empty());
}

TEST(DefaultLayout, RejectsHbmLargerThanAperture) {
  const auto message =
      config_error_of([] { AddressMap::default_layout(2, kGiB, kGiB + 4096, kRightAll); });
  EXPECT_TRUE(contains(message, "fabric.hbm_bytes"));
  EXPECT_TRUE(contains(message, "fabric.aperture_bytes"));
}

TEST(DefaultLayout, RejectsZeroAperture) {
  EXPECT_TRUE(contains(config_error_of([] { AddressMap::default_layout(2, 0, 0, kRightAll); }),
                       "fabric.aperture_bytes"));
}

TEST(DefaultLayout, RejectsApertureNotAMultipleOfAPage) {
  EXPECT_TRUE(
      contains(config_error_of([] { AddressMap::default_layout(2, kGiB + 1, 4096, kRightAll); }),
               "fabric.aperture_bytes"));
}

TEST(DefaultLayout, RejectsZeroHbm) {
  EXPECT_TRUE(contains(config_error_of([] { AddressMap::default_layout(2, kGiB, 0, kRightAll); }),
                       "fabric.hbm_bytes"));
}

TEST(DefaultLayout, RejectsApertureTimesGpuCountPastTheLargestBar) {
  EXPECT_TRUE(contains(config_error_of([] {
                         AddressMap::default_layout(3, std::uint64_t{1} << 62, 4096, kRightAll);
                       }),
                       "fabric.aperture_bytes"));
}

// ---- build: accepted tables ------------------------------------------------------------------

TEST(Build, DefaultLayoutAddressesAndSizes) {
  const AddressMap map = gapped_default_map();
  ASSERT_EQ(map.windows().size(), 4u);
  EXPECT_EQ(map.windows()[3].window_offset, 3 * 256 * kMiB);
  EXPECT_EQ(map.span_bytes(), 3 * 256 * kMiB + 64 * kMiB);
  EXPECT_EQ(map.bar_bytes(), kGiB);
}

TEST(Build, SortsWindowsByOffset) {
  const AddressMap map = AddressMap::build(
      {make_window("high", 0x3000, 0x1000, 0), make_window("low", 0x1000, 0x1000, 1)},
      {0x10000, 0x10000});
  ASSERT_EQ(map.windows().size(), 2u);
  EXPECT_EQ(map.windows()[0].name, "low");
  EXPECT_EQ(map.windows()[1].name, "high");
  std::vector<Segment> segments;
  ASSERT_TRUE(map.translate(0x3000, 4, Access::kRead, segments).ok());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].window_index, 1u);
}

TEST(Build, BarBytesIsAtLeastOnePageAndAPowerOfTwo) {
  EXPECT_EQ(AddressMap{}.span_bytes(), 0u);
  EXPECT_EQ(AddressMap{}.bar_bytes(), 4096u);
  const AddressMap tiny = AddressMap::build({make_window("w", 0, 16, 0)}, {4096});
  EXPECT_EQ(tiny.span_bytes(), 16u);
  EXPECT_EQ(tiny.bar_bytes(), 4096u);
  const AddressMap odd = AddressMap::build({make_window("w", 0x5000, 0x1000, 0)}, {0x1000});
  EXPECT_EQ(odd.span_bytes(), 0x6000u);
  EXPECT_EQ(odd.bar_bytes(), 0x8000u);
}

TEST(Build, AcceptsAdjacentWindowsAndAWindowEndingAtTheLargestBar) {
  const std::uint64_t top = std::uint64_t{1} << 63;
  const AddressMap map = AddressMap::build(
      {make_window("a", 0, 0x1000, 0), make_window("b", 0x1000, 0x1000, 0, 0x1000),
       make_window("top", top - 0x1000, 0x1000, 0)},
      {0x2000});
  EXPECT_EQ(map.span_bytes(), top);
  EXPECT_EQ(map.bar_bytes(), top);
}

// ---- build: config errors --------------------------------------------------------------------

TEST(BuildErrors, ZeroSizeNamesTheWindow) {
  const auto message =
      config_error_of([] { AddressMap::build({make_window("gpu3", 0x1000, 0, 0)}, {4096}); });
  EXPECT_TRUE(contains(message, "gpu3"));
  EXPECT_TRUE(contains(message, "size_bytes"));
}

TEST(BuildErrors, UnnamedWindowIsNamedByItsIndex) {
  const auto message = config_error_of([] {
    AddressMap::build({make_window("ok", 0, 0x1000, 0), make_window("", 0x1000, 0, 0)}, {4096});
  });
  EXPECT_TRUE(contains(message, "window #1"));
}

TEST(BuildErrors, OffsetPlusSizeOverflowNamesTheWindow) {
  const auto message = config_error_of(
      [] { AddressMap::build({make_window("wrap", kMaxAddr - 0xfff, 0x1000, 0)}, {0x1000}); });
  EXPECT_TRUE(contains(message, "wrap"));
  EXPECT_TRUE(contains(message, "overflow"));
}

TEST(BuildErrors, WindowEndingPastTheLargestBarNamesTheWindow) {
  const std::uint64_t top = std::uint64_t{1} << 63;
  const auto message = config_error_of(
      [=] { AddressMap::build({make_window("huge", top - 0x1000, 0x2000, 0)}, {0x2000}); });
  EXPECT_TRUE(contains(message, "huge"));
}

TEST(BuildErrors, OverlapNamesBothWindowsAndTheirHexRanges) {
  const auto message = config_error_of([] {
    AddressMap::build(
        {make_window("second", 0x1800, 0x1000, 1), make_window("first", 0x1000, 0x1000, 0)},
        {0x1000, 0x1000});
  });
  EXPECT_TRUE(contains(message, "'first' [0x1000, 0x2000)"));
  EXPECT_TRUE(contains(message, "'second' [0x1800, 0x2800)"));
}

TEST(BuildErrors, WindowsWithTheSameOffsetOverlap) {
  const auto message = config_error_of([] {
    AddressMap::build({make_window("a", 0, 0x1000, 0), make_window("b", 0, 0x10, 0)}, {0x1000});
  });
  EXPECT_TRUE(contains(message, "'a'"));
  EXPECT_TRUE(contains(message, "'b'"));
}

TEST(BuildErrors, DstGpuOutOfRangeNamesTheWindow) {
  const auto message = config_error_of([] {
    AddressMap::build({make_window("gpu2", 0, 0x1000, 2)}, {0x1000, 0x1000});
  });
  EXPECT_TRUE(contains(message, "gpu2"));
  EXPECT_TRUE(contains(message, "dst_gpu 2"));
}

TEST(BuildErrors, UnsetDstGpuIsRejected) {
  const auto message = config_error_of(
      [] { AddressMap::build({make_window("unset", 0, 0x1000, kInvalidGpu)}, {0x1000}); });
  EXPECT_TRUE(contains(message, "unset"));
}

TEST(BuildErrors, RemoteRangePastGpuMemoryNamesTheWindow) {
  const auto message = config_error_of([] {
    AddressMap::build({make_window("gpu1", 0, 0x1000, 1, 0x800)}, {0x10000, 0x1000});
  });
  EXPECT_TRUE(contains(message, "gpu1"));
  EXPECT_TRUE(contains(message, "remote_base 0x800 + size_bytes 0x1000"));
}

TEST(BuildErrors, RemoteBaseNearUint64MaxDoesNotWrapPastTheCheck) {
  const auto message = config_error_of(
      [] { AddressMap::build({make_window("far", 0, 0x1000, 0, kMaxAddr - 0x10)}, {0x2000}); });
  EXPECT_TRUE(contains(message, "far"));
}

TEST(BuildErrors, GpuMemoryBeyondTheFabricOffsetSpaceIsRejected) {
  const auto message = config_error_of(
      [] { AddressMap::build({make_window("w", 0, 0x1000, 0)}, {(std::uint64_t{1} << 40) + 1}); });
  EXPECT_TRUE(contains(message, "GPU 0"));
}

// ---- translate ------------------------------------------------------------------------------

TEST(Translate, FirstByteOfAWindow) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  const auto result = map.translate(2 * 256 * kMiB, 8, Access::kRead, segments);
  ASSERT_TRUE(result.ok()) << to_string(result.error);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].window_addr, 2 * 256 * kMiB);
  EXPECT_EQ(segments[0].dst_gpu, 2);
  EXPECT_EQ(segments[0].remote_addr, 0u);
  EXPECT_EQ(segments[0].length, 8u);
  EXPECT_EQ(segments[0].window_index, 2u);
}

TEST(Translate, LastByteOfAWindow) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  const std::uint64_t last = 256 * kMiB + 64 * kMiB - 1;
  ASSERT_TRUE(map.translate(last, 1, Access::kWrite, segments).ok());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].dst_gpu, 1);
  EXPECT_EQ(segments[0].remote_addr, 64 * kMiB - 1);
  EXPECT_EQ(segments[0].length, 1u);
}

TEST(Translate, FirstByteAfterAWindowIsOutOfWindow) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  const auto result = map.translate(64 * kMiB, 1, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, 64 * kMiB);
}

TEST(Translate, CrossingABoundarySplitsIntoTwoSegments) {
  // Two windows back to back in window space, landing at unrelated remote offsets.
  const AddressMap map = AddressMap::build(
      {make_window("a", 0x10000, 0x1000, 0, 0x5000), make_window("b", 0x11000, 0x1000, 1, 0x200)},
      {0x10000, 0x10000});
  std::vector<Segment> segments;
  const auto result = map.translate(0x10ffc, 8, Access::kAtomic, segments);
  ASSERT_TRUE(result.ok()) << to_string(result.error);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].window_addr, 0x10ffcu);
  EXPECT_EQ(segments[0].dst_gpu, 0);
  EXPECT_EQ(segments[0].remote_addr, 0x5ffcu);
  EXPECT_EQ(segments[0].length, 4u);
  EXPECT_EQ(segments[0].window_index, 0u);
  EXPECT_EQ(segments[1].window_addr, 0x11000u);
  EXPECT_EQ(segments[1].dst_gpu, 1);
  EXPECT_EQ(segments[1].remote_addr, 0x200u);
  EXPECT_EQ(segments[1].length, 4u);
  EXPECT_EQ(segments[1].window_index, 1u);
}

TEST(Translate, SpanningThreeWindowsCoversEveryByteOnce) {
  const AddressMap map =
      AddressMap::build(AddressMap::default_layout(3, 4096, 4096, kRightAll), {4096, 4096, 4096});
  std::vector<Segment> segments;
  ASSERT_TRUE(map.translate(4000, 4096 + 200, Access::kRead, segments).ok());
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0].length, 96u);
  EXPECT_EQ(segments[1].length, 4096u);
  EXPECT_EQ(segments[2].length, 104u);
  EXPECT_EQ(segments[2].remote_addr, 0u);
  EXPECT_EQ(segments[2].dst_gpu, 2);
}

TEST(Translate, CrossingIntoAGapFaultsAtTheFirstGapByteAndClearsOutput) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments(3, Segment{1, 1, 1, 1, 1});
  const auto result = map.translate(64 * kMiB - 4, 16, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, 64 * kMiB);
  EXPECT_TRUE(segments.empty());
}

TEST(Translate, AddressBeforeTheFirstWindowIsOutOfWindow) {
  const AddressMap map = AddressMap::build({make_window("w", 0x2000, 0x1000, 0)}, {0x1000});
  std::vector<Segment> segments;
  const auto result = map.translate(0x1ff0, 0x20, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, 0x1ff0u);
}

TEST(Translate, CrossingIntoAWindowWithoutTheRightIsNoRights) {
  const AddressMap map = AddressMap::build(
      {make_window("rw", 0, 0x1000, 0, 0, static_cast<Rights>(kRightRead | kRightWrite)),
       make_window("ro", 0x1000, 0x1000, 1, 0, kRightRead)},
      {0x1000, 0x1000});
  std::vector<Segment> segments(1, Segment{1, 1, 1, 1, 1});
  const auto write = map.translate(0xff8, 16, Access::kWrite, segments);
  EXPECT_EQ(write.error, TranslateError::kNoRights);
  EXPECT_EQ(write.fault_addr, 0x1000u);
  EXPECT_TRUE(segments.empty());

  // The same bytes are readable, and an atomic already fails in the first window.
  EXPECT_TRUE(map.translate(0xff8, 16, Access::kRead, segments).ok());
  const auto atomic = map.translate(0xff8, 16, Access::kAtomic, segments);
  EXPECT_EQ(atomic.error, TranslateError::kNoRights);
  EXPECT_EQ(atomic.fault_addr, 0xff8u);
  EXPECT_TRUE(segments.empty());
}

TEST(Translate, FirstFailingByteWinsBetweenNoRightsAndGap) {
  // A gap after a read-only window: a write faults on rights before it ever reaches the gap.
  const AddressMap map = AddressMap::build(
      {make_window("rw", 0, 0x1000, 0), make_window("ro", 0x1000, 0x1000, 0, 0, kRightRead)},
      {0x1000});
  std::vector<Segment> segments;
  const auto write = map.translate(0x800, 0x2000, Access::kWrite, segments);
  EXPECT_EQ(write.error, TranslateError::kNoRights);
  EXPECT_EQ(write.fault_addr, 0x1000u);
  const auto read = map.translate(0x800, 0x2000, Access::kRead, segments);
  EXPECT_EQ(read.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(read.fault_addr, 0x2000u);
}

TEST(Translate, ZeroLengthIsRejected) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments(1, Segment{1, 1, 1, 1, 1});
  const auto result = map.translate(0, 0, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kZeroLength);
  EXPECT_TRUE(segments.empty());
}

TEST(Translate, EmptyMapIsAlwaysOutOfWindow) {
  const AddressMap map;
  std::vector<Segment> segments;
  const auto result = map.translate(0, 4, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, 0u);
}

TEST(Translate, AddressesNearUint64MaxDoNotOverflow) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  auto result = map.translate(kMaxAddr, 1, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, kMaxAddr);

  result = map.translate(kMaxAddr - 3, 100, Access::kRead, segments);  // end wraps past 2^64
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, kMaxAddr - 3);

  result = map.translate(kMaxAddr, kMaxAddr, Access::kWrite, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, kMaxAddr);
}

TEST(Translate, HugeLengthFromAValidAddressFaultsAtTheWindowEnd) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  const auto result = map.translate(3 * 256 * kMiB + 8, kMaxAddr, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, map.span_bytes());
  EXPECT_TRUE(segments.empty());
}

TEST(Translate, TopmostWindowUpToTheLargestBarTranslates) {
  const std::uint64_t top = std::uint64_t{1} << 63;
  const AddressMap map = AddressMap::build({make_window("top", top - 0x1000, 0x1000, 0)}, {0x1000});
  std::vector<Segment> segments;
  ASSERT_TRUE(map.translate(top - 4, 4, Access::kRead, segments).ok());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].remote_addr, 0xffcu);
  const auto result = map.translate(top - 4, kMaxAddr, Access::kRead, segments);
  EXPECT_EQ(result.error, TranslateError::kOutOfWindow);
  EXPECT_EQ(result.fault_addr, top);
}

TEST(Translate, PieceLongerThanMaxSegmentIsCutToFitSegmentLength) {
  const std::uint64_t size_bytes = 3 * kMaxSegmentBytes;
  const AddressMap map = AddressMap::build({make_window("big", 0, size_bytes, 0)}, {size_bytes});
  std::vector<Segment> segments;
  ASSERT_TRUE(map.translate(0x10, size_bytes - 0x10, Access::kRead, segments).ok());
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0].length, kMaxSegmentBytes);
  EXPECT_EQ(segments[1].window_addr, 0x10 + kMaxSegmentBytes);
  EXPECT_EQ(segments[1].remote_addr, 0x10 + kMaxSegmentBytes);
  EXPECT_EQ(segments[2].length, kMaxSegmentBytes - 0x10);
}

TEST(Translate, ReusedOutputVectorIsClearedFirst) {
  const AddressMap map = gapped_default_map();
  std::vector<Segment> segments;
  ASSERT_TRUE(map.translate(0, 4, Access::kRead, segments).ok());
  ASSERT_TRUE(map.translate(256 * kMiB, 4, Access::kRead, segments).ok());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].dst_gpu, 1);
}

TEST(TranslateErrorText, EveryErrorHasADistinctName) {
  EXPECT_STREQ(to_string(TranslateError::kNone), "none");
  EXPECT_STREQ(to_string(TranslateError::kZeroLength), "zero length");
  EXPECT_STREQ(to_string(TranslateError::kOutOfWindow), "out of window");
  EXPECT_STREQ(to_string(TranslateError::kNoRights), "no rights");
}

}  // namespace
}  // namespace ethx
