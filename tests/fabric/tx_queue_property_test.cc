// Randomised test of TxQueue: random submissions, random credit and refusals, and after
// every Drain() the offers it made must be those of a reference model that states the
// ordering rules of docs/protocol.md 4.6 over one list in submission order. Prints
// DXPU_SEED; set it to replay a failure.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../core/tlp_testutil.h"
#include "fabric/tx_queue.h"
#include "fake_session.h"

namespace dxpu::fabric {
namespace {

using test::FakeSession;

using test::kCpl;
using test::kNp;
using test::kP;

// May a TLP of class a go before an older one of class b that is still waiting?
bool MayPass(int a, int b) { return (a == kP && b != kP) || (a == kCpl && b == kNp); }

// The rules over one list: the next TLP offered is the first, in submission order, whose
// class is not blocked and which may pass every older TLP still waiting.
class Reference {
 public:
  struct Tlp {
    uint64_t id;
    int cls;
    uint16_t payload_dw;
    uint8_t tc;
  };

  void Push(const Tlp& t) { list_.push_back(t); }
  size_t size(int cls) const {
    size_t n = 0;
    for (const Tlp& t : list_) n += t.cls == cls ? 1 : 0;
    return n;
  }
  const std::vector<Tlp>& list() const { return list_; }

  void Drain(FakeSession* s) {
    std::array<bool, kTlpClasses> blocked{};
    while (true) {
      size_t pick = list_.size();
      for (size_t i = 0; i < list_.size() && pick == list_.size(); ++i) {
        if (blocked[list_[i].cls]) continue;
        bool ok = true;
        for (size_t j = 0; j < i && ok; ++j) ok = MayPass(list_[i].cls, list_[j].cls);
        if (ok) pick = i;
      }
      if (pick == list_.size()) return;
      std::vector<uint8_t> storage;
      dxpu_tlp t = test::MakeTlp(list_[pick].cls, list_[pick].id, list_[pick].payload_dw, &storage);
      t.tc = list_[pick].tc;
      switch ((*s)(t)) {
        case DXFP_SEND_OK:
        case DXFP_SEND_TOO_BIG:
        case DXFP_SEND_INVALID:
          list_.erase(list_.begin() + static_cast<std::ptrdiff_t>(pick));
          break;
        case DXFP_SEND_NO_CREDIT:
        case DXFP_SEND_NP_FULL:
          blocked[list_[pick].cls] = true;
          break;
        default:
          return;
      }
    }
  }

 private:
  std::vector<Tlp> list_;
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool OneIn(uint32_t n) { return Below(n) == 0; }

