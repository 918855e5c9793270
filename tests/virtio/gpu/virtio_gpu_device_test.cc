// virtio_gpu_device_test.cc - VirtioGpuDevice through the VirtioDevice interface only: the
// test is the transport (GpuDriver), the requests are the spec's structures in bytes.
#include "virtio/gpu/virtio_gpu_device.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>

#include "gpu_driver.h"
#include "png_decode.h"
#include "virtio/gpu/edid.h"
#include "virtio/gpu/scanout_png.h"

namespace dxpu::virtio::gpu::test {
namespace {

std::vector<uint8_t> Image(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// B8G8R8X8 (Linux's XRGB8888) pixels as the scanout holds them: R, G, B, 255.
std::vector<uint8_t> BgrxToRgba(const std::vector<uint8_t>& bgrx) {
  std::vector<uint8_t> out(bgrx.size());
  for (size_t i = 0; i < bgrx.size(); i += 4) {
    out[i] = bgrx[i + 2];
    out[i + 1] = bgrx[i + 1];
    out[i + 2] = bgrx[i];
    out[i + 3] = 0xff;
  }
  return out;
}

// ---- identity and configuration ----

TEST(VirtioGpuDevice, IdentityQueuesAndConfig) {
  GpuDriver d;
  VirtioDevice& dev = d.device;
  EXPECT_EQ(dev.device_id(), 16);
  EXPECT_EQ(dev.kind(), "virtio-gpu");
  EXPECT_EQ(dev.device_features(), kFeatureEdid);  // no VIRGL, no blob, no context init
  EXPECT_EQ(dev.num_queues(), 2);
  for (uint16_t q = 0; q < 2; ++q) {
    const uint16_t size = dev.queue_max_size(q);
    EXPECT_GT(size, 0);
    EXPECT_EQ(size & (size - 1), 0) << "queue " << q << " size not a power of two";
  }
  EXPECT_EQ(dev.queue_max_size(2), 0);
  EXPECT_EQ(dev.config_size(), 16u);
  EXPECT_EQ(dev.ReadConfig(kConfigEventsRead, 4), 0u);
  EXPECT_EQ(dev.ReadConfig(kConfigEventsClear, 4), 0u);
  EXPECT_EQ(dev.ReadConfig(kConfigNumScanouts, 4), 1u);
  EXPECT_EQ(dev.ReadConfig(kConfigNumScanouts, 1), 1u);
  EXPECT_EQ(dev.ReadConfig(kConfigNumScanouts, 2), 1u);
  EXPECT_EQ(dev.ReadConfig(kConfigNumCapsets, 4), 0u);
  EXPECT_EQ(dev.memory_bytes(), uint64_t{256} << 20);
  // Out of range or odd sizes read 0 and are counted when written.
  EXPECT_EQ(dev.ReadConfig(16, 1), 0u);
  EXPECT_EQ(dev.ReadConfig(14, 4), 0u);
  EXPECT_EQ(dev.ReadConfig(8, 3), 0u);
  EXPECT_EQ(dev.ReadConfig(UINT32_MAX, 4), 0u);
  dev.WriteConfig(15, 4, 0xffffffff);
  dev.WriteConfig(8, 8, 1);
  EXPECT_EQ(d.Counter("bad_config_accesses"), 2u);
  dev.WriteConfig(kConfigNumScanouts, 4, 5);  // read-only: ignored
  EXPECT_EQ(dev.ReadConfig(kConfigNumScanouts, 4), 1u);
}

TEST(VirtioGpuDevice, DisplayEventIsWriteOneToClear) {
  GpuDriver d;
  d.device.ResizeDisplay(800, 600);
  d.Run();
  EXPECT_EQ(d.config_changes, 1);
  EXPECT_EQ(d.device.ReadConfig(kConfigEventsRead, 4), kEventDisplay);
  d.device.WriteConfig(kConfigEventsClear, 4, 0);  // writing 0 clears nothing
  EXPECT_EQ(d.device.ReadConfig(kConfigEventsRead, 4), kEventDisplay);
  d.device.WriteConfig(kConfigEventsRead, 4, kEventDisplay);  // events_read is read-only
  EXPECT_EQ(d.device.ReadConfig(kConfigEventsRead, 4), kEventDisplay);
  d.device.WriteConfig(kConfigEventsClear, 1, kEventDisplay);
  EXPECT_EQ(d.device.ReadConfig(kConfigEventsRead, 4), 0u);
  EXPECT_EQ(d.device.ReadConfig(kConfigEventsClear, 4), 0u);
  // The new mode is what display info reports.
  const auto info = d.Control(Wire().Hdr(kCmdGetDisplayInfo).bytes);
  EXPECT_EQ(Le32(info, kCtrlHdrSize + 8), 800u);
  EXPECT_EQ(Le32(info, kCtrlHdrSize + 12), 600u);
}

// ---- display info and EDID ----

TEST(VirtioGpuDevice, GetDisplayInfo) {
  GpuDriver d;
  const auto r = d.Control(Wire().Hdr(kCmdGetDisplayInfo).bytes);
  ASSERT_EQ(r.size(), kRespDisplayInfoSize);
  EXPECT_EQ(Le32(r, 0), kRespOkDisplayInfo);
  EXPECT_EQ(Le32(r, 4), 0u);  // no fence asked, none echoed
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 0), 0u);
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 4), 0u);
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 8), 1024u);
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 12), 768u);
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 16), 1u);  // enabled
  EXPECT_EQ(Le32(r, kCtrlHdrSize + 20), 0u);
  for (size_t i = kCtrlHdrSize + kDisplayOneSize; i < r.size(); ++i) {
    ASSERT_EQ(r[i], 0) << "scanouts 1..15 must be zero";
  }
  EXPECT_EQ(d.Counter("cmd_get_display_info"), 1u);
}

// Decodes the preferred detailed timing of an EDID block: active width and height.
std::pair<uint32_t, uint32_t> EdidActive(std::span<const uint8_t> e) {
  const uint8_t* t = &e[54];
  return {t[2] | (t[4] >> 4) << 8, t[5] | (t[7] >> 4) << 8};
}

TEST(VirtioGpuDevice, GetEdidIsAValidEdid14ForTheMode) {
  GpuDriver d;
  const auto r = d.Control(GetEdidCmd(0));
  ASSERT_EQ(r.size(), kRespEdidSize);
  EXPECT_EQ(Le32(r, 0), kRespOkEdid);
  ASSERT_EQ(Le32(r, kCtrlHdrSize), 128u);
  const std::span<const uint8_t> e(r.data() + kCtrlHdrSize + 8, 128);
  const uint8_t header[8] = {0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0};
  EXPECT_TRUE(std::equal(header, header + 8, e.begin()));
  EXPECT_EQ(std::accumulate(e.begin(), e.end(), 0u) % 256, 0u);
  EXPECT_EQ(e[18], 1);  // version 1.4
  EXPECT_EQ(e[19], 4);
  EXPECT_TRUE(e[20] & 0x80);  // digital input
  EXPECT_TRUE(e[24] & 0x02);  // 1.4: the preferred timing is the native mode
  EXPECT_EQ(e[126], 0);       // no extensions
  EXPECT_EQ(EdidActive(e), std::make_pair(1024u, 768u));
  const uint32_t clock = e[54] | e[55] << 8;  // 10 kHz units: about 56 MHz at 60 Hz
  EXPECT_GT(clock, 5000u);
  EXPECT_LT(clock, 6000u);
  // Everything after the block is zero.
  for (size_t i = kCtrlHdrSize + 8 + 128; i < r.size(); ++i) ASSERT_EQ(r[i], 0);
  EXPECT_EQ(d.Counter("cmd_get_edid"), 1u);
}

