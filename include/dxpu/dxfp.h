/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp.h - DxFP (DxPU Fabric Protocol) frame layout: docs/protocol.md, section 4.
 *
 * A frame is a 32-byte header, records (each a 4-byte header and a body
 * padded to 4 bytes) and a CRC32C trailer over everything before it. All
 * fields are in network byte order.
 *
 *   0 Version  1 Type  2 Flags  3 reserved  4..5 Length  6..7 Record count
 *   8 Destination session  12 Source session  16 Destination epoch
 *  20 Source epoch  24 Sequence  28 Acknowledgement  32 records ... CRC32C
 */
#ifndef DXPU_DXFP_H
#define DXPU_DXFP_H

#include "compat.h"

DXPU_EXTERN_C_BEGIN

#define DXFP_VERSION 1u
#define DXFP_ETHERTYPE 0x88b5u
#define DXFP_UDP_PORT 17480u

#define DXFP_HDR_SIZE 32u
#define DXFP_CRC_SIZE 4u
#define DXFP_MIN_FRAME (DXFP_HDR_SIZE + DXFP_CRC_SIZE)
#define DXFP_MAX_FRAME 9216u
#define DXFP_REC_HDR_SIZE 4u

/* Header byte offsets */
#define DXFP_OFF_VERSION 0
#define DXFP_OFF_TYPE 1
#define DXFP_OFF_FLAGS 2
#define DXFP_OFF_RSVD 3
#define DXFP_OFF_LENGTH 4
#define DXFP_OFF_NREC 6
#define DXFP_OFF_DST_SESSION 8
#define DXFP_OFF_SRC_SESSION 12
#define DXFP_OFF_DST_EPOCH 16
#define DXFP_OFF_SRC_EPOCH 20
#define DXFP_OFF_SEQ 24
#define DXFP_OFF_ACK 28

enum dxfp_frame_type {
	DXFP_HELLO = 1,
	DXFP_WELCOME = 2,
	DXFP_DATA = 3,
	DXFP_CLOSE = 4,
	DXFP_COOKIE = 5, /* a bridge under load answers a HELLO with a cookie: 4.12 */
};

#define DXFP_F_ACK_REQ 0x01u /* acknowledge at once */
#define DXFP_F_NAK 0x02u     /* Acknowledgement names a gap: replay from it */
#define DXFP_F_ALL 0x03u

enum dxfp_record_type {
	DXFP_REC_TLP = 1,
	DXFP_REC_CREDIT = 2,
	DXFP_REC_HELLO = 3,
	DXFP_REC_CLOSE = 4,
	DXFP_REC_NOISE = 5,  /* a handshake message (HELLO, WELCOME): docs/protocol.md 4.12 */
	DXFP_REC_MAC1 = 6,   /* HELLO: the proof its sender knows the bridge's key */
	DXFP_REC_MAC2 = 7,   /* HELLO, last: the proof its sender got a cookie (zeros: none) */
	DXFP_REC_COOKIE = 8, /* COOKIE: a nonce and the cookie sealed for the HELLO's sender */
};

#define DXFP_CREDIT_BODY_SIZE 24u /* P, NP, Cpl: header limit u32, data limit u32 */
#define DXFP_HELLO_BODY_SIZE 24u
#define DXFP_CLOSE_BODY_SIZE 8u
#define DXFP_NOISE_HELLO_BODY_SIZE 104u	 /* Noise IK msg1 (96) with an 8-byte timestamp */
#define DXFP_NOISE_WELCOME_BODY_SIZE 48u /* Noise IK msg2, no payload */
#define DXFP_MAC1_BODY_SIZE 16u
#define DXFP_MAC2_BODY_SIZE 16u
#define DXFP_COOKIE_BODY_SIZE 48u /* nonce (16), the cookie (16) sealed: 32 */

enum dxfp_close_reason {
	DXFP_CLOSE_SHUTDOWN = 1,
	DXFP_CLOSE_UNKNOWN_SESSION = 2,
	DXFP_CLOSE_UNSUPPORTED_VERSION = 3,
	DXFP_CLOSE_PROTOCOL_ERROR = 4,
	DXFP_CLOSE_RELEASED = 5,
	DXFP_CLOSE_LINK_TIMEOUT = 6, /* the sender's link-down timer expired */
};

DXPU_EXTERN_C_END

#endif /* DXPU_DXFP_H */
