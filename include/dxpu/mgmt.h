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
#define DXPU_MGMT_F_ALL 0x0001u

enum dxpu_mgmt_type {
	DXPU_MGMT_ASSIGN = 1,
	DXPU_MGMT_RELEASE = 2,
	DXPU_MGMT_DMA_GRANT = 3,
	DXPU_MGMT_DMA_REVOKE_ALL = 4,
	DXPU_MGMT_STATUS = 5,
	DXPU_MGMT_INVENTORY = 6,
};

#define DXPU_MGMT_TYPE_MAX DXPU_MGMT_INVENTORY

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
	DXPU_MGMT_STATUS_COUNT
};

/* Request bodies */
#define DXPU_MGMT_ASSIGN_SIZE 16u    /* device u16, host BDF u16, rsvd u32, host node ID u64 */
#define DXPU_MGMT_DEVICE_REF_SIZE 8u /* device u16, rsvd u16, rsvd u32 (RELEASE, DMA_REVOKE_ALL) */
#define DXPU_MGMT_DMA_GRANT_SIZE 32u /* as DEVICE_REF, then device base, host base, size (u64) */
#define DXPU_MGMT_STATUS_REQ_SIZE 0u
#define DXPU_MGMT_INVENTORY_REQ_SIZE 0u

/* STATUS response body: device count u16, host count u16, rsvd u32, then the entries. */
#define DXPU_MGMT_STATUS_FIXED_SIZE 8u
/* One entry: device u16, box BDF u16, host BDF u16, state u8, rsvd u8, owner node ID u64. */
#define DXPU_MGMT_STATUS_ENTRY_SIZE 16u
/* The most entries one STATUS response holds: (65507 - 16 - 8) / 16 = 4092. */
#define DXPU_MGMT_STATUS_MAX_DEVICES                                                               \
	((DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_STATUS_FIXED_SIZE) /                  \
	 DXPU_MGMT_STATUS_ENTRY_SIZE)

/* INVENTORY response body: bridge node ID u64, device count u16, rsvd u16, rsvd u32, entries. */
#define DXPU_MGMT_INVENTORY_FIXED_SIZE 16u
/* Bytes of an entry's profile name: ASCII, NUL-terminated and NUL-padded (31 characters). */
#define DXPU_MGMT_PROFILE_NAME_SIZE 32u
/*
 * One entry: device u16, box BDF u16, vendor ID u16, device ID u16, memory
 * size in bytes u64, profile name (DXPU_MGMT_PROFILE_NAME_SIZE bytes).
 */
#define DXPU_MGMT_INVENTORY_ENTRY_SIZE 48u
/* The most entries one INVENTORY response holds: (65507 - 16 - 16) / 48 = 1364. */
#define DXPU_MGMT_INVENTORY_MAX_DEVICES                                                            \
	((DXPU_MGMT_MAX_MSG - DXPU_MGMT_HDR_SIZE - DXPU_MGMT_INVENTORY_FIXED_SIZE) /               \
	 DXPU_MGMT_INVENTORY_ENTRY_SIZE)

/* A device's state in a STATUS entry. */
enum dxpu_mgmt_device_state {
	DXPU_MGMT_DEV_FREE = 0,
	DXPU_MGMT_DEV_ASSIGNED = 1,
	DXPU_MGMT_DEV_SCRUBBING = 2, /* released, being reset and scrubbed */
};

DXPU_EXTERN_C_END

#endif /* DXPU_MGMT_H */
