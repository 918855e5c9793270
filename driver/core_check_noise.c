// SPDX-License-Identifier: GPL-2.0
/*
 * core_check_noise.c - lib/core's handshake and sealed frames on the kernel's
 * lib/crypto (driver/dxpu_crypto.c), against known answers: the messages, the
 * handshake hash and the first transport ciphertext of a handshake with fixed
 * keys, as dissononce (an independent Noise implementation on
 * python3-cryptography) computes them through tests/core/noise_interop.py with
 * the same keys (key(seed)[i] = seed + 3i; prologue "DxFP known answer";
 * payloads "hello" and "welcome"; "from-python" sealed with the initiator's
 * key, nonce 0). Then a sealed frame opens once, not twice, and not changed.
 */
#include <linux/printk.h>
#include <linux/string.h>

#include "core/dxfp_seal.h"
#include "core_check.h"
#include "dxpu_crypto.h"

static const u8 kat_msg1[101] = {
	0xe9, 0x6f, 0xd9, 0xa3, 0x12, 0x93, 0x8a, 0x8a, 0x22, 0x15, 0x43, 0x49, 0xfe, 0x3d, 0xf0,
	0xaf, 0xb9, 0x9c, 0xa4, 0x22, 0x8c, 0x5f, 0xfb, 0xaa, 0x90, 0x8c, 0x9c, 0xc4, 0x05, 0x7e,
	0x46, 0x3a, 0x40, 0x2f, 0x85, 0x48, 0x51, 0x8d, 0xa5, 0xf4, 0xce, 0x0b, 0xeb, 0x70, 0xe7,
	0x73, 0xc5, 0xb7, 0x49, 0x39, 0x1d, 0x40, 0x82, 0x17, 0x7b, 0x00, 0xdd, 0x84, 0x6e, 0x7d,
	0x13, 0x40, 0xff, 0x6a, 0x52, 0x01, 0x6c, 0x63, 0xab, 0x8f, 0xcd, 0xc3, 0x15, 0x9d, 0x0d,
	0xbd, 0x3f, 0x6d, 0x6e, 0xef, 0x30, 0xc5, 0x73, 0xd6, 0xa0, 0x9b, 0x33, 0xee, 0x4f, 0xf4,
	0xfc, 0xa1, 0xb0, 0xc7, 0xa6, 0x50, 0x69, 0x0c, 0xa3, 0xd3, 0x2a,
};

static const u8 kat_msg2[55] = {
	0x2c, 0x6c, 0xd5, 0x6b, 0xa0, 0xb7, 0xa9, 0xb1, 0x26, 0xc0, 0x11, 0x77, 0x57, 0xd2,
	0xf7, 0x03, 0x99, 0xce, 0x7e, 0xf0, 0x49, 0x67, 0xdb, 0x96, 0x7e, 0x57, 0x1f, 0x3c,
	0x89, 0x97, 0x10, 0x3b, 0x6d, 0xd7, 0xfb, 0x51, 0x6d, 0xd2, 0x61, 0x95, 0x8a, 0xd8,
	0x89, 0x00, 0x3d, 0x04, 0x67, 0xd6, 0x2c, 0x64, 0xae, 0x92, 0x54, 0x6b, 0x3b,
};

static const u8 kat_hash[32] = {
	0xa0, 0xb8, 0x17, 0x18, 0x23, 0x1c, 0x72, 0xf7, 0x47, 0xb7, 0xb2,
	0xe6, 0x22, 0x6d, 0x18, 0xc3, 0xe4, 0x1b, 0xaf, 0x9c, 0x0b, 0xe5,
	0x34, 0x8c, 0x95, 0xfd, 0x9a, 0xa9, 0xc2, 0xb0, 0x29, 0x72,
};

static const u8 kat_ct[27] = {
	0xbe, 0xd4, 0x6d, 0xa9, 0x0c, 0x67, 0x58, 0x2d, 0xa6, 0xa1, 0x55, 0xed, 0x9e, 0x70,
	0x55, 0x1a, 0xf5, 0x4a, 0x44, 0xfa, 0x06, 0x8d, 0xf2, 0xd7, 0x83, 0xdb, 0x31,
};

static const u8 kat_prologue[] = "DxFP known answer";

/* The ephemeral keys the fixed handshake takes, in order: the initiator's, the responder's. */
static u8 kat_next_e;

static void kat_key(u8 key[DXFP_KEY_SIZE], u8 seed)
{
	unsigned int i;

	for (i = 0; i < DXFP_KEY_SIZE; i++)
		key[i] = (u8)(seed + 3 * i);
}

static void kat_keypair(u8 secret[DXFP_KEY_SIZE], u8 pub[DXFP_KEY_SIZE])
{
	static const u8 basepoint[DXFP_KEY_SIZE] = { 9 };

	kat_key(secret, kat_next_e++);
	if (!dxpu_crypto_ops.x25519(pub, secret, basepoint))
		memset(pub, 0, DXFP_KEY_SIZE);
}

static struct dxfp_crypto_ops kat_ops;

static int check(bool ok, const char *what)
{
	if (!ok)
		pr_err("dxpu_core_check: noise: %s\n", what);
	return ok ? 0 : -EINVAL;
}

struct kat_state {
	struct dxfp_noise i, r;
	struct dxfp_noise_keys ik, rk;
	u8 msg1[sizeof(kat_msg1)];
	u8 msg2[sizeof(kat_msg2)];
	u8 payload[8];
};

