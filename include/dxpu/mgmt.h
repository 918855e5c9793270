/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * mgmt.h - DxPU management messages: the request/response datagrams between a
 * controller (pool manager, operator CLI, host agent) and a bridge's
 * management socket (docs/protocol.md, section 15). One message per datagram,
 * all fields in network byte order.
 *
 *   0 Magic "DXMG"  4 Version  5 Type  6..7 Flags  8 Request ID
 *  12 Body length  14 Status  16 body ...
 */
#ifndef DXPU_MGMT_H
#define DXPU_MGMT_H

#include "compat.h"

DXPU_EXTERN_C_BEGIN

#define DXPU_MGMT_MAGIC 0x44584d47u /* "DXMG" */
#define DXPU_MGMT_VERSION 1u
#define DXPU_MGMT_UDP_PORT 17481u

#define DXPU_MGMT_HDR_SIZE 16u
/* The largest message: the largest UDP payload over IPv4, so every message fits one datagram. */
#define DXPU_MGMT_MAX_MSG 65507u

/* Header byte offsets */
#define DXPU_MGMT_OFF_MAGIC 0
#define DXPU_MGMT_OFF_VERSION 4
#define DXPU_MGMT_OFF_TYPE 5
#define DXPU_MGMT_OFF_FLAGS 6
#define DXPU_MGMT_OFF_REQUEST_ID 8
#define DXPU_MGMT_OFF_BODY_LENGTH 12
#define DXPU_MGMT_OFF_STATUS 14

#define DXPU_MGMT_F_RESPONSE 0x0001u
#define DXPU_MGMT_F_SIGNED 0x0002u /* a request: the authentication record follows the body */
#define DXPU_MGMT_F_ALL 0x0003u

/*
 * The authentication record of a signed request (DXPU_MGMT_F_SIGNED), after the body (Body
 * length counts the body alone):
 *   0 epoch u64   8 sequence u64   16 key ID (8 bytes)   24 Ed25519 signature (64 bytes)
 * The signature covers every byte of the datagram before it: header, body, epoch, sequence
 * and key ID. The key ID is the first 8 bytes of SHA-256 of the signer's public key.
 */
#define DXPU_MGMT_AUTH_SIZE 88u
#define DXPU_MGMT_KEY_ID_SIZE 8u
#define DXPU_MGMT_SIGNATURE_SIZE 64u

enum dxpu_mgmt_type {
	DXPU_MGMT_ASSIGN = 1,
	DXPU_MGMT_RELEASE = 2,
	DXPU_MGMT_DMA_GRANT = 3,
	DXPU_MGMT_DMA_REVOKE_ALL = 4,
	DXPU_MGMT_STATUS = 5,
	DXPU_MGMT_INVENTORY = 6,
	/* Firmware update (docs/firmware.md, "Updating over the management socket"). */
	DXPU_MGMT_FW_BEGIN = 7,
	DXPU_MGMT_FW_CHUNK = 8,
	DXPU_MGMT_FW_STATUS = 9,
	DXPU_MGMT_FW_COMMIT = 10,
	DXPU_MGMT_FW_REBOOT = 11,
	/* A device's DMA windows (its DMA_GRANTs in force). */
	DXPU_MGMT_DMA_LIST = 12,
	/* The hosts that may connect (docs/protocol.md 15.9): provisioned by the pool manager. */
	DXPU_MGMT_HOST_KEY_SET = 13,
	DXPU_MGMT_HOST_KEY_REMOVE = 14,
	/* A virtio-gpu's display as a PNG, in pieces (docs/protocol.md 15.10). */
	DXPU_MGMT_SCREENSHOT = 15,
};

#define DXPU_MGMT_TYPE_MAX DXPU_MGMT_SCREENSHOT