TEST(VirtioGpuDevice, EdidForLargeAndOddModes) {
  for (auto [w, h] : {std::pair{3840u, 2160u}, {4095u, 4095u}, {1u, 1u}, {1366u, 768u}}) {
    const auto e = BuildEdid(w, h);
    EXPECT_EQ(std::accumulate(e.begin(), e.end(), 0u) % 256, 0u) << w << "x" << h;
    EXPECT_EQ(EdidActive(e), std::make_pair(w, h));
    EXPECT_NE(e[54] | e[55] << 8, 0) << "pixel clock 0 marks a display descriptor";
  }
  // Past what a detailed timing can hold: clamped.
  EXPECT_EQ(EdidActive(BuildEdid(20000, 0)), std::make_pair(4095u, 1u));
}

TEST(VirtioGpuDevice, GetEdidErrors) {
  GpuDriver d;
  EXPECT_EQ(d.Status(GetEdidCmd(1)), kRespErrInvalidScanoutId);
  EXPECT_EQ(d.Status(GetEdidCmd(UINT32_MAX)), kRespErrInvalidScanoutId);
  // Without VIRTIO_GPU_F_EDID negotiated the command does not exist.
  d.device.Reset();
  d.device.SetDriverFeatures(0);
  d.device.Start();
  EXPECT_EQ(d.Status(GetEdidCmd(0)), kRespErrUnspec);
  EXPECT_EQ(d.Counter("err_invalid_scanout_id"), 2u);
}

// ---- the draw path ----

TEST(VirtioGpuDevice, DrawPathShowsWhatTheGuestWrote) {
  GpuDriver d;
  const uint32_t w = 64, h = 48;
  const auto image = Image(size_t{w} * h * 4, 1);
  // Five pieces of uneven length at scattered addresses: rows straddle them.
  d.MakeResource(1, kFormatB8G8R8X8, w, h, image, 5);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, w, h}, 0)), kRespOkNodata);
  EXPECT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, w, h})), kRespOkNodata);
  EXPECT_EQ(d.Status(Flush(1, {0, 0, w, h})), kRespOkNodata);
  const Scanout& s = d.device.scanout();
  ASSERT_TRUE(s.enabled);
  EXPECT_EQ(s.resource_id, 1u);
  EXPECT_EQ(s.width, w);
  EXPECT_EQ(s.height, h);
  EXPECT_EQ(s.rgba, BgrxToRgba(image));
  EXPECT_EQ(s.flushes, 1u);
  // Every read stays inside one backing piece (guest memory has gaps between them, so a
  // read across a boundary would have failed) and together they cover the image once.
  uint64_t read_bytes = 0;
  for (const GuestRead& r : d.all_reads) read_bytes += r.length;
  EXPECT_EQ(read_bytes, image.size());
  EXPECT_GE(d.all_reads.size(), 5u);
  EXPECT_EQ(d.Counter("bytes_transferred"), image.size());
  EXPECT_EQ(d.Counter("guest_reads"), d.all_reads.size());
  // The PNG of it decodes to the same pixels.
  const DecodedPng png = DecodeStoredPng(RenderScanoutPng(s));
  ASSERT_EQ(png.error, "");
  ASSERT_EQ(png.width, w);
  ASSERT_EQ(png.height, h);
  ASSERT_EQ(png.color_type, 2);
  for (size_t i = 0; i < size_t{w} * h; ++i) {
    ASSERT_EQ(png.pixels[i * 3 + 0], image[i * 4 + 2]) << "pixel " << i;
    ASSERT_EQ(png.pixels[i * 3 + 1], image[i * 4 + 1]) << "pixel " << i;
    ASSERT_EQ(png.pixels[i * 3 + 2], image[i * 4 + 0]) << "pixel " << i;
  }
}

TEST(VirtioGpuDevice, PartialTransferAndFlushTouchOnlyTheRectangle) {
  GpuDriver d;
  const uint32_t w = 40, h = 30, stride = w * 4;
  const auto first = Image(size_t{w} * h * 4, 2);
  d.MakeResource(7, kFormatB8G8R8X8, w, h, first, 3);
  ASSERT_EQ(d.Status(TransferCmd(7, {0, 0, w, h}, 0)), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 7, {0, 0, w, h})), kRespOkNodata);
  // SET_SCANOUT shows the resource as it is.
  EXPECT_EQ(d.device.scanout().rgba, BgrxToRgba(first));
  // The guest draws everything anew but transfers only a rectangle, and flushes a smaller one.
  const auto second = Image(size_t{w} * h * 4, 3);
  d.WriteGuestImage(7, second);
  const Rect t{5, 4, 20, 10};
  ASSERT_EQ(d.Status(TransferCmd(7, t, uint64_t{t.y} * stride + uint64_t{t.x} * 4)), kRespOkNodata);
  EXPECT_EQ(d.device.scanout().rgba, BgrxToRgba(first)) << "nothing shown before a flush";
  const Rect f{10, 6, 30, 20};  // overlaps the transferred rectangle and beyond it
  ASSERT_EQ(d.Status(Flush(7, f)), kRespOkNodata);
  const auto shown = d.device.scanout().rgba;
  const auto a = BgrxToRgba(first), b = BgrxToRgba(second);
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      const bool transferred = x >= t.x && x < t.x + t.width && y >= t.y && y < t.y + t.height;
      const bool flushed = x >= f.x && x < f.x + f.width && y >= f.y && y < f.y + f.height;
      const size_t i = (size_t{y} * w + x) * 4;
      const auto& want = (transferred && flushed) ? b : a;
      ASSERT_TRUE(std::equal(want.begin() + i, want.begin() + i + 4, shown.begin() + i))
          << "pixel " << x << "," << y;
    }
  }
  // The partial transfer read only its rectangle's rows: 10 rows of 80 bytes.
  EXPECT_EQ(d.Counter("bytes_transferred"), first.size() + size_t{10} * 80);
}

