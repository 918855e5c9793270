// dxfp_seal_test.cc - sealed DxFP frames (lib/core/dxfp_seal.c) with libsodium's primitives:
// a sealed frame opens to exactly the frame that was sealed, no changed bit opens, a forged
// frame takes no counter, and the replay window against a model of its rule.
#include "core/dxfp_seal.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "crypto/sodium_crypto_ops.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

using Bytes = std::vector<uint8_t>;

const dxfp_crypto_ops& Ops() { return crypto::SodiumCryptoOps(); }

dxfp_cipher RandomKey() {
  dxfp_cipher c{};
  randombytes_buf(c.key, sizeof(c.key));
  return c;
}

// A finished DATA frame in the clear: n_tlps memory writes of payload bytes and a CREDIT record.
Bytes ClearFrame(int n_tlps, uint32_t payload) {
  Bytes buf(DXFP_MAX_FRAME);
  dxfp_header h{};
  h.type = DXFP_DATA;
  h.flags = DXFP_F_ACK_REQ;
  h.dst_session = 0x01020304;
  h.src_session = 0x05060708;
  h.dst_epoch = 9;
  h.src_epoch = 10;
  h.seq = 77;
  h.ack = 66;
  dxfp_writer w{};
  EXPECT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
  std::vector<uint8_t> data(payload, 0x5a);
  for (int i = 0; i < n_tlps; ++i) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_MWR;
    t.length_dw = static_cast<uint16_t>(payload / 4);
    t.requester_id = 0x0100;
    t.first_be = 0xf;
    t.last_be = payload > 4 ? 0xf : 0;
    t.addr = 0x100000000ull + 0x1000ull * static_cast<unsigned>(i);
    t.payload = data.data();
    EXPECT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_OK);
  }
  dxfp_credits c{{1, 2, 3}, {4, 5, 6}};
  EXPECT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  buf.resize(len);
  return buf;
}

Bytes Sealed(const Bytes& clear, const dxfp_cipher& key, uint64_t counter) {
  Bytes b = clear;
  b.resize(clear.size() + DXFP_SEAL_GROWTH);
  const size_t n = dxfp_frame_seal(&Ops(), &key, counter, b.data(), clear.size(), b.size());
  EXPECT_EQ(n, clear.size() + DXFP_SEAL_GROWTH);
  b.resize(n);
  return b;
}

TEST(DxfpSeal, ASealedFrameOpensToTheFrameThatWasSealed) {
  const dxfp_cipher key = RandomKey();
  for (uint32_t payload : {4u, 64u, 512u}) {
    const Bytes clear = ClearFrame(3, payload);
    dxfp_frame want{};
    ASSERT_EQ(dxfp_frame_parse(clear.data(), clear.size(), DXFP_MAX_FRAME, &want), DXFP_OK);
    Bytes sealed = Sealed(clear, key, 5);
    // The header stays readable (routing), the records do not.
    EXPECT_EQ(0, std::memcmp(sealed.data() + 8, clear.data() + 8, DXFP_HDR_SIZE - 8));
    EXPECT_NE(0, std::memcmp(sealed.data() + DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE,
                             clear.data() + DXFP_HDR_SIZE, 16));
    EXPECT_TRUE(dxfp_frame_is_sealed(sealed.data()));
    // A sealed frame is no clear frame.
    dxfp_frame f{};
    EXPECT_NE(dxfp_frame_parse(sealed.data(), sealed.size(), DXFP_MAX_FRAME, &f), DXFP_OK);

    dxfp_replay replay{};
    uint64_t counter = 0;
    sealed.resize(sealed.size() + 6, 0);  // Ethernet padding after the frame
    ASSERT_EQ(dxfp_frame_open(&Ops(), &key, &replay, sealed.data(), sealed.size(), DXFP_MAX_FRAME,
                              &f, &counter),
              DXFP_OK);
    EXPECT_EQ(counter, 5u);
    EXPECT_EQ(f.hdr.type, want.hdr.type);
    EXPECT_EQ(f.hdr.flags, want.hdr.flags | DXFP_F_SEALED);
    EXPECT_EQ(f.hdr.seq, want.hdr.seq);
    EXPECT_EQ(f.hdr.ack, want.hdr.ack);
    EXPECT_EQ(f.hdr.nrec, want.hdr.nrec);
    ASSERT_EQ(f.records_len, want.records_len);
    EXPECT_EQ(0, std::memcmp(f.records, want.records, want.records_len));
  }
}

TEST(DxfpSeal, NoChangedBitOpens) {
  const dxfp_cipher key = RandomKey();
  const Bytes sealed = Sealed(ClearFrame(1, 16), key, 1000);
  for (size_t bit = 0; bit < sealed.size() * 8; ++bit) {
    Bytes bad = sealed;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    dxfp_replay replay{};
    dxfp_frame f{};
    uint64_t counter = 0;
    const dxfp_err e = dxfp_frame_open(&Ops(), &key, &replay, bad.data(), bad.size(),
                                       DXFP_MAX_FRAME, &f, &counter);
    EXPECT_NE(e, DXFP_OK) << "bit " << bit;
  }
}