/* The Status field of a response (0 in a request). Numbers and names are stable. */
enum dxpu_mgmt_status {
	DXPU_MGMT_OK = 0,
	DXPU_MGMT_MALFORMED = 1,
	DXPU_MGMT_UNSUPPORTED_VERSION = 2,
	DXPU_MGMT_UNKNOWN_TYPE = 3,
	DXPU_MGMT_NO_SUCH_DEVICE = 4,
	DXPU_MGMT_DEVICE_BUSY = 5, /* assigned to another host */
	DXPU_MGMT_NOT_ASSIGNED = 6,
	DXPU_MGMT_TABLE_FULL = 7,
	DXPU_MGMT_OVERLAP = 8,
	DXPU_MGMT_BAD_ARGUMENT = 9, /* zero size, a wrapping range, node ID 0 */
	DXPU_MGMT_INTERNAL = 10,
	/* Firmware update. */
	DXPU_MGMT_FW_UNAVAILABLE = 11,	/* the bridge was not booted from a flash */
	DXPU_MGMT_IMAGE_UNTRUSTED = 12, /* unknown key or bad signature */
	DXPU_MGMT_WRONG_HARDWARE = 13,	/* built for another hardware revision */
	DXPU_MGMT_DOWNGRADE = 14,	/* below the minimum version, no override */
	DXPU_MGMT_IMAGE_INVALID = 15,	/* any other image check (format, size, hash, payload) */
	DXPU_MGMT_NO_TRANSFER = 16,	/* FW_CHUNK or FW_COMMIT with no transfer begun */
	DXPU_MGMT_OUT_OF_ORDER = 17,	/* a chunk past the next offset (a gap), or straddling it */
	DXPU_MGMT_BAD_CRC = 18,		/* a chunk whose data does not match its CRC32C */
	DXPU_MGMT_INCOMPLETE = 19,	/* FW_COMMIT before every byte of the image arrived */
	DXPU_MGMT_FLASH_ERROR = 20,	/* the flash refused an operation */
	DXPU_MGMT_TRIAL_RUNNING = 21,	/* FW_BEGIN while the running image is still on trial */
	/* Authentication and fencing of state-changing requests (docs/protocol.md 15.8). */
	DXPU_MGMT_UNAUTHENTICATED = 22, /* unsigned, an unknown key, or a bad signature */
	DXPU_MGMT_STALE_EPOCH = 23,	/* an epoch below the highest the bridge accepted */
	DXPU_MGMT_REPLAYED = 24,	/* a sequence number seen, or too old, in its epoch */
	DXPU_MGMT_QUARANTINED = 25,	/* ASSIGN of a device whose owner's session was lost */
	/* Host keys (docs/protocol.md 15.9). */
	DXPU_MGMT_NO_IDENTITY = 26, /* HOST_KEY_* to a bridge without identity (plaintext) */
	DXPU_MGMT_KEY_IN_USE = 27,  /* HOST_KEY_SET of a key bound to another node */
	/* SCREENSHOT of a device with no display (not a virtio-gpu) (docs/protocol.md 15.10). */
	DXPU_MGMT_NO_DISPLAY = 28,
	DXPU_MGMT_STATUS_COUNT
};

/* Request bodies */
#define DXPU_MGMT_ASSIGN_SIZE 16u /* device u16, host BDF u16, rsvd u32, host node ID u64 */
/* device u16, rsvd u16, rsvd u32 (RELEASE, DMA_REVOKE_ALL, DMA_LIST) */
#define DXPU_MGMT_DEVICE_REF_SIZE 8u
#define DXPU_MGMT_DMA_GRANT_SIZE 32u /* as DEVICE_REF, then device base, host base, size (u64) */
/*
 * Where a DMA_GRANT window must end: both its device and its host range at or below 2^52
 * (the widest physical address x86-64 and Arm64 define).
 */
#define DXPU_MGMT_DMA_ADDR_LIMIT (1ull << 52)
#define DXPU_MGMT_STATUS_REQ_SIZE 0u
/* An X25519 public key: a host's or a bridge's long-term fabric key (docs/security.md). */
#define DXPU_MGMT_FABRIC_KEY_SIZE 32u
/* HOST_KEY_SET: host node ID u64, then its public key; HOST_KEY_REMOVE: host node ID u64. */
#define DXPU_MGMT_HOST_KEY_SET_SIZE (8u + DXPU_MGMT_FABRIC_KEY_SIZE)
#define DXPU_MGMT_HOST_KEY_REMOVE_SIZE 8u
#define DXPU_MGMT_INVENTORY_REQ_SIZE 0u
/* FW_BEGIN: flags u32 (DXPU_MGMT_FW_F_*), rsvd u32, then the image's 256-byte header. */
#define DXPU_MGMT_FW_IMAGE_HEADER_SIZE 256u
#define DXPU_MGMT_FW_BEGIN_SIZE (8u + DXPU_MGMT_FW_IMAGE_HEADER_SIZE)
#define DXPU_MGMT_FW_F_ALLOW_DOWNGRADE 0x00000001u /* the explicit, logged override */
#define DXPU_MGMT_FW_F_ALL 0x00000001u
/* FW_CHUNK: offset in the image u64, CRC32C of the data u32, rsvd u32, then 1 .. max bytes. */
#define DXPU_MGMT_FW_CHUNK_FIXED_SIZE 16u
/* The most data one signed FW_CHUNK carries: 65507 - 16 - 16 - 88 = 65387 bytes. */
#define DXPU_MGMT_FW_CHUNK_MAX_DATA                                                                \
	(DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_FW_CHUNK_FIXED_SIZE -                  \
	 DXPU_MGMT_AUTH_SIZE)
/* FW_STATUS, FW_COMMIT, FW_REBOOT requests: empty. */

/*
 * The firmware report: the body of an OK response to FW_BEGIN, FW_CHUNK, FW_STATUS and
 * FW_COMMIT (an OK FW_REBOOT has none).
 *   0 running slot u8   1 transfer u8   2 target slot u8   3 trial slot u8   4 tries left u8
 *   5 slot A state u8   6 slot B state u8   7 rsvd   8 slot A version u32   12 slot B version
 *  16 running version  20 minimum version  24 hardware revision  28 rsvd u32
 *  32 next offset u64  40 total u64
 */