TEST(VirtioGpuDevice, ScanoutOfAPartOfTheResource) {
  GpuDriver d;
  const uint32_t w = 32, h = 32;
  const auto image = Image(size_t{w} * h * 4, 4);
  d.MakeResource(2, kFormatB8G8R8X8, w, h, image);
  ASSERT_EQ(d.Status(TransferCmd(2, {0, 0, w, h}, 0)), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 2, {8, 4, 16, 12})), kRespOkNodata);
  const Scanout& s = d.device.scanout();
  EXPECT_EQ(s.width, 16u);
  EXPECT_EQ(s.height, 12u);
  const auto all = BgrxToRgba(image);
  for (uint32_t y = 0; y < 12; ++y) {
    for (uint32_t x = 0; x < 16; ++x) {
      const size_t from = (size_t{y + 4} * w + x + 8) * 4, to = (size_t{y} * 16 + x) * 4;
      ASSERT_TRUE(std::equal(all.begin() + from, all.begin() + from + 4, s.rgba.begin() + to));
    }
  }
  // Resource 0 disables the scanout: black at the mode's size.
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 0, {0, 0, 0, 0})), kRespOkNodata);
  EXPECT_FALSE(s.enabled);
  EXPECT_TRUE(s.rgba.empty());
  const DecodedPng png = DecodeStoredPng(RenderScanoutPng(s));
  ASSERT_EQ(png.error, "");
  EXPECT_EQ(png.width, 1024u);
  EXPECT_EQ(png.height, 768u);
  EXPECT_EQ(std::count(png.pixels.begin(), png.pixels.end(), 0), 1024 * 768 * 3);
  // A flush of a resource no scanout shows is fine and shows nothing.
  EXPECT_EQ(d.Status(Flush(2, {0, 0, w, h})), kRespOkNodata);
  EXPECT_EQ(s.flushes, 0u);
}

TEST(VirtioGpuDevice, EveryFormatConvertsToRgba) {
  // One pixel with bytes 0x11 0x22 0x33 0x44 in memory, and what each format makes of it.
  struct Case {
    uint32_t format;
    std::array<uint8_t, 4> rgba;
  };
  const Case cases[] = {
      {kFormatB8G8R8A8, {0x33, 0x22, 0x11, 0x44}}, {kFormatB8G8R8X8, {0x33, 0x22, 0x11, 0xff}},
      {kFormatA8R8G8B8, {0x22, 0x33, 0x44, 0x11}}, {kFormatX8R8G8B8, {0x22, 0x33, 0x44, 0xff}},
      {kFormatR8G8B8A8, {0x11, 0x22, 0x33, 0x44}}, {kFormatX8B8G8R8, {0x44, 0x33, 0x22, 0xff}},
      {kFormatA8B8G8R8, {0x44, 0x33, 0x22, 0x11}}, {kFormatR8G8B8X8, {0x11, 0x22, 0x33, 0xff}},
  };
  GpuDriver d;
  uint32_t id = 100;
  for (const Case& c : cases) {
    std::vector<uint8_t> image;
    for (int i = 0; i < 16; ++i) image.insert(image.end(), {0x11, 0x22, 0x33, 0x44});
    d.MakeResource(++id, c.format, 4, 4, image);
    ASSERT_EQ(d.Status(TransferCmd(id, {0, 0, 4, 4}, 0)), kRespOkNodata);
    ASSERT_EQ(d.Status(SetScanoutCmd(0, id, {0, 0, 4, 4})), kRespOkNodata);
    const auto& px = d.device.scanout().rgba;
    ASSERT_EQ(px.size(), 64u);
    for (int i = 0; i < 16; ++i) {
      EXPECT_TRUE(std::equal(c.rgba.begin(), c.rgba.end(), px.begin() + ptrdiff_t{i} * 4))
          << "format " << c.format;
    }
  }
  for (uint32_t bad : {0u, 5u, 66u, 69u, 120u, 122u, 133u, 135u, UINT32_MAX}) {
    EXPECT_EQ(d.Status(Create2d(500, bad, 4, 4)), kRespErrInvalidParameter) << bad;
  }
}

// ---- resources ----

TEST(VirtioGpuDevice, CreateErrors) {
  GpuDriver d;
  EXPECT_EQ(d.Status(Create2d(0, kFormatB8G8R8X8, 4, 4)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 4, 4)), kRespOkNodata);
  EXPECT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 4, 4)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 0, 4)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 4, 0)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 16385, 1)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 1, 16385)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, UINT32_MAX, UINT32_MAX)),
            kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 16384, 1)), kRespOkNodata);
  EXPECT_EQ(d.device.resource_count(), 2u);
  EXPECT_EQ(d.device.memory_used(), 4u * 4 * 4 + 16384 * 4);
  EXPECT_EQ(d.Counter("cmd_resource_create_2d"), 9u);
  EXPECT_EQ(d.Counter("err_invalid_parameter"), 5u);
  EXPECT_EQ(d.Counter("err_invalid_resource_id"), 2u);
}

TEST(VirtioGpuDevice, UnrefFreesAndDisablesItsScanout) {
  GpuDriver d;
  const auto image = Image(size_t{16} * 16 * 4, 5);
  d.MakeResource(3, kFormatB8G8R8A8, 16, 16, image);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 3, {0, 0, 16, 16})), kRespOkNodata);
  ASSERT_TRUE(d.device.scanout().enabled);
  EXPECT_EQ(d.Status(Unref(3)), kRespOkNodata);
  EXPECT_FALSE(d.device.scanout().enabled);
  EXPECT_EQ(d.device.resource_count(), 0u);
  EXPECT_EQ(d.device.memory_used(), 0u);
  EXPECT_EQ(d.Status(Unref(3)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(Unref(0)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(TransferCmd(3, {0, 0, 16, 16}, 0)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(Flush(3, {0, 0, 16, 16})), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(SetScanoutCmd(0, 3, {0, 0, 16, 16})), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(DetachBacking(3)), kRespErrInvalidResourceId);
  EXPECT_EQ(d.Status(AttachBacking(3, {{0x1000, 1024}})), kRespErrInvalidResourceId);
  // The id is free again.
  EXPECT_EQ(d.Status(Create2d(3, kFormatB8G8R8A8, 16, 16)), kRespOkNodata);
}

TEST(VirtioGpuDevice, AttachAndDetachBackingErrors) {
  GpuDriver d;
  ASSERT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 8, 8)), kRespOkNodata);
  // Detach with nothing attached; transfer with no backing.
  EXPECT_EQ(d.Status(DetachBacking(1)), kRespErrUnspec);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 8, 8}, 0)), kRespErrUnspec);
  // No entries, a zero-length entry, an entry that wraps the address space.
  EXPECT_EQ(d.Status(AttachBacking(1, {})), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(AttachBacking(1, {{0x1000, 128}, {0x2000, 0}})), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(AttachBacking(1, {{UINT64_MAX - 10, 12}})), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(AttachBacking(1, {{UINT64_MAX - 11, 12}})), kRespOkNodata);  // ends at 2^64
  EXPECT_EQ(d.Status(AttachBacking(1, {{0x1000, 256}})), kRespErrUnspec);  // already attached
  EXPECT_EQ(d.Status(DetachBacking(1)), kRespOkNodata);
  EXPECT_EQ(d.Status(DetachBacking(1)), kRespErrUnspec);
  EXPECT_EQ(d.device.memory_used(), 8u * 8 * 4);
  // A backing too small for the rectangle, and offsets past it.
  ASSERT_EQ(d.Status(AttachBacking(1, {{0x1000, 100}, {0x3000, 100}})), kRespOkNodata);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 8, 8}, 0)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 8, 1}, 200 - 31)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 1, 1}, UINT64_MAX)), kRespErrInvalidParameter);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 1, 1}, UINT64_MAX - 2)), kRespErrInvalidParameter);
  EXPECT_EQ(d.all_reads.size(), 0u) << "refused transfers read nothing";
  // The last byte of the backing can be transferred (the read fails: nothing mapped there).
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, 8, 1}, 200 - 32)), kRespErrUnspec);
}

