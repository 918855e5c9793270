// flash_push.cc - `dxpu flash push` and `dxpu flash status` (flash_push.h). Every answer comes
// from the network: the decoder has checked its form; this file checks what it claims (the
// image's size, that the transfer moves forward) before acting on it.
#include "flash_push.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bridge-fw/bridge_config.h"
#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/downgrade.h"
#include "bridge-fw/firmware/image.h"
#include "bridge-fw/management_client.h"
#include "bridge_command.h"
#include "command.h"
#include "error_report.h"
#include "progress.h"
#include "result.h"

namespace dxpu::cli {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace fw = dxpu::firmware;

// Refusals in a row that move the transfer no further (out-of-order, bad-crc, no-transfer,
// incomplete) before the bridge is given up.
constexpr int kMaxSetbacks = 5;
// Bridge restarts (its transfer lost: no-transfer) survived by beginning again, per bridge.
constexpr int kMaxRestarts = 3;
// FW_COMMIT reads the image back from the flash and verifies it: it is given this long.
constexpr int kCommitWaitMs = 30000;
constexpr auto kPollEvery = std::chrono::milliseconds(250);
// A FW_REBOOT nobody answered is sent again this long after, while the old image still runs.
constexpr auto kRebootAgainAfter = std::chrono::seconds(2);
// While waiting for a booted image to be marked good: a line on stderr this often when stderr
// is not a terminal (and whenever what the bridge says changes); redrawn in place on one.
constexpr auto kWaitLineEvery = std::chrono::seconds(5);
// Progress reads the clock once every 256 calls: one call per 128 bytes sent is one clock
// read per 32 KiB, so the line moves however slowly the chunks go.
constexpr uint64_t kProgressUnit = 128;

Result<link::LinkAddress> ParseTarget(const std::string& to) {
  if (to.starts_with("unix:")) {
    if (to.size() == 5) return Error{"bad-address", "'unix:' names no socket path"};
    return link::LinkAddress::Unix(to.substr(5));
  }
  if (std::optional<link::LinkAddress> ip = bridge::ParseIpPort(to)) return *ip;
  return Error{"bad-address", fmt::format("--bridge '{}' is neither IP:PORT nor unix:PATH", to)};
}

Result<std::vector<link::LinkAddress>> ParseTargets(const std::vector<std::string>& bridges) {
  std::vector<link::LinkAddress> out;
  for (const std::string& b : bridges) {
    Result<link::LinkAddress> a = ParseTarget(b);
    if (!a.ok()) return a.error();
    out.push_back(a.value());
  }
  return out;
}

// A bridge nothing answered at: the error with what to check.
Error WithHint(Error e, const std::string& address) {
  if (const std::string hint = UnreachableBridgeHint(e.name, address); !hint.empty())
    e.message += ". " + hint;
  return e;
}

std::string VersionText(uint32_t packed) { return fw::FirmwareVersion{packed}.ToString(); }

std::string SlotText(uint8_t slot) {
  if (slot == 0) return "A";
  if (slot == 1) return "B";
  return "none";
}

Json SlotJson(uint8_t slot) { return slot <= 1 ? Json(SlotText(slot)) : Json(nullptr); }

// "running 1.4.0 from slot B, on trial (2 tries left)".
std::string RunningText(const dxpu_mgmt_fw_report& r) {
  std::string s = fmt::format("running {} from slot {}", VersionText(r.running_version),
                              SlotText(r.running_slot));
  if (r.trial_slot == r.running_slot)
    return s + fmt::format(", on trial ({} tries left)", r.tries_left);
  if (r.slot_state[r.running_slot] == DXPU_MGMT_FW_SLOT_GOOD) return s + ", good";
  return s;
}

// What `flash push` checks before it contacts any bridge: the header's own checks and the
// length it gives. The signature, hash and sections are the bridge's to judge (at FW_BEGIN and
// FW_COMMIT), with its keys.
Result<fw::ImageHeader> CheckImage(const std::string& path, std::span<const uint8_t> bytes) {
  const fw::FirmwareResult<fw::ImageHeader> h = fw::DecodeHeader(bytes);
  if (!h.ok()) return Error{h.error().name, fmt::format("{}: {}", path, h.error().message)};
  const uint64_t have = bytes.size() - fw::kHeaderBytes;
  const uint64_t want = h.value().payload_length;
  if (have < want)
    return Error{"truncated", fmt::format("{}: the header says {} payload bytes; {} follow it",
                                          path, want, have)};
  if (have > want)
    return Error{"too-large",
                 fmt::format("{}: {} bytes after the {}-byte payload", path, have - want, want)};
  return h.value();
}

// --allow-downgrade FILE: an authorisation, and for this image (a bridge checks the rest: the
// signature, its own identity).
Result<fw::ImageHeader> CheckAuthorisation(const FlashPushOptions& o,
                                           std::span<const uint8_t> image,
                                           const fw::ImageHeader& header) {
  const fw::FirmwareResult<fw::DowngradeAuth> a = fw::DecodeDowngrade(o.downgrade);
  if (!a.ok())
    return Error{a.error().name, fmt::format("{}: {}", o.downgrade_file, a.error().message)};
  const fw::Sha256Digest digest = fw::ImageDigest(image);
  if (a.value().image_digest != digest)
    return Error{"bad-authorisation",
                 fmt::format("{} allows the image {} with digest {}, not {} (digest {})",
                             o.downgrade_file, a.value().version.ToString(),
                             fw::ToHex(a.value().image_digest), o.image, fw::ToHex(digest))};
  return header;
}

// One bridge's result.
struct Outcome {
  bool ok = false;
  bool nothing_to_do = false;               // it already ran the image's version
  Error error;                              // when !ok
  std::string message;                      // when ok: what happened
  std::optional<uint8_t> slot;              // the slot the image went to
  std::optional<uint32_t> running_version;  // as the bridge last said
};

// The update of one bridge: FW_STATUS, FW_BEGIN, FW_CHUNKs from where the bridge says,
// FW_COMMIT, FW_REBOOT, then FW_STATUS until the image's version runs.
class BridgeUpdate {
 public:
  BridgeUpdate(const FlashPushOptions& o, std::span<const uint8_t> image,
               const fw::ImageHeader& header, const link::LinkAddress& target, std::string label,
               const std::shared_ptr<bridge::ManagementSigner>& signer)
      : o_(o),
        image_(image),
        stream_(o.downgrade),
        version_(header.version.packed),
        security_version_(header.security_version),
        hw_revision_(header.hw_revision),
        build_id_(header.build_id),
        label_(std::move(label)),
        client_(target, TimeoutMs(o.targets.timeout), o.targets.attempts, signer),
        commit_client_(target, std::max(TimeoutMs(o.targets.timeout), 1000),
                       std::max(o.targets.attempts,
                                kCommitWaitMs / std::max(TimeoutMs(o.targets.timeout), 1000)),
                       signer),
        poll_client_(target, TimeoutMs(o.targets.timeout), 1, signer) {}

