// sysfs_backend.cc - attach through dxpu.ko's sysfs (sysfs_backend.h).
#include "manager/sysfs_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "link/unique_fd.h"
#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

constexpr const char* kDxpuDir = "/sys/devices/dxpu";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The MAC of a fabric address: "02:00:00:00:b0:01" or "mac:02:00:...".
std::optional<std::string> MacOf(const std::string& fabric) {
  std::string mac = fabric.starts_with("mac:") ? fabric.substr(4) : fabric;
  if (mac.size() != 17) return std::nullopt;
  for (size_t i = 0; i < mac.size(); ++i) {
    const bool colon = i % 3 == 2;
    if (colon ? mac[i] != ':' : !std::isxdigit(static_cast<unsigned char>(mac[i])))
      return std::nullopt;
  }
  return Lower(mac);
}

// The errno of writing `value` to `path` (0: all of it written).
int WriteFile(const std::string& path, const std::string& value) {
  link::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  const ssize_t n = write(fd.get(), value.data(), value.size());
  if (n < 0) return errno;
  return static_cast<size_t>(n) == value.size() ? 0 : EIO;
}

// What dxpu.ko's errno means for a write of `value` to `path` (docs/kernel-module.md, "Hot-plug
// slots": the same errno says different things in different files).
PoolError WriteError(const std::string& path, const std::string& value, int err) {
  struct Meaning {
    ErrorKind kind;
    const char* name;
    const char* why;
  };
  const bool power = path.ends_with("/power");
  const bool bind = path.ends_with("/bind");
  const bool unbind = path.ends_with("/unbind");
  Meaning m{ErrorKind::kUnavailable, "sysfs", ""};
  if (err == EACCES || err == EPERM) {
    m = {ErrorKind::kUnavailable, "sysfs", "only root may change dxpu.ko's slots"};
  } else if (power && value == "1" && err == ENODEV) {
    m = {ErrorKind::kConflict, "not-assigned",
         "no device answers there: has the bridge assigned it to this host's node "
         "(dxpu bridge assign --node-id, --host-bdf)?"};
  } else if (power && value == "1" && (err == ETIMEDOUT || err == ENOLINK)) {
    m = {ErrorKind::kUnavailable, "no-session",
         "no DxFP session with the bridge: is it up, on the network of dxpu.ko's ifname=?"};
  } else if (power && value == "1" && err == ENXIO) {
    m = {ErrorKind::kConflict, "slot-unbound", "the slot was unbound meanwhile"};
  } else if (power && value == "0" && err == ENODEV) {
    m = {ErrorKind::kConflict, "slot-off", "the slot is off"};
  } else if ((power || bind || unbind) && err == EBUSY) {
    m = {ErrorKind::kConflict, "slot-busy", "the slot is powered"};
  } else if (bind && err == EEXIST) {
    m = {ErrorKind::kConflict, "already-bound", "another slot is bound to this device"};
  } else if (bind && err == EINVAL) {
    m = {ErrorKind::kBadRequest, "bad-binding", "dxpu.ko refused the MAC or the BDF"};
  } else if ((bind || unbind) && err == ENODEV) {
    m = {ErrorKind::kNotFound, "no-slot", "dxpu.ko has no such slot"};
  } else if (unbind && err == ENXIO) {
    m = {ErrorKind::kConflict, "slot-unbound", "the slot is not bound"};
  }
  const char* errno_name = strerrorname_np(err);
  return PoolError{m.kind, m.name,
                   fmt::format("writing '{}' to {}: {} ({}){}{}", value, path,
                               std::error_code(err, std::system_category()).message(),
                               errno_name != nullptr ? errno_name : std::to_string(err),
                               *m.why ? ": " : "", m.why)};
}

}  // namespace

std::vector<SlotLine> ParseSlots(const std::string& text) {
  std::vector<SlotLine> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    SlotLine s;
    std::string second, third, fourth;
    if (!(words >> s.slot >> second)) continue;
    if (second == "unbound") {
      out.push_back(std::move(s));
      continue;
    }
    if (!(words >> third >> fourth) || (fourth != "on" && fourth != "off")) {
      spdlog::warn("agent: cannot read the slots line '{}'", line);
      continue;
    }
    s.bound = true;
    s.mac = Lower(second);
    s.bdf = Lower(third);
    s.on = fourth == "on";
    out.push_back(std::move(s));
  }
  return out;
}

bool SysfsBackend::Present() const { return access((root_ + kDxpuDir).c_str(), F_OK) == 0; }