TEST(VirtioGpuDevice, RectangleErrors) {
  GpuDriver d;
  const auto image = Image(size_t{16} * 8 * 4, 6);
  d.MakeResource(1, kFormatR8G8B8A8, 16, 8, image);
  for (const Rect& r : {Rect{0, 0, 0, 8}, Rect{0, 0, 16, 0}, Rect{1, 0, 16, 8}, Rect{0, 1, 16, 8},
                        Rect{16, 0, 1, 1}, Rect{0, 8, 1, 1}, Rect{UINT32_MAX, 0, 2, 1},
                        Rect{0, UINT32_MAX, 1, 2}, Rect{0, 0, UINT32_MAX, UINT32_MAX}}) {
    EXPECT_EQ(d.Status(TransferCmd(1, r, 0)), kRespErrInvalidParameter);
    EXPECT_EQ(d.Status(Flush(1, r)), kRespErrInvalidParameter);
    EXPECT_EQ(d.Status(SetScanoutCmd(0, 1, r)), kRespErrInvalidParameter);
  }
  EXPECT_EQ(d.Status(SetScanoutCmd(1, 1, {0, 0, 16, 8})), kRespErrInvalidScanoutId);
  EXPECT_EQ(d.Status(SetScanoutCmd(16, 0, {0, 0, 0, 0})), kRespErrInvalidScanoutId);
  EXPECT_EQ(d.Status(SetScanoutCmd(0, 99, {0, 0, 16, 8})), kRespErrInvalidResourceId);
  EXPECT_FALSE(d.device.scanout().enabled);
  EXPECT_EQ(d.Counter("err_invalid_parameter"), 27u);
  EXPECT_EQ(d.all_reads.size(), 0u);
}

// ---- fences ----

TEST(VirtioGpuDevice, FencesAreEchoed) {
  GpuDriver d;
  // A fenced command, an unfenced one, a fenced error, a fenced transfer.
  auto fenced = Wire().Hdr(kCmdGetDisplayInfo, kFlagFence, 0x1122334455667788, 9).bytes;
  auto r = d.Control(fenced);
  EXPECT_EQ(Le32(r, 0), kRespOkDisplayInfo);
  EXPECT_EQ(Le32(r, 4), kFlagFence);
  EXPECT_EQ(Le64(r, 8), 0x1122334455667788u);
  EXPECT_EQ(Le32(r, 16), 9u);
  r = d.Control(Wire().Hdr(kCmdGetDisplayInfo, 0, 77, 3).bytes);
  EXPECT_EQ(Le32(r, 4), 0u);
  EXPECT_EQ(Le64(r, 8), 0u);
  EXPECT_EQ(Le32(r, 16), 0u);
  r = d.Control(Wire().Hdr(kCmdResourceUnref, kFlagFence, 42, 0).U32(5).U32(0).bytes);
  EXPECT_EQ(Le32(r, 0), kRespErrInvalidResourceId);
  EXPECT_EQ(Le32(r, 4), kFlagFence);
  EXPECT_EQ(Le64(r, 8), 42u);
  const auto image = Image(size_t{8} * 8 * 4, 7);
  d.MakeResource(1, kFormatB8G8R8X8, 8, 8, image, 2);
  r = d.Control(Wire()
                    .Hdr(kCmdTransferToHost2d, kFlagFence, 43, 1)
                    .PutRect({0, 0, 8, 8})
                    .U64(0)
                    .U32(1)
                    .U32(0)
                    .bytes);
  ASSERT_EQ(r.size(), kCtrlHdrSize);
  EXPECT_EQ(Le32(r, 0), kRespOkNodata);
  EXPECT_EQ(Le32(r, 4), kFlagFence);
  EXPECT_EQ(Le64(r, 8), 43u);
  EXPECT_EQ(Le32(r, 16), 1u);
}

// ---- guest reads ----

TEST(VirtioGpuDevice, ResponseWaitsForEveryReadAndAFailedReadIsErrUnspec) {
  VirtioGpuOptions options;
  options.max_reads_in_flight = 64;
  GpuDriver d(options);
  const uint32_t w = 16, h = 16;
  const auto image = Image(size_t{w} * h * 4, 8);
  d.MakeResource(1, kFormatB8G8R8X8, w, h, image, 4);
  d.Submit(kControlQueue, TransferCmd(1, {0, 0, w, h}, 0));
  d.Run(/*answer_reads=*/false);
  ASSERT_EQ(d.held_reads.size(), 4u);  // one per piece
  const size_t before = d.completions.size();
  d.Answer(d.held_reads[1], /*ok=*/false);
  d.Run(false);
  EXPECT_EQ(d.completions.size(), before) << "answered before every read came back";
  d.Answer(d.held_reads[0]);
  d.Answer(d.held_reads[3]);
  d.Run(false);
  EXPECT_EQ(d.completions.size(), before);
  d.Answer(d.held_reads[2]);
  d.Run(false);
  ASSERT_EQ(d.completions.size(), before + 1);
  EXPECT_EQ(Le32(d.completions.back().written, 0), kRespErrUnspec);
  EXPECT_EQ(d.Counter("guest_read_failures"), 1u);
  // A read answered twice, or with the wrong length, is no harm.
  d.Answer(d.held_reads[2]);
  EXPECT_EQ(d.Counter("stale_guest_reads"), 1u);
  // The queue goes on; a transfer whose memory is not there (a UR) fails too.
  d.RemoveMemory(d.held_reads[0].address);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, w, h}, 0)), kRespErrUnspec);
  EXPECT_EQ(d.Status(Wire().Hdr(kCmdGetDisplayInfo).bytes), kRespOkDisplayInfo);
}