  Outcome Run() {
    stream_.insert(stream_.end(), image_.begin(), image_.end());
    Result<std::string> done = Update();
    out_.ok = done.ok();
    if (done.ok()) {
      out_.message = done.value();
    } else {
      out_.error = done.error();
    }
    return out_;
  }

 private:
  using Report = Result<dxpu_mgmt_fw_report>;

  Result<std::string> Update() {
    const Report status = ReportOf(client_.FwStatus(), "fw-status");
    if (!status.ok()) return WithHint(status.error(), label_);
    first_ = status.value();
    if (first_.running_version == version_ && !o_.reinstall) {
      // The bridge reports versions, not builds: an image of the running version is taken to
      // be the running image (--reinstall writes it anyway).
      if (first_.trial_slot == first_.running_slot && !o_.no_reboot && o_.wait.count() > 0)
        return WaitForGood(first_.running_slot, /*acked=*/true);  // still on trial: wait
      out_.nothing_to_do = true;
      return fmt::format(
          "bridge {} already runs {} (slot {}{}), the version of {} (build id {}): nothing to "
          "do (--reinstall writes it into the other slot anyway)",
          label_, VersionText(version_), SlotText(first_.running_slot),
          first_.trial_slot == first_.running_slot ? ", on trial" : "", o_.image,
          build_id_.empty() ? "-" : build_id_);
    }
    Report r = Begin();
    if (!r.ok()) return r.error();
    r = Transfer(r.value());
    if (!r.ok()) return r.error();
    if (Booted(r.value())) {  // restarted after the commit: booted it
      if (o_.no_reboot || o_.wait.count() == 0) return RunningText(r.value());
      return WaitForGood(r.value().running_slot, /*acked=*/true);
    }
    if (o_.no_reboot)
      return fmt::format("{} committed to slot {}: it boots on trial at the bridge's next restart",
                         VersionText(version_), SlotText(r.value().target_slot));
    return Reboot(r.value().target_slot);
  }