#define DXPU_MGMT_FW_REPORT_SIZE 48u
#define DXPU_MGMT_FW_NO_SLOT 0xffu

/* STATUS response body: device count u16, host count u16, rsvd u32, then the entries. */
#define DXPU_MGMT_STATUS_FIXED_SIZE 8u
/* One entry: device u16, box BDF u16, host BDF u16, state u8, rsvd u8, owner node ID u64. */
#define DXPU_MGMT_STATUS_ENTRY_SIZE 16u
/* The most entries one STATUS response holds: (65507 - 16 - 8) / 16 = 4092. */
#define DXPU_MGMT_STATUS_MAX_DEVICES                                                               \
	((DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_STATUS_FIXED_SIZE) /                  \
	 DXPU_MGMT_STATUS_ENTRY_SIZE)

/*
 * INVENTORY response body: bridge node ID u64, device count u16, flags u16, rsvd u32, then
 * with DXPU_MGMT_INVENTORY_F_FABRIC_KEY the bridge's fabric public key (32 bytes), then the
 * entries.
 */
#define DXPU_MGMT_INVENTORY_FIXED_SIZE 16u
#define DXPU_MGMT_INVENTORY_F_FABRIC_KEY 0x0001u /* the bridge has an identity: its key follows */
#define DXPU_MGMT_INVENTORY_F_ALL 0x0001u
/* Bytes of an entry's profile name: ASCII, NUL-terminated and NUL-padded (31 characters). */
#define DXPU_MGMT_PROFILE_NAME_SIZE 32u
/*
 * One entry: device u16, box BDF u16, vendor ID u16, device ID u16, memory
 * size in bytes u64, profile name (DXPU_MGMT_PROFILE_NAME_SIZE bytes).
 */
#define DXPU_MGMT_INVENTORY_ENTRY_SIZE 48u
/* The most entries one INVENTORY response holds, with a key: (65507 - 16 - 16 - 32) / 48 = 1363. */
#define DXPU_MGMT_INVENTORY_MAX_DEVICES                                                            \
	((DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_INVENTORY_FIXED_SIZE -                \
	  DXPU_MGMT_FABRIC_KEY_SIZE) /                                                             \
	 DXPU_MGMT_INVENTORY_ENTRY_SIZE)

/* DMA_LIST response body: device u16, window count u16, rsvd u32, then the windows. */
#define DXPU_MGMT_DMA_LIST_FIXED_SIZE 8u
/* One window, as DMA_GRANT gives it: device base u64, host base u64, size u64. */
#define DXPU_MGMT_DMA_WINDOW_SIZE 24u
/* The most windows a device has, so the most one DMA_LIST response holds (8 + 16 * 24 = 392). */
#define DXPU_MGMT_DMA_LIST_MAX_WINDOWS 16u

/* SCREENSHOT request: device u16, rsvd u16, offset u32 (into the PNG). */
#define DXPU_MGMT_SCREENSHOT_REQ_SIZE 8u
/*
 * SCREENSHOT OK response: device u16, rsvd u16, total u32 (the PNG's size), offset u32, frame
 * u32 (the display's frame counter: the same in every piece of one image), then the PNG's bytes
 * from offset, as many as fit (at most DXPU_MGMT_SCREENSHOT_MAX_DATA; none at offset == total).
 */
#define DXPU_MGMT_SCREENSHOT_FIXED_SIZE 16u
/* 65507 - 16 - 16 = 65475 */
#define DXPU_MGMT_SCREENSHOT_MAX_DATA                                                              \
	(DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_SCREENSHOT_FIXED_SIZE)

/* A device's state in a STATUS entry. */
enum dxpu_mgmt_device_state {
	DXPU_MGMT_DEV_FREE = 0,
	DXPU_MGMT_DEV_ASSIGNED = 1,
	DXPU_MGMT_DEV_SCRUBBING = 2, /* released, being reset and scrubbed */
	/* its owner's session was lost without RELEASE: lent to no one else until reset and scrubbed */
	DXPU_MGMT_DEV_QUARANTINED = 3,
};

/* The transfer in a firmware report. */
enum dxpu_mgmt_fw_transfer {
	DXPU_MGMT_FW_IDLE = 0,	    /* none */
	DXPU_MGMT_FW_RECEIVING = 1, /* begun: next offset of total bytes received */
	DXPU_MGMT_FW_COMMITTED = 2, /* written, verified from the flash, on trial at next boot */
};

/* A slot's state in a firmware report (as in the boot state, docs/firmware.md). */
enum dxpu_mgmt_fw_slot_state {
	DXPU_MGMT_FW_SLOT_EMPTY = 0,
	DXPU_MGMT_FW_SLOT_WRITTEN = 1,
	DXPU_MGMT_FW_SLOT_GOOD = 2,
	DXPU_MGMT_FW_SLOT_BAD = 3,
};

DXPU_EXTERN_C_END

#endif /* DXPU_MGMT_H */