TEST(VirtioGpuDevice, ShortReadAnswerFailsTheTransfer) {
  GpuDriver d;
  const auto image = Image(size_t{8} * 8 * 4, 9);
  d.MakeResource(1, kFormatB8G8R8X8, 8, 8, image);
  d.Submit(kControlQueue, TransferCmd(1, {0, 0, 8, 8}, 0));
  d.Run(false);
  ASSERT_EQ(d.held_reads.size(), 1u);
  const std::vector<uint8_t> short_data(d.held_reads[0].length - 1, 0xaa);
  d.device.OnGuestRead(d.held_reads[0].tag, short_data, true, 0);
  d.Run(false);
  ASSERT_FALSE(d.completions.empty());
  EXPECT_EQ(Le32(d.completions.back().written, 0), kRespErrUnspec);
  // An answer for a tag never issued is ignored.
  d.device.OnGuestRead(0x12345678, short_data, true, 0);
  d.device.OnGuestRead(UINT64_MAX, {}, false, 0);
  EXPECT_EQ(d.Counter("stale_guest_reads"), 2u);
}

TEST(VirtioGpuDevice, ControlQueueIsInOrderCursorQueueIsNotHeldBehindIt) {
  GpuDriver d;
  const auto image = Image(size_t{64} * 64 * 4, 10);
  d.MakeResource(1, kFormatB8G8R8A8, 64, 64, image, 2);
  ASSERT_EQ(d.Status(TransferCmd(1, {0, 0, 64, 64}, 0)), kRespOkNodata);
  const size_t before = d.completions.size();
  const uint16_t transfer = d.Submit(kControlQueue, TransferCmd(1, {0, 0, 64, 64}, 0));
  const uint16_t info = d.Submit(kControlQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes);
  const uint16_t cursor =
      d.Submit(kCursorQueue, CursorCmd(kCmdUpdateCursor, 0, 10, 10, 1, 0, 0), kCtrlHdrSize);
  d.Run(false);
  ASSERT_EQ(d.completions.size(), before + 1);
  EXPECT_EQ(d.completions.back().head, cursor);
  EXPECT_TRUE(d.device.scanout().cursor.visible);
  for (const GuestRead& r : d.held_reads) d.Answer(r);
  d.Run(false);
  ASSERT_EQ(d.completions.size(), before + 3);
  EXPECT_EQ(d.completions[before + 1].head, transfer);
  EXPECT_EQ(d.completions[before + 2].head, info);
}

TEST(VirtioGpuDevice, LargeTransferIsReadInBoundedChunksAndWindows) {
  GpuDriver d;                        // max_reads_in_flight 16
  const uint32_t w = 1024, h = 1024;  // 4 MiB in one piece: 64 reads of 64 KiB
  const auto image = Image(size_t{w} * h * 4, 11);
  d.MakeResource(1, kFormatB8G8R8X8, w, h, image);
  EXPECT_EQ(d.Status(TransferCmd(1, {0, 0, w, h}, 0)), kRespOkNodata);
  ASSERT_EQ(d.all_reads.size(), size_t{w} * h * 4 / kTransferPieceBytes);
  for (const GuestRead& r : d.all_reads) EXPECT_EQ(r.length, kTransferPieceBytes);
  // A narrow rectangle: 1024 rows of 8 bytes, at most 16 outstanding at a time.
  d.all_reads.clear();
  d.Submit(kControlQueue, TransferCmd(1, {100, 0, 2, h}, 400));
  size_t answered = 0;
  for (int round = 0; round < 2000 && answered < h; ++round) {
    d.held_reads.clear();
    d.Run(false);
    EXPECT_LE(d.held_reads.size(), 16u);
    for (const GuestRead& r : d.held_reads) d.Answer(r);
    answered += d.held_reads.size();
  }
  d.Run(false);
  EXPECT_EQ(answered, h);
  EXPECT_EQ(Le32(d.completions.back().written, 0), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, w, h})), kRespOkNodata);
  EXPECT_EQ(d.device.scanout().rgba, BgrxToRgba(image));
}

// ---- cursor ----

TEST(VirtioGpuDevice, CursorUpdateMoveHide) {
  GpuDriver d;
  const auto arrow = Image(size_t{64} * 64 * 4, 12);
  d.MakeResource(9, kFormatB8G8R8A8, 64, 64, arrow, 2);
  ASSERT_EQ(d.Status(TransferCmd(9, {0, 0, 64, 64}, 0)), kRespOkNodata);
  // Linux gives the cursor queue no response buffer: the completion is empty.
  auto r = d.Call(kCursorQueue, CursorCmd(kCmdUpdateCursor, 0, 100, 50, 9, 3, 4), 0);
  EXPECT_TRUE(r.empty());
  const CursorState& c = d.device.scanout().cursor;
  EXPECT_TRUE(c.visible);
  EXPECT_EQ(c.resource_id, 9u);
  EXPECT_EQ(c.x, 100);
  EXPECT_EQ(c.y, 50);
  EXPECT_EQ(c.hot_x, 3u);
  EXPECT_EQ(c.hot_y, 4u);
  std::vector<uint8_t> want(arrow.size());
  for (size_t i = 0; i < arrow.size(); i += 4) {
    want[i] = arrow[i + 2], want[i + 1] = arrow[i + 1], want[i + 2] = arrow[i];
    want[i + 3] = arrow[i + 3];
  }
  EXPECT_EQ(c.rgba, want);
  // With a response buffer the header comes back.
  r = d.Call(kCursorQueue, CursorCmd(kCmdMoveCursor, 0, -5, -7, 0, 0, 0), kCtrlHdrSize);
  ASSERT_EQ(r.size(), kCtrlHdrSize);
  EXPECT_EQ(Le32(r, 0), kRespOkNodata);
  EXPECT_EQ(c.x, -5);
  EXPECT_EQ(c.y, -7);
  EXPECT_TRUE(c.visible);  // a move keeps the image
  // The cursor keeps its image after its resource goes.
  ASSERT_EQ(d.Status(Unref(9)), kRespOkNodata);
  EXPECT_EQ(c.rgba, want);
  // Errors.
  const auto err = [&](std::vector<uint8_t> cmd) {
    return Le32(d.Call(kCursorQueue, std::move(cmd), kCtrlHdrSize), 0);
  };
  EXPECT_EQ(err(CursorCmd(kCmdUpdateCursor, 0, 0, 0, 9, 0, 0)), kRespErrInvalidResourceId);
  EXPECT_EQ(err(CursorCmd(kCmdUpdateCursor, 1, 0, 0, 0, 0, 0)), kRespErrInvalidScanoutId);
  EXPECT_EQ(err(CursorCmd(kCmdMoveCursor, 2, 0, 0, 0, 0, 0)), kRespErrInvalidScanoutId);
  ASSERT_EQ(d.Status(Create2d(10, kFormatB8G8R8A8, 32, 32)), kRespOkNodata);
  EXPECT_EQ(err(CursorCmd(kCmdUpdateCursor, 0, 0, 0, 10, 0, 0)), kRespErrInvalidParameter);
  ASSERT_EQ(d.Status(Create2d(11, kFormatB8G8R8A8, 64, 64)), kRespOkNodata);
  EXPECT_EQ(err(CursorCmd(kCmdUpdateCursor, 0, 0, 0, 11, 64, 0)), kRespErrInvalidParameter);
  EXPECT_EQ(c.rgba, want) << "a refused update changes nothing";
  // Resource 0 hides it.
  EXPECT_EQ(err(CursorCmd(kCmdUpdateCursor, 0, 1, 2, 0, 0, 0)), kRespOkNodata);
  EXPECT_FALSE(c.visible);
  EXPECT_TRUE(c.rgba.empty());
  EXPECT_EQ(d.Counter("cmd_update_cursor"), 6u);
  EXPECT_EQ(d.Counter("cmd_move_cursor"), 2u);
  EXPECT_EQ(d.Counter("responses_truncated"), 0u);
}