  // The bridge runs the image: its version, and (for a reinstall, where the old image has the
  // same version) from the slot it was written to.
  bool Booted(const dxpu_mgmt_fw_report& r) const {
    if (r.running_version != version_) return false;
    return !o_.reinstall || (out_.slot && r.running_slot == *out_.slot);
  }

  // The report an OK answer carries, or why there is none (the bridge's refusal, with what
  // the first FW_STATUS said where it helps).
  Report ReportOf(const bridge::ManagementReply& reply, std::string_view step) {
    if (!reply.answered())
      return Error{reply.error_name, fmt::format("{} (at {})", reply.error, step)};
    if (reply.msg.status != DXPU_MGMT_OK)
      return Error{dxpu_mgmt_status_name(reply.msg.status),
                   bridge::RefusalSentence(reply.msg.status) + Detail(reply.msg.status)};
    std::string why;
    const std::optional<dxpu_mgmt_fw_report> r = bridge::DecodeFwReport(reply, &why);
    if (!r) return Error{"bad-response", fmt::format("{} (at {})", why, step)};
    out_.running_version = r->running_version;
    return *r;
  }

  std::string Detail(uint16_t status) const {
    if (status == DXPU_MGMT_DOWNGRADE) {
      const fw::FirmwareVersion floor = fw::PushFloor(fw::FirmwareVersion{first_.min_version},
                                                      fw::FirmwareVersion{first_.running_version});
      if (fw::FirmwareVersion{version_} < floor && o_.downgrade.empty())
        return fmt::format(
            " (image {} is older than the bridge's {} (it runs {}, minimum {}): a downgrade "
            "needs --allow-downgrade with an authorisation signed for this bridge and image, "
            "dxpu flash authorize-downgrade)",
            VersionText(version_), floor.ToString(), VersionText(first_.running_version),
            VersionText(first_.min_version));
      return fmt::format(
          " (image {}, security version {}: {}; the bridge's log names the reason)",
          VersionText(version_), security_version_,
          o_.downgrade.empty()
              ? "below the bridge's anti-rollback counter"
              : fmt::format("the bridge refused the authorisation {} (another bridge, another "
                            "image, a key it does not trust) or the image's security version "
                            "is below its anti-rollback counter",
                            o_.downgrade_file));
    }
    if (status == DXPU_MGMT_WRONG_HARDWARE)
      return fmt::format(" (image for hardware revision {}, bridge revision {})", hw_revision_,
                         first_.hw_revision);
    return "";
  }

  // A report of this image's transfer: begun, into the slot not running, for as many bytes as
  // the file holds.
  Report CheckTransfer(Report r, std::string_view step) {
    if (!r.ok()) return r;
    const dxpu_mgmt_fw_report& t = r.value();
    if (t.transfer == DXPU_MGMT_FW_IDLE || t.target_slot > 1 || t.target_slot == t.running_slot ||
        t.total != stream_.size())
      return Error{"bad-response",
                   fmt::format("the bridge answered {} with a {} transfer of {} bytes into slot "
                               "{}; the image is {} bytes",
                               step, dxpu_mgmt_fw_transfer_name(t.transfer), t.total,
                               SlotText(t.target_slot), stream_.size())};
    out_.slot = t.target_slot;
    return r;
  }

