// kernel_port_test.cc - the kernel port's part that runs without dxgpu.ko: what opening a file
// that is not a dxgpu device says, and how the memory window is chosen from what the driver
// reports. (The port against the driver itself: the kernel tests under QEMU.)
#include <dirent.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(KernelPort, TheDefaultDeviceIsDxgpu0) {
  EXPECT_EQ(KernelPortOptions{}.devices, std::vector<std::string>{"/dev/dxgpu0"});
}

TEST(KernelPort, MissingFileIsNamedWithAHint) {
  auto port = host::OpenKernelPort({.devices = {"/dev/dxgpu-test-missing-7"}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(port.status().message(),
            "cannot open /dev/dxgpu-test-missing-7: No such file or directory (is dxgpu.ko "
            "loaded and a GPU bound to it?)");
}

TEST(KernelPort, AFileThatIsNotADxgpuDeviceIsRefused) {
  const int before = OpenFds();
  auto port = host::OpenKernelPort({.devices = {"/dev/null"}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(port.status().message(),
            "/dev/null is not a dxgpu device (DXGPU_IOC_INFO: Inappropriate ioctl for device)");
  EXPECT_EQ(OpenFds(), before) << "the file was left open";
}

TEST(KernelPort, ADirectoryIsNamed) {
  auto port = host::OpenKernelPort({.devices = {"/"}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(port.status().message(), "cannot open /: Is a directory");
}

TEST(KernelPort, TheFirstBadFileOfSeveralIsNamed) {
  auto port = host::OpenKernelPort({.devices = {"/dev/null", "/dev/dxgpu-test-missing-7"}});
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("/dev/null"), std::string::npos);
  EXPECT_EQ(port.status().message().find("missing"), std::string::npos);
}

TEST(KernelPort, NoDeviceFilesIsAnArgumentError) {
  auto port = host::OpenKernelPort(KernelPortOptions{.devices = {}});
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kInvalidArgument);
}

// dxgpu's layout: BAR0 16 MiB 32-bit, BAR2 256 MiB 64-bit prefetchable.
dxgpu_info DxgpuInfo() {
  dxgpu_info info{};
  info.bar_addr[0] = 0x4000'0000;
  info.bar_size[0] = 16 << 20;
  info.bar_addr[2] = 0x40'0000'0000;
  info.bar_size[2] = 256 << 20;
  info.bar_flags[2] = DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH;
  return info;
}

TEST(KernelPortMemoryWindow, TheLargest64BitPrefetchableBar) {
  dxgpu_info info = DxgpuInfo();
  EXPECT_EQ(host::MemoryWindowOf(info).address, 0x40'0000'0000u);
  EXPECT_EQ(host::MemoryWindowOf(info).size, 256u << 20);
  info.bar_addr[4] = 0x40'1000'0000;  // a 64-bit prefetchable BAR4 of 512 MiB
  info.bar_size[4] = 512 << 20;
  info.bar_flags[4] = DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH;
  const host::KernelMemoryWindow w = host::MemoryWindowOf(info);
  EXPECT_EQ(w.address, 0x40'1000'0000u);
  EXPECT_EQ(w.size, 512u << 20);
}

TEST(KernelPortMemoryWindow, NotPrefetchableOr32BitIsNoWindow) {
  dxgpu_info info = DxgpuInfo();
  info.bar_flags[2] = DXGPU_BAR_MEM64;  // 64-bit, not prefetchable
  EXPECT_EQ(host::MemoryWindowOf(info).size, 0u);
  info.bar_flags[2] = DXGPU_BAR_PREFETCH;  // 32-bit prefetchable
  EXPECT_EQ(host::MemoryWindowOf(info).size, 0u);
  // BAR0 never is the window, whatever it is.
  dxgpu_info only_bar0{};
  only_bar0.bar_addr[0] = 0x40'0000'0000;
  only_bar0.bar_size[0] = 1 << 20;
  only_bar0.bar_flags[0] = DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH;
  EXPECT_EQ(host::MemoryWindowOf(only_bar0).size, 0u);
}

}  // namespace
}  // namespace dxpu::test