 private:
  std::mt19937_64 rng_;
};

Reference::Tlp RandomTlp(Rng* rng, uint64_t id) {
  const int cls = static_cast<int>(rng->Below(3));
  uint16_t dw = 0;
  if (cls == kNp) {
    dw = rng->OneIn(4) ? 1 : 0;
  } else if (!rng->OneIn(3)) {
    dw = static_cast<uint16_t>(1 + rng->Below(24));
  }
  uint8_t tc = 0;
  if (rng->OneIn(60)) tc = rng->OneIn(2) ? test::kTcTooBig : test::kTcInvalid;
  return {id, cls, dw, tc};
}

int RandomLimit(Rng* rng, uint32_t small) {
  return rng->OneIn(4) ? FakeSession::kPlenty : static_cast<int>(rng->Below(small));
}

void RandomCredit(Rng* rng, FakeSession* s) {
  for (int& c : s->credits) c = RandomLimit(rng, 4);
  s->np_slots = RandomLimit(rng, 4);
  s->replay_slots = rng->OneIn(2) ? FakeSession::kPlenty : static_cast<int>(rng->Below(10));
  s->forced = DXFP_SEND_OK;
  if (rng->OneIn(40)) s->forced = rng->OneIn(2) ? DXFP_SEND_NOT_READY : DXFP_SEND_DOWN;
}

uint64_t Steps() {
  const char* env = std::getenv("DXPU_TXQUEUE_STEPS");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr ? std::strtoull(env, nullptr, 0) : 200000;
}

TEST(TxQueueProperty, RandomSequencesFollowTheOrderingRules) {
  const uint64_t seed = dxpu::test::test_seed();
  const uint64_t steps = Steps();
  std::printf("DXPU_SEED=%llu (%llu steps)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(steps));
  Rng rng(seed);
  TxQueue q(TxQueueOptions{.max_tlps_per_class = 8, .max_payload_bytes_per_class = 256});
  Reference ref;
  FakeSession credit;
  uint64_t next_id = 0;
  uint64_t offers = 0;

  for (uint64_t step = 0; step < steps; ++step) {
    const uint32_t action = rng.Below(10);
    if (action < 5) {
      for (uint32_t n = 1 + rng.Below(4); n > 0; --n) {
        const Reference::Tlp r = RandomTlp(&rng, next_id++);
        std::vector<uint8_t> storage;
        dxpu_tlp t = test::MakeTlp(r.cls, r.id, r.payload_dw, &storage);
        t.tc = r.tc;
        const bool room = q.size(static_cast<dxpu_tlp_class>(r.cls)) < 8;
        const bool pushed = q.Push(t);
        if (!room) {
          ASSERT_FALSE(pushed) << "seed=" << seed << " step=" << step;
        } else if (r.payload_dw == 0) {
          ASSERT_TRUE(pushed) << "seed=" << seed << " step=" << step;
        }
        if (pushed) ref.Push(r);
      }
    } else if (action < 8) {
      RandomCredit(&rng, &credit);
    } else {
      FakeSession mine = credit;
      FakeSession theirs = credit;
      q.Drain([&](const dxpu_tlp& t) {
        const uint32_t len = t.payload != nullptr ? dxpu_tlp_payload_len(&t) : 0;
        for (uint32_t i = 0; i < len; ++i) {
          EXPECT_EQ(t.payload[i], test::PayloadByte(t.addr, i)) << "TLP " << t.addr;
        }
        return mine(t);
      });
      ref.Drain(&theirs);
      ASSERT_EQ(mine.offers, theirs.offers) << "seed=" << seed << " step=" << step;

      // Independently of the reference: a posted TLP left behind means a posted TLP was
      // refused (credit) or the drain stopped for every class.
      const DrainReport& d = q.last_drain();
      bool posted_refused = false;
      for (const auto& o : mine.offers) {
        posted_refused |= o.cls == kP && o.result == DXFP_SEND_NO_CREDIT;
      }
      if (!q.empty(DXPU_TLP_CLASS_POSTED)) {
        ASSERT_TRUE(posted_refused || d.stop != DXFP_SEND_OK)
            << "seed=" << seed << " step=" << step;
      }
      ASSERT_FALSE(d.posted_stranded) << "seed=" << seed << " step=" << step;
      offers += mine.offers.size();
      credit = mine;
      credit.offers.clear();
    }
    for (const int cls : {kP, kNp, kCpl}) {
      ASSERT_EQ(q.size(static_cast<dxpu_tlp_class>(cls)), ref.size(cls))
          << "seed=" << seed << " step=" << step;
    }
  }

  std::vector<uint64_t> left;
  q.Discard([&](const dxpu_tlp& t) { left.push_back(t.addr); });
  std::vector<uint64_t> ref_left;
  for (const auto& t : ref.list()) ref_left.push_back(t.id);
  EXPECT_EQ(left, ref_left) << "seed=" << seed;

  // The run must have exercised every rule.
  const TxQueueStats& st = q.stats();
  std::printf("offers %llu, sent %llu, P>NP %llu, P>Cpl %llu, Cpl>NP %llu, NP_FULL %llu\n",
              static_cast<unsigned long long>(offers), static_cast<unsigned long long>(st.sent),
              static_cast<unsigned long long>(st.posted_passed_np),
              static_cast<unsigned long long>(st.posted_passed_cpl),
              static_cast<unsigned long long>(st.cpl_passed_np),
              static_cast<unsigned long long>(st.np_full));
  EXPECT_EQ(st.posted_stranded, 0u);
  if (steps >= 10000) {
    EXPECT_GT(st.posted_passed_np, 0u);
    EXPECT_GT(st.posted_passed_cpl, 0u);
    EXPECT_GT(st.cpl_passed_np, 0u);
    EXPECT_GT(st.np_full, 0u);
    EXPECT_GT(st.replay_full, 0u);
    EXPECT_GT(st.dropped_too_big + st.dropped_invalid, 0u);
    EXPECT_GT(st.push_refused, 0u);
  }
}

}  // namespace
}  // namespace dxpu::fabric