  Report Begin() {
    return CheckTransfer(
        ReportOf(client_.FwBegin(image_.first(fw::kHeaderBytes), !o_.downgrade.empty()),
                 "fw-begin"),
        "fw-begin");
  }

  // FW_STATUS after an out-of-order, bad-crc or incomplete answer: where to go on from.
  Report Resync() {
    Report r = ReportOf(client_.FwStatus(), "fw-status");
    if (!r.ok()) return r;
    if (r.value().transfer == DXPU_MGMT_FW_IDLE) return Restarted();
    return CheckTransfer(r, "fw-status");
  }

  // The bridge lost the transfer (no-transfer: it restarted). Unless it came back running the
  // image (a restart after the commit boots it on trial): FW_BEGIN again, from 0. Only
  // kMaxRestarts times: a bridge that keeps dying under the transfer is given up.
  Report Restarted() {
    if (++restarts_ > kMaxRestarts)
      return Error{"restarted", fmt::format("the bridge restarted {} times during the transfer "
                                            "and lost it each time (see its log)",
                                            restarts_)};
    Report r = ReportOf(client_.FwStatus(), "fw-status");
    if (!r.ok() || Booted(r.value())) return r;
    return Begin();
  }

  std::optional<Error> Setback(std::string_view what) {
    if (++setbacks_ <= kMaxSetbacks) return std::nullopt;
    return Error{"no-progress", fmt::format("{} times in a row the bridge took nothing (last: {})",
                                            setbacks_, what)};
  }

  // FW_CHUNKs from r.next_offset to the end; the last report.
  Report Send(dxpu_mgmt_fw_report r) {
    Progress progress(fmt::format("firmware {} to {}", VersionText(version_), label_));
    const uint64_t total = stream_.size();
    uint64_t units = 0;
    while (r.transfer == DXPU_MGMT_FW_RECEIVING && r.next_offset < total) {
      const uint64_t at = r.next_offset;
      const size_t len = std::min<uint64_t>(o_.chunk_bytes, total - at);
      const bridge::ManagementReply reply =
          client_.FwChunk(at, std::span(stream_).subspan(at, len));
      Report next = StepChunk(reply, at, len);
      if (!next.ok()) return next;
      r = next.value();
      ShowProgress(progress, units, r.next_offset, total);
    }
    return r;
  }

  // The report after one FW_CHUNK's answer: its own, or after a re-sync.
  Report StepChunk(const bridge::ManagementReply& reply, uint64_t at, size_t len) {
    const std::string step = fmt::format("fw-chunk at byte {}", at);
    if (reply.ok()) {
      Report r = CheckTransfer(ReportOf(reply, step), step);
      if (r.ok() && r.value().next_offset >= at + len) setbacks_ = 0;
      if (r.ok() && r.value().next_offset < at + len) {
        if (std::optional<Error> e = Setback("a chunk taken, the next offset unmoved")) return *e;
      }
      return r;
    }
    if (!reply.answered()) return ReportOf(reply, step);
    const uint16_t status = reply.msg.status;
    if (status == DXPU_MGMT_NO_TRANSFER) return Restarted();
    if (status != DXPU_MGMT_OUT_OF_ORDER && status != DXPU_MGMT_BAD_CRC)
      return ReportOf(reply, step);
    if (std::optional<Error> e = Setback(dxpu_mgmt_status_name(status))) return *e;
    return Resync();  // bad-crc: the same offset again, as the bridge confirms
  }

  static void ShowProgress(Progress& p, uint64_t& units, uint64_t done, uint64_t total) {
    const uint64_t all = (total + kProgressUnit - 1) / kProgressUnit;
    const uint64_t now = done / kProgressUnit;
    while (units < now) p.Update(++units, all);
  }