static int kat_handshake(struct kat_state *st)
{
	static const u8 basepoint[DXFP_KEY_SIZE] = { 9 };
	u8 si[DXFP_KEY_SIZE], sr[DXFP_KEY_SIZE], sr_pub[DXFP_KEY_SIZE];
	int err;

	kat_ops = dxpu_crypto_ops;
	kat_ops.x25519_keypair = kat_keypair;
	kat_key(si, 1);
	kat_key(sr, 2);
	kat_next_e = 3;
	if (!kat_ops.x25519(sr_pub, sr, basepoint))
		return check(false, "the responder's public key");
	dxfp_noise_initiator_init(&st->i, &kat_ops, si, sr_pub, kat_prologue,
				  sizeof(kat_prologue) - 1);
	dxfp_noise_responder_init(&st->r, &kat_ops, sr, kat_prologue, sizeof(kat_prologue) - 1);
	err = check(dxfp_noise_write_msg1(&st->i, (const u8 *)"hello", 5, st->msg1) ==
				    sizeof(kat_msg1) &&
			    !memcmp(st->msg1, kat_msg1, sizeof(kat_msg1)),
		    "msg1 is not the known answer");
	err = err
		      ?: check(dxfp_noise_read_msg1(&st->r, st->msg1, sizeof(st->msg1),
						    st->payload) &&
				       !memcmp(st->payload, "hello", 5),
			       "msg1 not read");
	err = err
		      ?: check(dxfp_noise_write_msg2(&st->r, (const u8 *)"welcome", 7, st->msg2) ==
					       sizeof(kat_msg2) &&
				       !memcmp(st->msg2, kat_msg2, sizeof(kat_msg2)),
			       "msg2 is not the known answer");
	err = err
		      ?: check(dxfp_noise_read_msg2(&st->i, st->msg2, sizeof(st->msg2),
						    st->payload) &&
				       !memcmp(st->payload, "welcome", 7),
			       "msg2 not read");
	err = err
		      ?: check(dxfp_noise_split(&st->i, &st->ik) &&
				       dxfp_noise_split(&st->r, &st->rk) &&
				       !memcmp(st->ik.hash, kat_hash, sizeof(kat_hash)) &&
				       !memcmp(st->rk.hash, kat_hash, sizeof(kat_hash)),
			       "the handshake hash is not the known answer");
	dxpu_wipe(si, sizeof(si));
	dxpu_wipe(sr, sizeof(sr));
	return err;
}

static int kat_transport(struct kat_state *st)
{
	u8 ct[sizeof(kat_ct)], plain[sizeof(kat_ct)];

	kat_ops.aead_seal(ct, (const u8 *)"from-python", 11, NULL, 0, 0, st->ik.send.key);
	if (check(!memcmp(ct, kat_ct, sizeof(kat_ct)), "the first ciphertext is not known"))
		return -EINVAL;
	return check(kat_ops.aead_open(plain, ct, sizeof(ct), NULL, 0, 0, st->rk.recv.key) &&
			     !memcmp(plain, "from-python", 11),
		     "the responder cannot open the initiator's message");
}

static int sealed_frame(struct kat_state *st)
{
	static u8 frame[DXFP_MIN_FRAME + DXFP_SEAL_GROWTH + 64];
	static struct dxfp_replay replay;
	struct dxfp_header h = { .type = DXFP_DATA, .dst_session = 1, .src_session = 2 };
	struct dxfp_writer w;
	struct dxfp_frame f;
	size_t len = 0, sealed;
	u64 counter;
	int err;

	memset(&replay, 0, sizeof(replay));
	if (dxfp_writer_init(&w, frame, sizeof(frame) - DXFP_SEAL_GROWTH, &h) != DXFP_OK)
		return check(false, "frame writer");
	dxfp_writer_finish(&w, &len);
	sealed = dxfp_frame_seal(&kat_ops, &st->ik.send, 7, frame, len, sizeof(frame));
	err = check(sealed == len + DXFP_SEAL_GROWTH, "seal");
	err = err
		      ?: check(dxfp_frame_open(&kat_ops, &st->rk.recv, &replay, frame, sealed,
					       DXFP_MAX_FRAME, &f, &counter) == DXFP_OK &&
				       counter == 7 && f.hdr.dst_session == 1,
			       "a sealed frame does not open");
	err = err
		      ?: check(dxfp_frame_open(&kat_ops, &st->rk.recv, &replay, frame, sealed,
					       DXFP_MAX_FRAME, &f, &counter) == DXFP_ERR_REPLAYED,
			       "a replayed frame opens");
	if (err)
		return err;
	sealed = dxfp_frame_seal(&kat_ops, &st->ik.send, 8, frame, len, sizeof(frame));
	frame[DXFP_OFF_DST_SESSION + 3] ^= 1;
	return check(dxfp_frame_open(&kat_ops, &st->rk.recv, &replay, frame, sealed, DXFP_MAX_FRAME,
				     &f, &counter) == DXFP_ERR_BAD_TAG,
		     "a changed frame opens");
}

int dxpu_core_check_noise(void)
{
	static struct kat_state st; /* 1 KB: not on the stack; module init runs once */
	int err;

	memset(&st, 0, sizeof(st));
	err = kat_handshake(&st);
	err = err ?: kat_transport(&st);
	err = err ?: sealed_frame(&st);
	dxpu_wipe(&st, sizeof(st));
	return err;
}