PoolResult<std::vector<SlotLine>> SysfsBackend::Slots() const {
  const std::string path = root_ + kDxpuDir + "/slots";
  std::ifstream in(path);
  if (!in) {
    return PoolError{ErrorKind::kUnavailable, "no-module",
                     fmt::format("cannot read {}: is dxpu.ko loaded?", path)};
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseSlots(text.str());
}

PoolResult<Done> SysfsBackend::Write(const std::string& path, const std::string& value) const {
  const int err = WriteFile(root_ + path, value);
  if (err != 0) return WriteError(root_ + path, value, err);
  return Done{};
}

PoolResult<std::string> SysfsBackend::Attach(const AttachRequest& r) {
  std::optional<std::string> mac = MacOf(r.fabric);
  if (!mac) {
    return PoolError{ErrorKind::kBadRequest, "bad-fabric",
                     fmt::format("dxpu.ko reaches bridges by MAC, not '{}'", r.fabric)};
  }
  const std::string bdf = BdfText(r.host_bdf);
  PoolResult<std::vector<SlotLine>> slots = Slots();
  if (!slots.ok()) return slots.error();
  const SlotLine* mine = nullptr;
  const SlotLine* free_slot = nullptr;
  for (const SlotLine& s : slots.value()) {
    if (s.bound && s.mac == *mac && s.bdf == bdf) mine = &s;
    if (!s.bound && free_slot == nullptr) free_slot = &s;
  }
  std::string slot;
  if (mine != nullptr) {
    if (mine->on) return fmt::format("{} (slot {})", r.gpu, mine->slot);
    slot = mine->slot;
  } else {
    if (free_slot == nullptr) {
      return PoolError{ErrorKind::kConflict, "no-free-slot",
                       "every dxpu hot-plug slot is bound (load dxpu.ko with more slots=)"};
    }
    slot = free_slot->slot;
    // The bridge's key first (docs/kernel-module.md "Fabric keys"): the session dxpu.ko opens to
    // it at bind is then authenticated, with the host key already in /sys/devices/dxpu/key.
    if (!r.bridge_key.empty()) {
      PoolResult<Done> keyed =
          Write(std::string(kDxpuDir) + "/bridge_keys", fmt::format("{} {}", *mac, r.bridge_key));
      if (!keyed.ok()) return keyed.error();
    }
    PoolResult<Done> bound =
        Write(std::string(kDxpuDir) + "/bind", fmt::format("{} {} {}", slot, *mac, bdf));
    if (!bound.ok()) return bound.error();
  }
  PoolResult<Done> on = Write("/sys/bus/pci/slots/" + slot + "/power", "1");
  if (!on.ok() && on.error().name == "slot-busy") {
    spdlog::info("agent: {}: slot {} was powered on meanwhile", r.gpu, slot);
  } else if (!on.ok()) {
    PoolError e = on.error();
    e.message = fmt::format("{} {}: {}", *mac, bdf, e.message);
    if (mine != nullptr) return e;  // bound before this call: it stays bound
    PoolResult<Done> unbound = Write(std::string(kDxpuDir) + "/unbind", slot);  // unwind
    if (!unbound.ok()) {
      spdlog::error("agent: {}: slot {} stays bound: {}", r.gpu, slot, unbound.error().message);
      e.message += fmt::format(" (and slot {} stays bound: {})", slot, unbound.error().message);
    }
    return e;
  }
  spdlog::info("agent: {} attached in slot {} ({} {})", r.gpu, slot, *mac, bdf);
  return fmt::format("{} (slot {})", r.gpu, slot);
}

PoolResult<Done> SysfsBackend::Detach(const AttachRequest& r) {
  std::optional<std::string> mac = MacOf(r.fabric);
  if (!mac) return Done{};  // never attached through this backend
  PoolResult<std::vector<SlotLine>> slots = Slots();
  if (!slots.ok()) return slots.error();
  const std::string bdf = BdfText(r.host_bdf);
  for (const SlotLine& s : slots.value()) {
    if (!s.bound || s.mac != *mac || s.bdf != bdf) continue;
    // A slot found off or unbound here went off or was unbound since the slots were read
    // (a surprise removal powers slots off): what this call was to do.
    if (s.on) {
      PoolResult<Done> off = Write("/sys/bus/pci/slots/" + s.slot + "/power", "0");
      if (!off.ok() && off.error().name != "slot-off") return off.error();
    }
    PoolResult<Done> unbound = Write(std::string(kDxpuDir) + "/unbind", s.slot);
    if (!unbound.ok() && unbound.error().name != "slot-unbound") return unbound.error();
    spdlog::info("agent: {} detached from slot {}", r.gpu, s.slot);
  }
  return Done{};
}

}  // namespace dxpu::manager