  // Every byte sent, then FW_COMMIT; again from where the bridge says when it lacks bytes.
  Report Transfer(dxpu_mgmt_fw_report r) {
    for (;;) {
      Report sent = Send(r);
      if (!sent.ok()) return sent;
      if (sent.value().transfer == DXPU_MGMT_FW_COMMITTED || Booted(sent.value())) return sent;
      const bridge::ManagementReply reply = commit_client_.FwCommit();
      if (reply.ok()) {
        Report c = CheckTransfer(ReportOf(reply, "fw-commit"), "fw-commit");
        if (c.ok() && c.value().transfer != DXPU_MGMT_FW_COMMITTED)
          return Error{"bad-response", "the bridge answered fw-commit, but not committed"};
        return c;
      }
      const uint16_t status = reply.msg.status;
      if (!reply.answered() || (status != DXPU_MGMT_INCOMPLETE && status != DXPU_MGMT_NO_TRANSFER))
        return ReportOf(reply, "fw-commit");
      if (status == DXPU_MGMT_INCOMPLETE) {
        if (std::optional<Error> e = Setback("incomplete")) return *e;
      }
      Report again = status == DXPU_MGMT_NO_TRANSFER ? Restarted() : Resync();
      if (!again.ok()) return again;
      r = again.value();
    }
  }

  // FW_REBOOT, then (unless --wait 0) FW_STATUS until the image runs from its slot and its
  // health check has marked it good, or the bridge fell back.
  Result<std::string> Reboot(uint8_t slot) {
    if (o_.wait.count() == 0) {
      const bridge::ManagementReply reply = client_.FwReboot();
      if (!reply.ok()) return ReportOf(reply, "fw-reboot").error();
      return fmt::format("{} committed to slot {}; reboot requested (not waited for)",
                         VersionText(version_), SlotText(slot));
    }
    // Sent once: a retry after a lost answer could reach the new bridge and reboot it again,
    // using up a try; WaitForGood sends it again only while the old image still runs.
    const bridge::ManagementReply reply = poll_client_.FwReboot();
    if (reply.answered() && !reply.ok()) return ReportOf(reply, "fw-reboot").error();
    return WaitForGood(slot, reply.ok());
  }

  // What the bridge's answer means for the wait, in words.
  static std::string WaitState(const std::optional<dxpu_mgmt_fw_report>& r, uint8_t slot) {
    if (!r) return "no answer yet (rebooting)";
    if (r->running_slot != slot)
      return fmt::format("still running {} from slot {}", VersionText(r->running_version),
                         SlotText(r->running_slot));
    if (r->trial_slot == slot)
      return fmt::format(
          "running {} from slot {} on trial ({} tries left): waiting for its "
          "health check",
          VersionText(r->running_version), SlotText(slot), r->tries_left);
    return RunningText(*r);
  }

