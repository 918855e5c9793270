/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_crypto.h - lib/core's crypto primitives (struct dxfp_crypto_ops) on the
 * kernel's lib/crypto: curve25519, chacha20poly1305, sha256 (the library
 * WireGuard uses). docs/protocol.md, section 4.12.
 */
#ifndef DXPU_CRYPTO_H
#define DXPU_CRYPTO_H

#include "core/dxfp_noise.h"

extern const struct dxfp_crypto_ops dxpu_crypto_ops;

#endif /* DXPU_CRYPTO_H */