TEST(VirtioGpuDevice, PngWithTheCursorDrawn) {
  GpuDriver d;
  std::vector<uint8_t> white(size_t{16} * 16 * 4, 0xff);
  d.MakeResource(1, kFormatB8G8R8X8, 16, 16, white);
  ASSERT_EQ(d.Status(TransferCmd(1, {0, 0, 16, 16}, 0)), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, 16, 16})), kRespOkNodata);
  // An opaque red 64x64 cursor whose top-left pixel is transparent, hot spot (1, 1), at (5, 6):
  // it covers (4, 5) onwards.
  std::vector<uint8_t> red;
  for (int i = 0; i < 64 * 64; ++i) red.insert(red.end(), {0xff, 0, 0, 0xff});  // R8G8B8A8
  red[3] = 0;
  d.MakeResource(2, kFormatR8G8B8A8, 64, 64, red);
  ASSERT_EQ(d.Status(TransferCmd(2, {0, 0, 64, 64}, 0)), kRespOkNodata);
  d.Call(kCursorQueue, CursorCmd(kCmdUpdateCursor, 0, 5, 6, 2, 1, 1), 0);
  const auto plain = DecodeStoredPng(RenderScanoutPng(d.device.scanout()));
  const auto drawn = DecodeStoredPng(RenderScanoutPng(d.device.scanout(), true));
  ASSERT_EQ(plain.error, "");
  ASSERT_EQ(drawn.error, "");
  EXPECT_EQ(std::count(plain.pixels.begin(), plain.pixels.end(), 0xff), 16 * 16 * 3);
  for (uint32_t y = 0; y < 16; ++y) {
    for (uint32_t x = 0; x < 16; ++x) {
      const uint8_t* p = &drawn.pixels[(size_t{y} * 16 + x) * 3];
      const bool covered = x >= 4 && y >= 5 && !(x == 4 && y == 5);
      EXPECT_EQ(p[1], covered ? 0 : 0xff) << x << "," << y;
      EXPECT_EQ(p[0], 0xff);
    }
  }
}

// ---- reset, release ----

TEST(VirtioGpuDevice, ResetWithReadsInFlightForgetsThem) {
  GpuDriver d;
  const auto image = Image(size_t{32} * 32 * 4, 13);
  d.MakeResource(1, kFormatB8G8R8X8, 32, 32, image, 3);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, 32, 32})), kRespOkNodata);
  d.Submit(kControlQueue, TransferCmd(1, {0, 0, 32, 32}, 0));
  d.Submit(kControlQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes);
  d.Run(false);
  ASSERT_EQ(d.held_reads.size(), 3u);
  const size_t before = d.completions.size();
  d.device.Reset();
  for (const GuestRead& r : d.held_reads) d.Answer(r);  // late answers: ignored
  d.Run(false);
  EXPECT_EQ(d.completions.size(), before) << "a request in flight at reset is dropped";
  EXPECT_EQ(d.Counter("stale_guest_reads"), 3u);
  EXPECT_EQ(d.device.resource_count(), 0u);
  EXPECT_EQ(d.device.memory_used(), 0u);
  EXPECT_FALSE(d.device.scanout().enabled);
  // Power-on again: the same id can be created; the old tags stay stale.
  d.device.SetDriverFeatures(kFeatureEdid);
  d.device.Start();
  EXPECT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 32, 32)), kRespOkNodata);
  d.Answer(d.held_reads[0]);
  EXPECT_EQ(d.Counter("stale_guest_reads"), 4u);
  // A new transfer numbers its reads afresh; an old tag with the same number is still stale.
  std::vector<uint8_t> zeros(size_t{32} * 32 * 4, 0);
  d.PutMemory(0x70000000, zeros);
  ASSERT_EQ(d.Status(AttachBacking(1, {{0x70000000, 32 * 32 * 4}})), kRespOkNodata);
  const std::vector<GuestRead> old = d.held_reads;
  d.held_reads.clear();
  d.Submit(kControlQueue, TransferCmd(1, {0, 0, 32, 32}, 0));
  d.Run(false);
  ASSERT_EQ(d.held_reads.size(), 1u);
  EXPECT_EQ(d.held_reads[0].tag & 0xffffffff, old[0].tag & 0xffffffff);
  // The old read's bytes are the old image: were they taken, the resource would not be zero.
  d.device.OnGuestRead(old[0].tag, std::vector<uint8_t>(d.held_reads[0].length, 0xee), true, 0);
  EXPECT_EQ(d.Counter("stale_guest_reads"), 5u);
  d.Answer(d.held_reads[0]);
  d.Run(false);
  EXPECT_EQ(Le32(d.completions.back().written, 0), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, 32, 32})), kRespOkNodata);
  EXPECT_EQ(d.device.scanout().rgba, BgrxToRgba(zeros));
}

TEST(VirtioGpuDevice, ReleaseZeroesResourcesAndCountsTheBytes) {
  GpuDriver d;
  const auto image = Image(size_t{64} * 64 * 4, 14);
  d.MakeResource(1, kFormatB8G8R8X8, 64, 64, image);
  ASSERT_EQ(d.Status(TransferCmd(1, {0, 0, 64, 64}, 0)), kRespOkNodata);
  ASSERT_EQ(d.Status(SetScanoutCmd(0, 1, {0, 0, 64, 64})), kRespOkNodata);
  d.Call(kCursorQueue, CursorCmd(kCmdUpdateCursor, 0, 0, 0, 1, 0, 0), 0);
  ASSERT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 10, 10)), kRespOkNodata);
  d.device.Reset();
  // The resources (16384 + 400 bytes), the scanout image (16384) and the cursor (16384).
  EXPECT_EQ(d.device.Release(ReleasePolicy::kKeep), 16384u + 400 + 16384 + 16384);
  EXPECT_EQ(d.device.Release(ReleasePolicy::kZero), 0u);
  EXPECT_EQ(d.device.resource_count(), 0u);
  EXPECT_FALSE(d.device.scanout().cursor.visible);
}

// ---- limits ----