  Result<std::string> WaitForGood(uint8_t slot, bool acked) {
    const Clock::time_point start = Clock::now();
    Clock::time_point asked = start;
    const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(o_.wait);
    WaitLines lines(label_);
    std::optional<dxpu_mgmt_fw_report> last;
    bool ran = false;  // the image ran from its slot at some point
    for (;;) {
      const std::optional<dxpu_mgmt_fw_report> r = bridge::DecodeFwReport(poll_client_.FwStatus());
      if (r) {
        last = r;
        out_.running_version = r->running_version;
        if (Booted(*r) && r->running_slot == slot) {
          ran = true;
          if (r->trial_slot != slot && r->slot_state[slot] == DXPU_MGMT_FW_SLOT_GOOD) {
            lines.Done();
            return fmt::format("{} (marked good {:.0f} s after the reboot)", RunningText(*r),
                               std::chrono::duration<double>(Clock::now() - start).count());
          }
        }
        if (r->running_slot != slot && r->slot_state[slot] == DXPU_MGMT_FW_SLOT_BAD) {
          lines.Done();
          return Error{"fell-back",
                       fmt::format("{} in slot {} was not marked good by its health check within "
                                   "its tries and was marked bad; the bridge rolled back to {} in "
                                   "slot {} (see the bridge's log)",
                                   VersionText(version_), SlotText(slot),
                                   VersionText(r->running_version), SlotText(r->running_slot))};
        }
        // The old image still runs with the new one waiting on trial: the reboot was lost.
        if (!acked && r->running_slot != slot && r->trial_slot == slot &&
            Clock::now() - asked >= kRebootAgainAfter) {
          acked = poll_client_.FwReboot().ok();
          asked = Clock::now();
        }
      }
      const Clock::time_point now = Clock::now();
      lines.Show(WaitState(r ? r : last, slot), now - start, o_.wait);
      if (now >= deadline) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(kPollEvery, deadline - now));
    }
    lines.Done();
    const std::string waited = FormatSeconds(o_.wait);
    if (ran && last)
      return Error{
          "still-on-trial",
          fmt::format("{} runs from slot {} but its health check had not marked it good "
                      "within {} ({}); it may still be (dxpu flash status --bridge {}), "
                      "or fall back after its tries (see the bridge's log)",
                      VersionText(version_), SlotText(slot), waited, RunningText(*last), label_)};
    return Error{"boot-timeout",
                 fmt::format("the bridge did not run {} from slot {} within {} of the reboot; {}",
                             VersionText(version_), SlotText(slot), waited,
                             last ? "it last said: " + RunningText(*last)
                                  : std::string("it has not answered since"))};
  }

  static std::string FormatSeconds(std::chrono::nanoseconds d) {
    return fmt::format("{:g} s", std::chrono::duration<double>(d).count());
  }

  // Progress lines while waiting for the bridge (stderr): redrawn in place on a terminal; else
  // a plain line when what the bridge says changes, and every kWaitLineEvery.
  class WaitLines {
   public:
    explicit WaitLines(std::string label)
        : label_(std::move(label)), tty_(isatty(STDERR_FILENO) == 1) {}
    void Show(const std::string& state, Clock::duration waited, std::chrono::nanoseconds limit) {
      const Clock::time_point now = Clock::now();
      const std::string line =
          fmt::format("dxpu flash push: {}: {} ({:.0f} s of {})", label_, state,
                      std::chrono::duration<double>(waited).count(), FormatSeconds(limit));
      if (tty_) {
        std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
        std::fflush(stderr);
        drawn_ = true;
        return;
      }
      if (state == state_ && now - last_ < kWaitLineEvery) return;
      state_ = state;
      last_ = now;
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    void Done() {
      if (drawn_) std::fprintf(stderr, "\n");
      drawn_ = false;
    }

   private:
    std::string label_;
    bool tty_;
    bool drawn_ = false;
    std::string state_;
    Clock::time_point last_{};
  };

