// lspci_command.cc - `dxpu lspci` (lspci_command.h).
#include "lspci_command.h"

extern "C" {
#include <pci/pci.h>
}
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace dxpu::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr int kFirstDxpuDomain = 0x10000;
// Where the PCI core shows the devices; libpci reads the same tree. Never --sysfs: the devices
// listed are always this machine's.
constexpr const char* kPciDevices = "/sys/bus/pci/devices";

struct LspciOptions {
  std::string sysfs = "/sys";  // where devices/dxpu/{slots,bridges} are read
  bool json = false;
};

// A line of /sys/devices/dxpu/slots: "dxpu0 02:00:00:00:b0:01 01:00.0 on" or "dxpu1 unbound".
struct SlotBinding {
  std::string name;  // "dxpu0"
  int number = -1;   // the device number on the root bus
  std::string bridge;
  std::string remote_bdf;
  std::string power;  // "on", "off"; empty when unbound
};

// A line of /sys/devices/dxpu/bridges: "<mac> established rx 63 tx 64 tx_errors 0".
struct BridgeSession {
  std::string state;
  std::map<std::string, uint64_t> counters;  // rx, tx, tx_errors
};

struct Bar {
  int region = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  bool io = false;
  bool is64 = false;
  bool prefetchable = false;
};

struct PciFunction {
  std::string bdf;  // "10000:00:00.0"
  int bus = 0;
  int dev = 0;
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint16_t device_class = 0;  // base class and subclass
  uint8_t revision = 0;
  std::string class_name;
  std::optional<std::string> vendor_name;
  std::optional<std::string> device_name;
  std::vector<Bar> bars;
};

std::vector<SlotBinding> ReadSlots(const fs::path& file) {
  std::vector<SlotBinding> slots;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    SlotBinding s;
    std::string bridge;
    if (!(words >> s.name) || s.name.rfind("dxpu", 0) != 0) continue;
    try {
      s.number = std::stoi(s.name.substr(4));
    } catch (const std::exception&) {
      continue;
    }
    if (words >> bridge && bridge != "unbound") {
      s.bridge = bridge;
      words >> s.remote_bdf >> s.power;
    }
    slots.push_back(std::move(s));
  }
  return slots;
}

std::map<std::string, BridgeSession> ReadBridges(const fs::path& file) {
  std::map<std::string, BridgeSession> bridges;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string mac;
    BridgeSession b;
    if (!(words >> mac >> b.state)) continue;
    std::string key;
    uint64_t value = 0;
    while (words >> key >> value) b.counters[key] = value;
    bridges[mac] = std::move(b);
  }
  return bridges;
}

// libpci's fatal errors: report and leave (it must not return). msg is libpci's printf format.
// NOLINTNEXTLINE(cert-dcl50-cpp): libpci's signature
__attribute__((noreturn, format(printf, 1, 2))) void LibpciError(char* msg, ...) {
  va_list args;
  va_start(args, msg);
  std::fputs("dxpu lspci: libpci: ", stderr);
  std::vfprintf(stderr, msg, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stdout);
  std::_Exit(kExitFailure);
}

// NOLINTNEXTLINE(cert-dcl50-cpp): libpci's signature
void LibpciQuiet(char* /*msg*/, ...) {}

struct PciAccessDeleter {
  void operator()(pci_access* a) const { pci_cleanup(a); }
};

std::optional<std::string> LookUp(pci_access* pacc, int what, unsigned a, unsigned b = 0) {
  std::array<char, 256> buf{};
  const char* name = pci_lookup_name(pacc, buf.data(), static_cast<int>(buf.size()),
                                     what | PCI_LOOKUP_NO_NUMBERS, a, b);
  if (name == nullptr) return std::nullopt;
  return std::string(name);
}

// Whether the PCI core placed the function under dxpu.ko's root device.
bool UnderDxpu(const std::string& bdf) {
  std::error_code ec;
  const fs::path real = fs::canonical(fs::path(kPciDevices) / bdf, ec);
  return !ec && real.string().find("/devices/dxpu/") != std::string::npos;
}