TEST(VirtioGpuDevice, MemoryLimit) {
  VirtioGpuOptions options;
  options.max_memory_bytes = 1 << 20;
  GpuDriver d(options);
  EXPECT_EQ(d.device.memory_bytes(), 1u << 20);
  EXPECT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 512, 513)), kRespErrOutOfMemory);
  EXPECT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 512, 511)), kRespOkNodata);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 512, 2)), kRespErrOutOfMemory);
  // The backing list counts too: 2048 bytes left hold no 128-entry list.
  std::vector<MemEntry> many;
  for (uint64_t i = 0; i < 128; ++i) many.push_back({0x10000 * (i + 1), 4096});
  EXPECT_EQ(d.Status(AttachBacking(1, many)), kRespErrOutOfMemory);
  EXPECT_EQ(d.Status(AttachBacking(1, {{0x10000, 512 * 511 * 4}})), kRespOkNodata);
  EXPECT_EQ(d.Status(Unref(1)), kRespOkNodata);
  EXPECT_EQ(d.device.memory_used(), 0u);
  EXPECT_EQ(d.Status(Create2d(2, kFormatB8G8R8X8, 512, 512)), kRespOkNodata);
  EXPECT_EQ(d.Counter("err_out_of_memory"), 3u);
  // The default limit: a 16384 x 16384 resource (1 GiB) does not fit in 256 MiB.
  GpuDriver big;
  EXPECT_EQ(big.Status(Create2d(1, kFormatB8G8R8X8, 16384, 16384)), kRespErrOutOfMemory);
}

TEST(VirtioGpuDevice, ResourceCountLimit) {
  VirtioGpuOptions options;
  options.max_resources = 3;
  GpuDriver d(options);
  for (uint32_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(d.Status(Create2d(id, kFormatB8G8R8X8, 1, 1)), kRespOkNodata);
  }
  EXPECT_EQ(d.Status(Create2d(4, kFormatB8G8R8X8, 1, 1)), kRespErrOutOfMemory);
  EXPECT_EQ(d.Status(Unref(2)), kRespOkNodata);
  EXPECT_EQ(d.Status(Create2d(4, kFormatB8G8R8X8, 1, 1)), kRespOkNodata);
  // The default: 4096.
  GpuDriver def;
  for (uint32_t id = 1; id <= 4096; ++id) {
    ASSERT_EQ(def.Status(Create2d(id, kFormatB8G8R8X8, 1, 1)), kRespOkNodata);
  }
  EXPECT_EQ(def.Status(Create2d(5000, kFormatB8G8R8X8, 1, 1)), kRespErrOutOfMemory);
}

TEST(VirtioGpuDevice, BackingEntryLimit) {
  VirtioGpuOptions options;
  options.max_backing_entries = 4;
  GpuDriver d(options);
  ASSERT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 8, 8)), kRespOkNodata);
  std::vector<MemEntry> five(5, MemEntry{0x1000, 64});
  EXPECT_EQ(d.Status(AttachBacking(1, five)), kRespErrInvalidParameter);
  five.pop_back();
  EXPECT_EQ(d.Status(AttachBacking(1, five)), kRespOkNodata);
  // The default: 16384 entries, one more refused.
  GpuDriver def;
  ASSERT_EQ(def.Status(Create2d(1, kFormatB8G8R8X8, 128, 128)), kRespOkNodata);
  std::vector<MemEntry> entries;
  for (uint64_t i = 0; i < 16385; ++i) entries.push_back({0x100000 + i * 8, 4});
  EXPECT_EQ(def.Status(AttachBacking(1, entries)), kRespErrInvalidParameter);
  entries.pop_back();
  EXPECT_EQ(def.Status(AttachBacking(1, entries)), kRespOkNodata);
  // 16384 pieces of 4 bytes, one pixel each, in 8-byte steps: every read is one piece.
  std::vector<uint8_t> guest(size_t{16384} * 8);
  for (size_t i = 0; i < guest.size(); ++i) guest[i] = static_cast<uint8_t>(i * 7);
  def.PutMemory(0x100000, guest);
  EXPECT_EQ(def.Status(TransferCmd(1, {0, 0, 128, 128}, 0)), kRespOkNodata);
  EXPECT_EQ(def.all_reads.size(), 16384u);
  ASSERT_EQ(def.Status(SetScanoutCmd(0, 1, {0, 0, 128, 128})), kRespOkNodata);
  const auto& px = def.device.scanout().rgba;
  for (size_t p = 0; p < 16384; ++p) {
    ASSERT_EQ(px[p * 4 + 0], guest[p * 8 + 2]) << p;  // B8G8R8X8: red is byte 2
    ASSERT_EQ(px[p * 4 + 2], guest[p * 8 + 0]) << p;
  }
}

// ---- malformed requests ----

TEST(VirtioGpuDevice, ShortAndLyingRequestsAreErrUnspec) {
  GpuDriver d;
  ASSERT_EQ(d.Status(Create2d(1, kFormatB8G8R8X8, 8, 8)), kRespOkNodata);
  EXPECT_EQ(d.Status({}), kRespErrUnspec);
  EXPECT_EQ(d.Status(std::vector<uint8_t>(23, 0)), kRespErrUnspec);
  const std::vector<std::vector<uint8_t>> whole = {GetEdidCmd(0),
                                                   Create2d(2, kFormatB8G8R8X8, 1, 1),
                                                   Unref(1),
                                                   AttachBacking(1, {}),
                                                   DetachBacking(1),
                                                   SetScanoutCmd(0, 1, {0, 0, 1, 1}),
                                                   Flush(1, {0, 0, 1, 1}),
                                                   TransferCmd(1, {0, 0, 1, 1}, 0)};
  for (auto cmd : whole) {
    cmd.pop_back();
    const auto r = d.Control(cmd);
    EXPECT_EQ(Le32(r, 0), kRespErrUnspec) << "type " << Le32(cmd, 0);
  }
  EXPECT_EQ(d.Counter("malformed_requests"), 2u + whole.size());
  // Nothing happened: resource 1 is still there, 2 was never made.
  EXPECT_EQ(d.device.resource_count(), 1u);
  // Entry counts that lie: more than the request holds, and 2^32 - 1.
  auto lying = AttachBacking(1, {{0x1000, 64}, {0x2000, 64}});
  lying[kCtrlHdrSize + 4] = 3;
  EXPECT_EQ(d.Status(lying), kRespErrUnspec);
  lying[kCtrlHdrSize + 4] = 0xff, lying[kCtrlHdrSize + 5] = 0xff;
  lying[kCtrlHdrSize + 6] = 0xff, lying[kCtrlHdrSize + 7] = 0xff;
  EXPECT_EQ(d.Status(lying), kRespErrInvalidParameter);
  // Longer than the structure is fine (the extra bytes are not looked at).
  auto longer = Create2d(3, kFormatB8G8R8X8, 2, 2);
  longer.resize(longer.size() + 100, 0xee);
  EXPECT_EQ(d.Status(longer), kRespOkNodata);
}