  const FlashPushOptions& o_;
  std::span<const uint8_t> image_;
  std::vector<uint8_t> stream_;  // what the chunks carry: the authorisation (if any), the image
  uint32_t version_;
  uint32_t security_version_;
  uint32_t hw_revision_;
  std::string build_id_;
  std::string label_;
  bridge::ManagementClient client_;
  bridge::ManagementClient commit_client_;
  bridge::ManagementClient poll_client_;  // one send: the poll loop is the retry
  dxpu_mgmt_fw_report first_{};           // the first FW_STATUS, for refusals' details
  int setbacks_ = 0;
  int restarts_ = 0;
  Outcome out_;
};

Json OutcomeJson(const std::string& bridge, const Outcome& r, uint32_t version) {
  return {{"bridge", bridge},
          {"ok", r.ok},
          {"nothing_to_do", r.nothing_to_do},
          {"error", r.ok ? Json(nullptr) : Json(r.error.name)},
          {"message", r.ok ? r.message : r.error.message},
          {"version", VersionText(version)},
          {"slot", r.slot ? SlotJson(*r.slot) : Json(nullptr)},
          {"running_version",
           r.running_version ? Json(VersionText(*r.running_version)) : Json(nullptr)}};
}

// The per-bridge line: "ADDR: ok: ..." on stdout (not with --json: the array is stdout's), or
// "dxpu flash push: ADDR: NAME: ..." on stderr.
void PrintOutcome(const std::string& bridge, const Outcome& r, bool as_json) {
  if (r.ok) {
    if (as_json) return;
    if (r.nothing_to_do) {  // the message names the bridge
      std::cout << r.message << '\n' << std::flush;
      return;
    }
    std::cout << fmt::format("{}: ok: {}\n", bridge, r.message) << std::flush;
  } else {
    ReportError(fmt::format("flash push: {}", bridge), r.error, false, std::cout, std::cerr,
                kExitFailure);
  }
}

// ---- flash status ----

std::string SlotLine(const dxpu_mgmt_fw_report& r, int slot) {
  const uint8_t state = r.slot_state[slot];
  if (state == DXPU_MGMT_FW_SLOT_EMPTY) return "empty";
  return fmt::format("{}, {}", VersionText(r.slot_version[slot]),
                     dxpu_mgmt_fw_slot_state_name(state));
}

std::string TrialLine(const dxpu_mgmt_fw_report& r) {
  if (r.trial_slot > 1) return "none";
  return fmt::format("slot {}, {}, {} tries left", SlotText(r.trial_slot),
                     r.trial_slot == r.running_slot ? "running" : "at the next boot", r.tries_left);
}

std::string TransferLine(const dxpu_mgmt_fw_report& r) {
  switch (r.transfer) {
    case DXPU_MGMT_FW_RECEIVING:
      return fmt::format("receiving into slot {}: {} of {} bytes ({}%)", SlotText(r.target_slot),
                         r.next_offset, r.total, r.total == 0 ? 0 : r.next_offset * 100 / r.total);
    case DXPU_MGMT_FW_COMMITTED:
      return fmt::format("committed to slot {} ({} bytes): on trial at the next boot",
                         SlotText(r.target_slot), r.total);
    default:
      return "idle";
  }
}

std::string StatusText(const std::string& bridge, const dxpu_mgmt_fw_report& r) {
  std::string s = fmt::format("bridge {}\n", bridge);
  s += fmt::format("  running   {} from slot {}\n", VersionText(r.running_version),
                   SlotText(r.running_slot));
  s += fmt::format("  slot A    {}\n", SlotLine(r, 0));
  s += fmt::format("  slot B    {}\n", SlotLine(r, 1));
  s += fmt::format("  trial     {}\n", TrialLine(r));
  s += fmt::format("  minimum   {}\n", VersionText(r.min_version));
  s += fmt::format("  hardware  revision {}\n", r.hw_revision);
  s += fmt::format("  transfer  {}\n", TransferLine(r));
  return s;
}

Json StatusJson(const std::string& bridge, const dxpu_mgmt_fw_report& r) {
  Json slots = Json::array();
  for (int i = 0; i < 2; ++i) {
    const bool empty = r.slot_state[i] == DXPU_MGMT_FW_SLOT_EMPTY;
    slots.push_back({{"slot", SlotText(static_cast<uint8_t>(i))},
                     {"state", dxpu_mgmt_fw_slot_state_name(r.slot_state[i])},
                     {"version", empty ? Json(nullptr) : Json(VersionText(r.slot_version[i]))}});
  }
  const Json trial = r.trial_slot > 1
                         ? Json(nullptr)
                         : Json{{"slot", SlotText(r.trial_slot)}, {"tries_left", r.tries_left}};
  return {{"bridge", bridge},
          {"ok", true},
          {"running_slot", SlotText(r.running_slot)},
          {"running_version", VersionText(r.running_version)},
          {"slots", slots},
          {"trial", trial},
          {"min_version", VersionText(r.min_version)},
          {"hw_revision", r.hw_revision},
          {"transfer",
           {{"state", dxpu_mgmt_fw_transfer_name(r.transfer)},
            {"slot", SlotJson(r.target_slot)},
            {"next_offset", r.next_offset},
            {"total", r.total}}}};
}

Result<dxpu_mgmt_fw_report> AskStatus(const link::LinkAddress& target, const std::string& label,
                                      const BridgeTargets& o) {
  const bridge::ManagementReply reply =
      bridge::ManagementClient(target, TimeoutMs(o.timeout), o.attempts).FwStatus();
  if (!reply.answered()) return WithHint(Error{reply.error_name, reply.error}, label);
  if (reply.msg.status != DXPU_MGMT_OK)
    return Error{dxpu_mgmt_status_name(reply.msg.status),
                 bridge::RefusalSentence(reply.msg.status)};
  std::string why;
  const std::optional<dxpu_mgmt_fw_report> r = bridge::DecodeFwReport(reply, &why);
  if (!r) return Error{"bad-response", why};
  return *r;
}

}  // namespace