// The functions in dxpu's PCI domains, in BDF order.
std::vector<PciFunction> ScanDxpuFunctions() {
  std::vector<PciFunction> out;
  std::error_code ec;
  if (!fs::is_directory(kPciDevices, ec)) return out;  // no PCI here at all
  std::unique_ptr<pci_access, PciAccessDeleter> pacc(pci_alloc());
  pacc->method = PCI_ACCESS_SYS_BUS_PCI;
  pacc->error = LibpciError;
  pacc->warning = LibpciQuiet;
  pacc->debug = LibpciQuiet;
  pci_init(pacc.get());
  pci_scan_bus(pacc.get());
  for (pci_dev* d = pacc->devices; d != nullptr; d = d->next) {
    if (d->domain < kFirstDxpuDomain) continue;
    PciFunction f;
    f.bdf = fmt::format("{:04x}:{:02x}:{:02x}.{}", d->domain, d->bus, d->dev, d->func);
    if (!UnderDxpu(f.bdf)) continue;
    pci_fill_info(
        d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_CLASS_EXT | PCI_FILL_BASES | PCI_FILL_SIZES);
    f.bus = d->bus;
    f.dev = d->dev;
    f.vendor_id = d->vendor_id;
    f.device_id = d->device_id;
    f.device_class = d->device_class;
    f.revision = d->rev_id;
    f.class_name = LookUp(pacc.get(), PCI_LOOKUP_CLASS, d->device_class).value_or("Class");
    f.vendor_name = LookUp(pacc.get(), PCI_LOOKUP_VENDOR, d->vendor_id);
    f.device_name = LookUp(pacc.get(), PCI_LOOKUP_DEVICE, d->vendor_id, d->device_id);
    for (int i = 0; i < 6; ++i) {
      const pciaddr_t base = d->base_addr[i];
      const pciaddr_t size = d->size[i];
      if (base == 0 && size == 0) continue;
      Bar b;
      b.region = i;
      b.size = size;
      b.io = (base & PCI_BASE_ADDRESS_SPACE_IO) != 0;
      b.address = b.io ? base & PCI_ADDR_IO_MASK : base & PCI_ADDR_MEM_MASK;
      b.is64 = !b.io && (base & PCI_BASE_ADDRESS_MEM_TYPE_MASK) == PCI_BASE_ADDRESS_MEM_TYPE_64;
      b.prefetchable = !b.io && (base & PCI_BASE_ADDRESS_MEM_PREFETCH) != 0;
      f.bars.push_back(b);
    }
    out.push_back(std::move(f));
  }
  std::ranges::sort(out, {}, &PciFunction::bdf);
  return out;
}

// lspci's sizes: 16M, 256M, 4K.
std::string SizeText(uint64_t size) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  size_t unit = 0;
  while (size >= 1024 && size % 1024 == 0 && unit + 1 < std::size(kUnits)) {
    size /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", size, kUnits[unit]);
}

// "NVIDIA Corporation GA100 [A100 PCIe 40GB] [10de:20b0]", "Device [4450:0001]" (as lspci -nn).
std::string IdsText(const PciFunction& f) {
  std::string text = f.vendor_name ? *f.vendor_name + " " : "";
  text += f.device_name.value_or("Device");
  return text + fmt::format(" [{:04x}:{:04x}]", f.vendor_id, f.device_id);
}

std::string BridgeText(const std::map<std::string, BridgeSession>& bridges,
                       const std::string& mac) {
  auto it = bridges.find(mac);
  return fmt::format("bridge {} ({})", mac, it == bridges.end() ? "no session" : it->second.state);
}

const SlotBinding* SlotOf(const PciFunction& f, const std::vector<SlotBinding>& slots) {
  if (f.bus != 0) return nullptr;  // slots are the root bus's device numbers
  auto it = std::ranges::find(slots, f.dev, &SlotBinding::number);
  return it == slots.end() || it->bridge.empty() ? nullptr : &*it;
}

Json FunctionJson(const PciFunction& f, const SlotBinding* slot,
                  const std::map<std::string, BridgeSession>& bridges) {
  Json bars = Json::array();
  for (const Bar& b : f.bars) {
    bars.push_back({{"region", b.region},
                    {"address", fmt::format("{:#x}", b.address)},
                    {"size", b.size},
                    {"type", b.io ? "io" : "memory"},
                    {"64bit", b.is64},
                    {"prefetchable", b.prefetchable}});
  }
  const auto optional = [](const std::optional<std::string>& s) { return s ? Json(*s) : Json(); };
  Json j{{"bdf", f.bdf},
         {"class", fmt::format("{:04x}", f.device_class)},
         {"class_name", f.class_name},
         {"vendor_id", fmt::format("{:04x}", f.vendor_id)},
         {"device_id", fmt::format("{:04x}", f.device_id)},
         {"vendor", optional(f.vendor_name)},
         {"device", optional(f.device_name)},
         {"revision", fmt::format("{:02x}", f.revision)},
         {"bars", bars},
         {"dxpu_slot", nullptr},
         {"bridge", nullptr},
         {"remote_bdf", nullptr},
         {"session", nullptr}};
  if (slot != nullptr) {
    j["dxpu_slot"] = slot->name;
    j["bridge"] = slot->bridge;
    j["remote_bdf"] = slot->remote_bdf;
    auto it = bridges.find(slot->bridge);
    if (it != bridges.end()) j["session"] = it->second.state;
  }
  return j;
}