TEST(VirtioGpuDevice, UnsupportedCommandsAndWrongQueues) {
  GpuDriver d;
  for (uint32_t type : {0u, 0x108u, 0x109u, 0x10bu, 0x10cu, 0x10du, 0x200u, 0x207u, 0x300u, 0x301u,
                        0x1100u, 0x1200u, 0xffffffffu}) {
    EXPECT_EQ(d.Status(Wire().Hdr(type).U64(0).U64(0).U64(0).U64(0).bytes), kRespErrUnspec) << type;
  }
  // A control command on the cursor queue.
  const auto r = d.Call(kCursorQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes, kCtrlHdrSize);
  EXPECT_EQ(Le32(r, 0), kRespErrUnspec);
  // Short cursor commands.
  auto cursor = CursorCmd(kCmdMoveCursor, 0, 1, 1, 0, 0, 0);
  cursor.pop_back();
  EXPECT_EQ(Le32(d.Call(kCursorQueue, cursor, kCtrlHdrSize), 0), kRespErrUnspec);
  EXPECT_EQ(Le32(d.Call(kCursorQueue, {1, 2, 3}, kCtrlHdrSize), 0), kRespErrUnspec);
  // A queue that does not exist is answered, not held.
  EXPECT_EQ(Le32(d.Call(2, Wire().Hdr(kCmdGetDisplayInfo).bytes), 0), kRespErrUnspec);
  EXPECT_EQ(Le32(d.Call(0xffff, {}), 0), kRespErrUnspec);
  EXPECT_EQ(d.Counter("cmd_unsupported"), 14u);
  EXPECT_EQ(d.Counter("queue_overflows"), 2u);
}

TEST(VirtioGpuDevice, ResponsesFitTheWritableBuffers) {
  GpuDriver d;
  auto r = d.Call(kControlQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes, 10);
  EXPECT_EQ(r.size(), 10u);
  EXPECT_EQ(Le32(r, 0), kRespOkDisplayInfo);
  r = d.Call(kControlQueue, GetEdidCmd(0), 0);
  EXPECT_TRUE(r.empty());
  r = d.Call(kControlQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes, 100000);
  EXPECT_EQ(r.size(), kRespDisplayInfoSize);
  EXPECT_EQ(d.Counter("responses_truncated"), 2u);
}

TEST(VirtioGpuDevice, MoreRequestsThanTheQueueHoldsAreAnswered) {
  VirtioGpuOptions options;
  options.control_queue_size = 4;
  GpuDriver d(options);
  for (int i = 0; i < 6; ++i) d.Submit(kControlQueue, Wire().Hdr(kCmdGetDisplayInfo).bytes);
  d.Run();
  ASSERT_EQ(d.completions.size(), 6u);
  int ok = 0, refused = 0;
  for (const Completion& c : d.completions) {
    ok += Le32(c.written, 0) == kRespOkDisplayInfo;
    refused += Le32(c.written, 0) == kRespErrUnspec;
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(d.Counter("queue_overflows"), 2u);
}

// Random requests of every command, sizes and fields: each is answered exactly once, with a
// header, and the device never reads outside what was attached.
TEST(VirtioGpuDevice, RandomRequestsNeverCrashAndAreAllAnswered) {
  VirtioGpuOptions options;
  options.max_memory_bytes = 8 << 20;
  options.max_resource_width = 512;
  options.max_resource_height = 512;
  GpuDriver d(options);
  d.PutMemory(0x10000, std::vector<uint8_t>(1 << 20, 0x5a));
  std::mt19937_64 rng(2026);  // NOLINT(cert-msc51-cpp): the same requests every run
  const auto small = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  const uint32_t formats[] = {kFormatB8G8R8X8, kFormatR8G8B8A8, kFormatA8B8G8R8, 0, 1000};
  const auto rect = [&] { return Rect{small(8), small(8), small(30), small(30)}; };
  for (int i = 0; i < 4000; ++i) {
    // Well-formed commands with small ids, sizes and offsets, so that many succeed and
    // transfers read; a third then damaged (cut short, a byte changed).
    std::vector<uint8_t> cmd;
    uint16_t queue = kControlQueue;
    switch (rng() % 13) {
      case 0:
        cmd = Wire().Hdr(kCmdGetDisplayInfo).bytes;
        break;
      case 1:
        cmd = Create2d(small(6), formats[small(5)], 1 + small(64), 1 + small(64));
        break;
      case 2:
        cmd = Unref(small(24));
        break;
      case 3:
        cmd = SetScanoutCmd(small(2), small(6), rect());
        break;
      case 4:
        cmd = Flush(small(6), rect());
        break;
      case 5:
      case 6:
      case 12:
        cmd = TransferCmd(small(6), rect(), small(3) == 0 ? rng() : small(4096));
        break;
      case 7: {
        std::vector<MemEntry> entries(1 + small(6));
        for (MemEntry& e : entries) e = {0x10000 + small(1 << 20), 1 + small(20000)};
        cmd = AttachBacking(small(6), entries);
        break;
      }
      case 8:
        cmd = DetachBacking(small(6));
        break;
      case 9:
        cmd = GetEdidCmd(small(2));
        break;
      default:
        queue = kCursorQueue;
        cmd = CursorCmd(small(2) ? kCmdUpdateCursor : kCmdMoveCursor, small(2),
                        static_cast<int32_t>(rng()), static_cast<int32_t>(small(100)), small(6),
                        small(70), small(70));
    }
    if (small(2)) cmd[4] = static_cast<uint8_t>(small(2));  // fenced or not
    if (small(6) == 0) cmd.resize(small(static_cast<uint32_t>(cmd.size())));
    if (small(6) == 0 && !cmd.empty()) cmd[small(static_cast<uint32_t>(cmd.size()))] ^= 0x80;
    const size_t before = d.completions.size();
    const uint16_t head = d.Submit(queue, cmd, static_cast<uint32_t>(rng() % 2000));
    d.Run();
    ASSERT_EQ(d.completions.size(), before + 1) << "request " << i;
    EXPECT_EQ(d.completions.back().head, head);
  }
  EXPECT_EQ(d.needs_reset, 0);
  std::map<uint32_t, int> statuses;
  for (const Completion& c : d.completions) {
    if (c.written.size() >= 4) ++statuses[Le32(c.written, 0)];
  }
  // The mix reached the deep paths: commands succeeded, transfers read guest memory.
  EXPECT_GT(statuses[kRespOkNodata], 200);
  EXPECT_GT(statuses[kRespErrInvalidParameter], 100);
  EXPECT_GT(d.all_reads.size(), 100u);
  EXPECT_GT(d.Counter("bytes_transferred"), 10000u);
  for (const GuestRead& r : d.all_reads) {
    EXPECT_LE(r.length, kMaxGuestRead);
  }
  d.device.Reset();
  EXPECT_EQ(d.device.memory_used(), 0u);
}

}  // namespace
}  // namespace dxpu::virtio::gpu::test
