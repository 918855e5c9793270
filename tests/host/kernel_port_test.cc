// kernel_port_test.cc - the kernel port's part that runs without dxpu.ko: what opening a file
// that is not a dxpu device says, and how the memory window is chosen from what the module
// reports. (The port against the module itself: the kernel tests under QEMU.)
#include <dirent.h>
#include <gtest/gtest.h>

#include <string>

#include "host/kernel_port.h"

namespace dxpu::test {
namespace {

using dxgpu::ErrorCode;
using host::KernelPortOptions;

// Open descriptors of this process.
int OpenFds() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++n;  // NOLINT(concurrency-mt-unsafe): one thread
  closedir(dir);
  return n;
}

TEST(KernelPort, MissingFileIsNamedWithAHint) {
  auto port = host::OpenKernelPort({.devices = {"/dev/dxpu-test-missing-7"}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(port.status().message(),
            "cannot open /dev/dxpu-test-missing-7: No such file or directory (is dxpu.ko loaded "
            "and the device's slot powered on?)");
}

TEST(KernelPort, AFileThatIsNotADxpuDeviceIsRefused) {
  const int before = OpenFds();
  auto port = host::OpenKernelPort({.devices = {"/dev/null"}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(port.status().message(),
            "/dev/null is not a dxpu device (DXPU_IOC_INFO: Inappropriate ioctl for device)");
  EXPECT_EQ(OpenFds(), before) << "the file was left open";
}

TEST(KernelPort, TheFirstBadFileOfSeveralIsNamed) {
  auto port = host::OpenKernelPort({.devices = {"/dev/null", "/dev/dxpu-test-missing-7"}});
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("/dev/null"), std::string::npos);
  EXPECT_EQ(port.status().message().find("missing"), std::string::npos);
}

TEST(KernelPort, NoDeviceFilesIsAnArgumentError) {
  auto port = host::OpenKernelPort(KernelPortOptions{.devices = {}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kInvalidArgument);
}

// dxgpu's layout as dxpu.ko places it: BAR0 16 MiB 32-bit, BAR2 256 MiB 64-bit prefetchable.
dxpu_device_info DxgpuInfo() {
  dxpu_device_info info{};
  info.bar_addr[0] = 0x4000'0000;
  info.bar_size[0] = 16 << 20;
  info.bar_addr[2] = 0x40'0000'0000;
  info.bar_size[2] = 256 << 20;
  return info;
}

TEST(KernelPortMemoryWindow, TheLargest64BitPrefetchableBarFromTheRegisters) {
  dxpu_device_info info = DxgpuInfo();
  info.bar_addr[4] = 0x40'1000'0000;  // a 64-bit prefetchable BAR4 of 512 MiB
  info.bar_size[4] = 512 << 20;
  // BAR0 32-bit memory; BAR2 and BAR4 64-bit prefetchable (0xc), upper halves 0.
  const std::array<uint32_t, DXPU_BARS> regs = {0x4000'0000, 0, 0xc, 0x40, 0x1000'000c, 0x40};
  const host::KernelMemoryWindow w = host::MemoryWindowOf(info, regs);
  EXPECT_EQ(w.address, 0x40'1000'0000u);
  EXPECT_EQ(w.size, 512u << 20);
}

TEST(KernelPortMemoryWindow, NotPrefetchableOr32BitIsNoWindow) {
  dxpu_device_info info = DxgpuInfo();
  // BAR2 64-bit but not prefetchable.
  EXPECT_EQ(host::MemoryWindowOf(info, std::array<uint32_t, DXPU_BARS>{0, 0, 0x4, 0x40, 0, 0}).size,
            0u);
  // BAR2 32-bit prefetchable.
  info.bar_addr[2] = 0x5000'0000;
  EXPECT_EQ(host::MemoryWindowOf(info, std::array<uint32_t, DXPU_BARS>{0, 0, 0x8, 0, 0, 0}).size,
            0u);
  // BAR0 never is the window, whatever it is.
  dxpu_device_info only_bar0{};
  only_bar0.bar_addr[0] = 0x40'0000'0000;
  only_bar0.bar_size[0] = 1 << 20;
  EXPECT_EQ(host::MemoryWindowOf(only_bar0, std::array<uint32_t, DXPU_BARS>{0xc, 0x40}).size, 0u);
  EXPECT_EQ(host::MemoryWindowOf(only_bar0, std::nullopt).size, 0u);
}

TEST(KernelPortMemoryWindow, WithoutTheRegistersABarAbove4GiB) {
  const host::KernelMemoryWindow w = host::MemoryWindowOf(DxgpuInfo(), std::nullopt);
  EXPECT_EQ(w.address, 0x40'0000'0000u);
  EXPECT_EQ(w.size, 256u << 20);
}

}  // namespace
}  // namespace dxpu::test