void PrintFunction(const PciFunction& f, const SlotBinding* slot,
                   const std::map<std::string, BridgeSession>& bridges) {
  std::cout << fmt::format("{} {} [{:04x}]: {}", f.bdf, f.class_name, f.device_class, IdsText(f));
  if (f.revision != 0) std::cout << fmt::format(" (rev {:02x})", f.revision);
  std::cout << '\n';
  for (const Bar& b : f.bars) {
    if (b.io) {
      std::cout << fmt::format("\tRegion {}: I/O ports at {:04x} [size={}]\n", b.region, b.address,
                               SizeText(b.size));
    } else {
      std::cout << fmt::format("\tRegion {}: Memory at {:08x} ({}, {}) [size={}]\n", b.region,
                               b.address, b.is64 ? "64-bit" : "32-bit",
                               b.prefetchable ? "prefetchable" : "non-prefetchable",
                               SizeText(b.size));
    }
  }
  if (slot != nullptr) {
    std::cout << fmt::format("\tDxPU: slot {}, {}, remote {}\n", slot->name,
                             BridgeText(bridges, slot->bridge), slot->remote_bdf);
  } else {
    std::cout << "\tDxPU: not in a bound slot\n";
  }
}

int Run(const LspciOptions& o) {
  const fs::path dxpu_root = fs::path(o.sysfs) / "devices/dxpu";
  const std::vector<SlotBinding> slots = ReadSlots(dxpu_root / "slots");
  const std::map<std::string, BridgeSession> bridges = ReadBridges(dxpu_root / "bridges");
  const std::vector<PciFunction> functions = ScanDxpuFunctions();

  if (o.json) {
    Json list = Json::array();
    for (const PciFunction& f : functions)
      list.push_back(FunctionJson(f, SlotOf(f, slots), bridges));
    std::cout << list.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
    return kExitOk;
  }
  for (const PciFunction& f : functions) PrintFunction(f, SlotOf(f, slots), bridges);
  if (functions.empty()) {
    std::error_code ec;
    std::cout << (fs::is_directory(dxpu_root, ec)
                      ? "no DxPU devices (dxpu.ko is loaded: bind a slot and power it on)\n"
                      : "no DxPU devices (is dxpu.ko loaded?)\n");
  }
  // Slots bound to a remote device that is not here: powered off, or the attach failed.
  for (const SlotBinding& s : slots) {
    if (s.bridge.empty() || std::ranges::any_of(functions, [&](const PciFunction& f) {
          return SlotOf(f, slots) == &s;
        }))
      continue;
    std::cout << fmt::format("{}: bound to {}, remote {}, power {}, no device\n", s.name,
                             BridgeText(bridges, s.bridge), s.remote_bdf, s.power);
  }
  return kExitOk;
}

}  // namespace

Command AddLspciCommand(CLI::App& parent) {
  auto opts = std::make_shared<LspciOptions>();
  CLI::App* cmd =
      parent.add_subcommand("lspci", "List the PCI devices dxpu.ko attached and where each lives");
  cmd->footer(
      "Lists the PCI functions in dxpu.ko's PCI domains (>= 10000, under /sys/devices/dxpu) as\n"
      "libpci reads them, like lspci -nn -v: class, vendor and device IDs, revision, and each\n"
      "BAR's address, type and size; then where the device really is: its hot-plug slot\n"
      "(dxpuN), the bridge it is borrowed from and that bridge's DxFP session state, and the\n"
      "BDF the bridge presents it at (from /sys/devices/dxpu/slots and bridges). Slots bound\n"
      "to a device that is not attached are listed after. Without dxpu.ko, says so; exit 0.\n"
      "Examples:\n"
      "  dxpu lspci\n"
      "  dxpu lspci --json");
  cmd->add_option("--sysfs", opts->sysfs,
                  "sysfs root for devices/dxpu/{slots,bridges} (the PCI devices always come "
                  "from this machine's /sys)")
      ->type_name("ROOT")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print a JSON list of the devices (empty when none)");
  return {cmd, [opts] { return Run(*opts); }};
}

}  // namespace dxpu::cli