TEST(DxfpSeal, AWrongKeyFailsTheTagAndTakesNoCounter) {
  const dxfp_cipher key = RandomKey(), forger = RandomKey();
  const Bytes clear = ClearFrame(1, 8);
  Bytes forged = Sealed(clear, forger, 42);
  dxfp_replay replay{};
  dxfp_frame f{};
  uint64_t counter = 0;
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, forged.data(), forged.size(), DXFP_MAX_FRAME, &f,
                            &counter),
            DXFP_ERR_BAD_TAG);
  // The genuine frame with that counter still opens: a forger cannot burn counters.
  Bytes genuine = Sealed(clear, key, 42);
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, genuine.data(), genuine.size(), DXFP_MAX_FRAME,
                            &f, &counter),
            DXFP_OK);
}

TEST(DxfpSeal, AReplayedFrameIsRefusedBeforeItsTag) {
  const dxfp_cipher key = RandomKey();
  const Bytes sealed = Sealed(ClearFrame(2, 32), key, 7);
  dxfp_replay replay{};
  dxfp_frame f{};
  uint64_t counter = 0;
  Bytes first = sealed, again = sealed;
  ASSERT_EQ(dxfp_frame_open(&Ops(), &key, &replay, first.data(), first.size(), DXFP_MAX_FRAME, &f,
                            &counter),
            DXFP_OK);
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, again.data(), again.size(), DXFP_MAX_FRAME, &f,
                            &counter),
            DXFP_ERR_REPLAYED);
  EXPECT_EQ(counter, 7u);
}

TEST(DxfpSeal, SealRefusesWhatDoesNotFit) {
  const dxfp_cipher key = RandomKey();
  Bytes clear = ClearFrame(1, 64);
  Bytes b = clear;
  b.resize(clear.size() + DXFP_SEAL_GROWTH - 1);
  EXPECT_EQ(0u, dxfp_frame_seal(&Ops(), &key, 0, b.data(), clear.size(), b.size()));
  b.resize(clear.size() + DXFP_SEAL_GROWTH);
  EXPECT_EQ(0u, dxfp_frame_seal(&Ops(), &key, ~0ull, b.data(), clear.size(), b.size()));
  // A frame the session sized for a max_frame link, less the growth, seals to max_frame.
  Bytes big(DXFP_MAX_FRAME);
  dxfp_header h{};
  h.type = DXFP_DATA;
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, big.data(), DXFP_MAX_FRAME - DXFP_SEAL_GROWTH, &h), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  EXPECT_EQ(dxfp_frame_seal(&Ops(), &key, 0, big.data(), len, big.size()), len + DXFP_SEAL_GROWTH);
}

TEST(DxfpSeal, OpenRefusesShortAndOverlongFrames) {
  const dxfp_cipher key = RandomKey();
  Bytes sealed = Sealed(ClearFrame(1, 16), key, 3);
  dxfp_replay replay{};
  dxfp_frame f{};
  uint64_t counter = 0;
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, sealed.data(), DXFP_MIN_SEALED_FRAME - 1,
                            DXFP_MAX_FRAME, &f, &counter),
            DXFP_ERR_TRUNCATED);
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, sealed.data(), sealed.size() - 4, DXFP_MAX_FRAME,
                            &f, &counter),
            DXFP_ERR_TRUNCATED);
  EXPECT_EQ(dxfp_frame_open(&Ops(), &key, &replay, sealed.data(), sealed.size(),
                            static_cast<uint32_t>(sealed.size() - 4), &f, &counter),
            DXFP_ERR_BAD_LENGTH);
}

// The window against a model: a counter is taken at most once, and one more than
// DXFP_REPLAY_WINDOW - 64 below the highest taken is refused.
TEST(DxfpReplay, AgreesWithItsRuleOnRandomCounters) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  dxfp_replay r{};
  std::set<uint64_t> taken;
  uint64_t next = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t c = 0;
    switch (rng() % 4) {
      case 0:  // in order
        c = next;
        break;
      case 1:  // a little behind
        c = next - std::min<uint64_t>(next, rng() % 200);
        break;
      case 2:  // near the window's edge
        c = next - std::min<uint64_t>(next, DXFP_REPLAY_WINDOW - 128 + rng() % 256);
        break;
      default:  // a jump ahead, sometimes past the whole window
        c = next + rng() % (rng() % 8 == 0 ? 3 * DXFP_REPLAY_WINDOW : 100);
        break;
    }
    const bool model = !taken.count(c) && (c >= next || next - c <= DXFP_REPLAY_WINDOW - 64);
    ASSERT_EQ(dxfp_replay_fresh(&r, c), model)
        << "seed " << seed << " step " << i << " c " << c << " next " << next;
    if (model && rng() % 8 != 0) {  // sometimes a fresh counter's tag fails: not taken
      dxfp_replay_take(&r, c);
      taken.insert(c);
      next = std::max(next, c + 1);
    }
  }
}

TEST(DxfpReplay, TheLastCountersAreNeverTaken) {
  dxfp_replay r{};
  EXPECT_TRUE(dxfp_replay_fresh(&r, DXFP_SEAL_COUNTER_MAX));
  EXPECT_FALSE(dxfp_replay_fresh(&r, ~0ull));
}

}  // namespace
}  // namespace dxpu::test