int RunFlashPush(const FlashPushOptions& o, const std::vector<uint8_t>& image) {
  if (std::optional<Error> bad = CheckTimeout(o.targets.timeout))
    return ReportError("flash push", *bad, o.targets.json, std::cout, std::cerr, kExitUsage);
  const Result<std::vector<link::LinkAddress>> targets = ParseTargets(o.targets.bridges);
  if (!targets.ok())
    return ReportError("flash push", targets.error(), o.targets.json, std::cout, std::cerr,
                       kExitUsage);
  Result<fw::ImageHeader> header = CheckImage(o.image, image);
  if (header.ok() && !o.downgrade.empty()) header = CheckAuthorisation(o, image, header.value());
  if (!header.ok())
    return ReportError("flash push", header.error(), o.targets.json, std::cout, std::cerr,
                       kExitFailure);
  Result<std::shared_ptr<bridge::ManagementSigner>> signer = LoadManagementSigner(o.targets.key);
  if (!signer.ok())
    return ReportError("flash push", signer.error(), o.targets.json, std::cout, std::cerr,
                       kExitUsage);
  Json results = Json::array();
  size_t failed = 0;
  for (size_t i = 0; i < targets.value().size(); ++i) {
    const std::string& label = o.targets.bridges[i];
    const Outcome r =
        BridgeUpdate(o, image, header.value(), targets.value()[i], label, signer.value()).Run();
    if (!r.ok) ++failed;
    PrintOutcome(label, r, o.targets.json);
    results.push_back(OutcomeJson(label, r, header.value().version.packed));
  }
  if (o.targets.json) {
    std::cout << results.dump(2) << '\n';
  } else if (targets.value().size() > 1) {
    std::cout << fmt::format("{}: {} of {} bridges ok, {} failed\n",
                             header.value().version.ToString(), targets.value().size() - failed,
                             targets.value().size(), failed);
  }
  return failed == 0 ? kExitOk : kExitFailure;
}

int RunFlashStatus(const BridgeTargets& o) {
  if (std::optional<Error> bad = CheckTimeout(o.timeout))
    return ReportError("flash status", *bad, o.json, std::cout, std::cerr, kExitUsage);
  const Result<std::vector<link::LinkAddress>> targets = ParseTargets(o.bridges);
  if (!targets.ok())
    return ReportError("flash status", targets.error(), o.json, std::cout, std::cerr, kExitUsage);
  Json results = Json::array();
  size_t failed = 0;
  for (size_t i = 0; i < targets.value().size(); ++i) {
    const std::string& label = o.bridges[i];
    const Result<dxpu_mgmt_fw_report> r = AskStatus(targets.value()[i], label, o);
    if (!r.ok()) {
      ++failed;
      ReportError(fmt::format("flash status: {}", label), r.error(), false, std::cout, std::cerr,
                  kExitFailure);
      results.push_back({{"bridge", label},
                         {"ok", false},
                         {"error", r.error().name},
                         {"message", r.error().message}});
      continue;
    }
    if (o.json) {
      results.push_back(StatusJson(label, r.value()));
    } else {
      std::cout << (i == 0 ? "" : "\n") << StatusText(label, r.value()) << std::flush;
    }
  }
  if (o.json) std::cout << results.dump(2) << '\n';
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace dxpu::cli
