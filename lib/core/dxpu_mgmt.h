/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxpu_mgmt.h - strict decoder and encoder of DxPU management messages
 * (include/dxpu/mgmt.h, docs/protocol.md section 15). Sans-IO, no
 * allocation: the decoder reads the caller's buffer (the entries of a STATUS
 * or INVENTORY response stay there and are read with dxpu_mgmt_status_entry()
 * or dxpu_mgmt_inventory_entry(), the windows of a DMA_LIST response with
 * dxpu_mgmt_dma_list_window()), the encoder fills the caller's buffer.
 *
 * dxpu_mgmt_decode() checks a datagram completely (magic, version, type,
 * flags, status, length, body size and every reserved field) before it
 * returns DXPU_MGMT_ERR_OK. It does not judge arguments (a zero size, node
 * ID 0): that is dxpu_mgmt_check_args(), whose answer is a status.
 */
#ifndef DXPU_CORE_DXPU_MGMT_H
#define DXPU_CORE_DXPU_MGMT_H

#include <dxpu/mgmt.h>

DXPU_EXTERN_C_BEGIN

/* Why a datagram was not used. Numbers and names are stable. */
enum dxpu_mgmt_err {
	DXPU_MGMT_ERR_OK = 0,
	DXPU_MGMT_ERR_SHORT,	       /* fewer than 16 bytes */
	DXPU_MGMT_ERR_BAD_MAGIC,       /* not "DXMG": not a management message */
	DXPU_MGMT_ERR_BAD_VERSION,     /* Version not 1: answer UNSUPPORTED_VERSION */
	DXPU_MGMT_ERR_RESERVED,	       /* a reserved flag or field is not zero */
	DXPU_MGMT_ERR_REQUEST_STATUS,  /* a request with a non-zero Status */
	DXPU_MGMT_ERR_BAD_STATUS,      /* a response with a Status this version does not define */
	DXPU_MGMT_ERR_UNKNOWN_TYPE,    /* Type not defined: answer UNKNOWN_TYPE */
	DXPU_MGMT_ERR_TOO_LARGE,       /* more than DXPU_MGMT_MAX_MSG bytes */
	DXPU_MGMT_ERR_LENGTH_MISMATCH, /* Body length is not the bytes after the header */
	DXPU_MGMT_ERR_BODY_SIZE,       /* the body's size is wrong for the type and direction */
	DXPU_MGMT_ERR_BAD_ENTRY, /* a report entry that breaks its rules (state, owner, name) */
	DXPU_MGMT_ERR_NO_SPACE,	 /* encoder: the message does not fit the buffer */
	DXPU_MGMT_ERR_COUNT
};

/* ASSIGN request. */
struct dxpu_mgmt_assign {
	uint16_t device;   /* the bridge's device number */
	uint16_t host_bdf; /* the BDF the host presents the device at */
	uint64_t host_node_id;
};

/* RELEASE and DMA_REVOKE_ALL requests. */
struct dxpu_mgmt_device_ref {
	uint16_t device;
};

/* DMA_GRANT request: device addresses [device_base, device_base + size) reach host memory. */
struct dxpu_mgmt_dma_grant {
	uint16_t device;
	uint64_t device_base;
	uint64_t host_base;
	uint64_t size;
};

/* One DMA window of a DMA_LIST response: the fields of the DMA_GRANT that made it. */
struct dxpu_mgmt_dma_window {
	uint64_t device_base;
	uint64_t host_base;
	uint64_t size; /* > 0; neither range wraps past 2^64 */
};

/*
 * DMA_LIST response (status OK): the device's windows, window_count of them
 * (at most DXPU_MGMT_DMA_LIST_MAX_WINDOWS), in wire format
 * (DXPU_MGMT_DMA_WINDOW_SIZE bytes each) at windows, as the entries of a
 * STATUS report. Read them with dxpu_mgmt_dma_list_window().
 */
struct dxpu_mgmt_dma_list {
	uint16_t device;
	uint16_t window_count;
	const uint8_t *windows;
};

/* SCREENSHOT request: a piece of the device's display as a PNG, from offset. */
struct dxpu_mgmt_screenshot_request {
	uint16_t device;
	uint32_t offset;
};

/*
 * SCREENSHOT response (status OK): data_len bytes of the PNG (total bytes) from offset, at
 * data (in the decoded datagram, or wherever the encoder's caller has them); offset +
 * data_len <= total; frame identifies the image.
 */
struct dxpu_mgmt_screenshot {
	uint16_t device;
	uint32_t total;
	uint32_t offset;
	uint32_t frame;
	uint16_t data_len;
	const uint8_t *data;
};

/* One device of a STATUS response. */
struct dxpu_mgmt_device_entry {
	uint16_t device;
	uint16_t box_bdf;
	uint16_t host_bdf; /* meaningful while assigned */
	uint8_t state;	   /* enum dxpu_mgmt_device_state */
	uint64_t owner;	   /* node ID; 0 when free */
};

/*
 * STATUS response (status OK). entries points at device_count wire-format
 * entries (DXPU_MGMT_STATUS_ENTRY_SIZE bytes each): in the decoded datagram,
 * or, for the encoder, wherever the caller built them. Read them with
 * dxpu_mgmt_status_entry().
 */
struct dxpu_mgmt_status_report {
	uint16_t device_count;
	uint16_t host_count; /* hosts with a session */
	const uint8_t *entries;
};

/*
 * One device of an INVENTORY response. profile is NUL-terminated: 1 to
 * DXPU_MGMT_PROFILE_NAME_SIZE - 1 printable ASCII characters (0x20..0x7e); the
 * encoder sends at most that many, truncating a longer name.
 */
struct dxpu_mgmt_inventory_device {
	uint16_t device;
	uint16_t box_bdf;
	uint16_t vendor_id; /* PCI IDs of the device's function */
	uint16_t device_id;
	uint64_t memory_bytes; /* device memory */
	char profile[DXPU_MGMT_PROFILE_NAME_SIZE];
};

/*
 * INVENTORY response (status OK). entries points at device_count wire-format
 * entries (DXPU_MGMT_INVENTORY_ENTRY_SIZE bytes each), as in a STATUS report.
 * Read them with dxpu_mgmt_inventory_entry().
 */
struct dxpu_mgmt_inventory {
	uint64_t node_id; /* the bridge's, as in its HELLO */
	uint16_t device_count;
	const uint8_t *entries;
	bool has_fabric_key; /* the bridge has an identity (DXPU_MGMT_INVENTORY_F_FABRIC_KEY) */
	uint8_t fabric_key[DXPU_MGMT_FABRIC_KEY_SIZE]; /* its public key; zero without one */
};

/* HOST_KEY_SET (node and key) and HOST_KEY_REMOVE (node; key unused) requests. */
struct dxpu_mgmt_host_key {
	uint64_t node_id;			       /* the host's node ID, non-zero */
	uint8_t public_key[DXPU_MGMT_FABRIC_KEY_SIZE]; /* its X25519 public key */
};

/* FW_BEGIN request: the image's header, checked by the bridge before any chunk. */
struct dxpu_mgmt_fw_begin {
	uint32_t flags;	       /* DXPU_MGMT_FW_F_* */
	const uint8_t *header; /* DXPU_MGMT_FW_IMAGE_HEADER_SIZE bytes, in the datagram */
};

/* FW_CHUNK request: length bytes of the image at offset (the header included, from 0). */
struct dxpu_mgmt_fw_chunk {
	uint64_t offset;
	uint32_t crc;	     /* CRC32C of the data */
	uint16_t length;     /* 1 .. DXPU_MGMT_FW_CHUNK_MAX_DATA */
	const uint8_t *data; /* in the datagram */
};

/* The firmware report (DXPU_MGMT_FW_REPORT_SIZE bytes on the wire, include/dxpu/mgmt.h). */
struct dxpu_mgmt_fw_report {
	uint8_t running_slot; /* 0 A, 1 B: the slot the bridge booted from */
	uint8_t transfer;     /* enum dxpu_mgmt_fw_transfer */
	uint8_t target_slot;  /* where the transfer writes; DXPU_MGMT_FW_NO_SLOT when idle */
	uint8_t trial_slot;   /* DXPU_MGMT_FW_NO_SLOT: none */
	uint8_t tries_left;
	uint8_t slot_state[2];	  /* enum dxpu_mgmt_fw_slot_state, A then B */
	uint32_t slot_version[2]; /* MAJOR << 24 | MINOR << 16 | PATCH; 0 when empty */
	uint32_t running_version; /* the image running */
	uint32_t min_version;	  /* anti-rollback minimum */
	uint32_t hw_revision;	  /* the bridge's, from its factory block */
	uint64_t next_offset;	  /* bytes of the transfer received, in order */
	uint64_t total;		  /* the image's bytes (header and payload); 0 when idle */
};

/*
 * The authentication record of a signed request (DXPU_MGMT_F_SIGNED). The encoder writes
 * epoch, sequence and key ID and leaves the signature zero: the caller signs the datagram's
 * first len - DXPU_MGMT_SIGNATURE_SIZE bytes and writes the signature into its last ones.
 */
struct dxpu_mgmt_auth {
	uint64_t epoch;	   /* the signer's epoch: a restarted manager's is higher */
	uint64_t sequence; /* within the epoch, each request's own */
	uint8_t key_id[DXPU_MGMT_KEY_ID_SIZE];
	const uint8_t *signature; /* decoded: DXPU_MGMT_SIGNATURE_SIZE bytes in the datagram */
};

/* A decoded message, or one to encode. */
struct dxpu_mgmt_msg {
	uint8_t version; /* decoded; the encoder always writes DXPU_MGMT_VERSION */
	uint8_t type;	 /* enum dxpu_mgmt_type */
	uint16_t flags;	 /* DXPU_MGMT_F_* */
	uint32_t request_id;
	uint16_t body_length; /* decoded; the encoder computes it */
	uint16_t status;      /* enum dxpu_mgmt_status; 0 in a request */
	/*
	 * The member for the type; none for a STATUS or INVENTORY request, nor for
	 * any response but a STATUS, INVENTORY, DMA_LIST or firmware one with OK.
	 */
	union {
		struct dxpu_mgmt_assign assign;
		struct dxpu_mgmt_device_ref release;
		struct dxpu_mgmt_dma_grant dma_grant;
		struct dxpu_mgmt_device_ref dma_revoke_all;
		struct dxpu_mgmt_device_ref dma_list_request; /* DMA_LIST request */
		struct dxpu_mgmt_dma_list dma_list;	      /* OK to DMA_LIST */
		struct dxpu_mgmt_status_report status_report;
		struct dxpu_mgmt_inventory inventory;
		struct dxpu_mgmt_fw_begin fw_begin;
		struct dxpu_mgmt_fw_chunk fw_chunk;
		struct dxpu_mgmt_fw_report fw_report; /* OK to FW_BEGIN, CHUNK, STATUS, COMMIT */
		struct dxpu_mgmt_host_key host_key;   /* HOST_KEY_SET, HOST_KEY_REMOVE */
		struct dxpu_mgmt_screenshot_request screenshot_request; /* SCREENSHOT request */
		struct dxpu_mgmt_screenshot screenshot;			/* OK to SCREENSHOT */
	} body;
	struct dxpu_mgmt_auth auth; /* a request with DXPU_MGMT_F_SIGNED */
};

static inline bool dxpu_mgmt_is_response(const struct dxpu_mgmt_msg *m)
{
	return (m->flags & DXPU_MGMT_F_RESPONSE) != 0;
}

static inline bool dxpu_mgmt_is_signed(const struct dxpu_mgmt_msg *m)
{
	return (m->flags & DXPU_MGMT_F_SIGNED) != 0;
}

/*
 * Whether a request of this type changes the bridge's state (ASSIGN, RELEASE, DMA_GRANT,
 * DMA_REVOKE_ALL, FW_BEGIN, FW_CHUNK, FW_COMMIT, FW_REBOOT, HOST_KEY_SET, HOST_KEY_REMOVE, and any
 * type this version does not define): such a request must be signed. STATUS, INVENTORY,
 * FW_STATUS and DMA_LIST only read. SCREENSHOT only reads too, but what it reads is a tenant's
 * display, so it is signed as these are.
 */
bool dxpu_mgmt_changes_state(uint8_t type);

/*
 * Decode and check the datagram buf[0..len). On every error but SHORT and
 * BAD_MAGIC the header fields of *m (version, type, flags, request_id,
 * body_length, status) are filled in, so a server can answer; the body is
 * valid only on DXPU_MGMT_ERR_OK.
 *
 * Checks, in this order: SHORT, BAD_MAGIC, BAD_VERSION, RESERVED (flags;
 * DXPU_MGMT_F_SIGNED on a response), REQUEST_STATUS / BAD_STATUS, UNKNOWN_TYPE
 * (an error response may carry any type: it echoes the request's), TOO_LARGE,
 * LENGTH_MISMATCH (a signed request: Body length is not the bytes between the
 * header and its DXPU_MGMT_AUTH_SIZE-byte record), BODY_SIZE,
 * RESERVED (body fields), then for each entry of a STATUS or INVENTORY
 * report in turn RESERVED (its reserved byte, its name's padding) and
 * BAD_ENTRY. A DMA_LIST report: BODY_SIZE (shorter than its 8 fixed bytes),
 * TOO_LARGE (a window count above DXPU_MGMT_DMA_LIST_MAX_WINDOWS), BODY_SIZE
 * (not 8 + 24 x count bytes), RESERVED, then BAD_ENTRY for a window of size 0
 * or whose device or host range wraps past 2^64. A firmware report's RESERVED then BAD_ENTRY (a slot, state or
 * transfer value this version does not define, next offset past total, an
 * idle transfer with a target or bytes). A FW_CHUNK's CRC is an argument
 * (dxpu_mgmt_check_args), not a decoding error.
 */
enum dxpu_mgmt_err dxpu_mgmt_decode(const uint8_t *buf, size_t len, struct dxpu_mgmt_msg *m);

/*
 * Encode *m into buf[0..cap); *len = bytes written. Refuses (writing nothing
 * usable) what dxpu_mgmt_decode() would refuse: RESERVED (flags),
 * REQUEST_STATUS, BAD_STATUS, UNKNOWN_TYPE, TOO_LARGE (more than
 * DXPU_MGMT_STATUS_MAX_DEVICES or DXPU_MGMT_INVENTORY_MAX_DEVICES entries,
 * more than DXPU_MGMT_DMA_LIST_MAX_WINDOWS windows), BAD_ENTRY (a window),
 * BAD_ENTRY or RESERVED (a STATUS or INVENTORY entry), and NO_SPACE. An error
 * response (status != OK) has an empty body.
 */
enum dxpu_mgmt_err dxpu_mgmt_encode(const struct dxpu_mgmt_msg *m, uint8_t *buf, size_t cap,
				    size_t *len);

/*
 * A STATUS response with OK built from entry structs: the header echoes
 * request_id, the entries are written straight into buf. Errors as
 * dxpu_mgmt_encode().
 */
enum dxpu_mgmt_err dxpu_mgmt_encode_status_report(uint32_t request_id, uint16_t host_count,
						  const struct dxpu_mgmt_device_entry *entries,
						  size_t n, uint8_t *buf, size_t cap, size_t *len);

/* Writes one entry in wire format to out[0..DXPU_MGMT_STATUS_ENTRY_SIZE). */
void dxpu_mgmt_status_entry_write(uint8_t *out, const struct dxpu_mgmt_device_entry *e);

/* Entry i of a STATUS report; false when i is not below its device_count. */
bool dxpu_mgmt_status_entry(const struct dxpu_mgmt_status_report *r, size_t i,
			    struct dxpu_mgmt_device_entry *e);

/*
 * An INVENTORY response with OK built from entry structs: the header echoes
 * request_id, node_id is the bridge's, fabric_key its X25519 public key
 * (DXPU_MGMT_FABRIC_KEY_SIZE bytes; NULL: a bridge without identity). Errors as dxpu_mgmt_encode(); a
 * profile name longer than DXPU_MGMT_PROFILE_NAME_SIZE - 1 is truncated, an
 * empty one or one with a byte outside 0x20..0x7e is BAD_ENTRY.
 */
enum dxpu_mgmt_err dxpu_mgmt_encode_inventory(uint32_t request_id, uint64_t node_id,
					      const uint8_t *fabric_key,
					      const struct dxpu_mgmt_inventory_device *entries,
					      size_t n, uint8_t *buf, size_t cap, size_t *len);

/*
 * Writes one entry in wire format to out[0..DXPU_MGMT_INVENTORY_ENTRY_SIZE),
 * the profile name truncated to DXPU_MGMT_PROFILE_NAME_SIZE - 1 characters and
 * NUL-padded. It does not check the name (dxpu_mgmt_encode() does).
 */
void dxpu_mgmt_inventory_entry_write(uint8_t *out, const struct dxpu_mgmt_inventory_device *e);

/* Entry i of an INVENTORY report; false when i is not below its device_count. */
bool dxpu_mgmt_inventory_entry(const struct dxpu_mgmt_inventory *r, size_t i,
			       struct dxpu_mgmt_inventory_device *e);

/*
 * A DMA_LIST response with OK for device, its n windows from structs: the
 * header echoes request_id. Errors as dxpu_mgmt_encode(): TOO_LARGE for more
 * than DXPU_MGMT_DMA_LIST_MAX_WINDOWS, BAD_ENTRY for a window of size 0 or a
 * wrapping range, NO_SPACE.
 */
enum dxpu_mgmt_err dxpu_mgmt_encode_dma_list(uint32_t request_id, uint16_t device,
					     const struct dxpu_mgmt_dma_window *windows, size_t n,
					     uint8_t *buf, size_t cap, size_t *len);

/* Writes one window in wire format to out[0..DXPU_MGMT_DMA_WINDOW_SIZE). */
void dxpu_mgmt_dma_window_write(uint8_t *out, const struct dxpu_mgmt_dma_window *w);

/* Window i of a DMA_LIST report; false when i is not below its window_count. */
bool dxpu_mgmt_dma_list_window(const struct dxpu_mgmt_dma_list *l, size_t i,
			       struct dxpu_mgmt_dma_window *w);

/*
 * The request's arguments, judged: DXPU_MGMT_OK, or DXPU_MGMT_BAD_ARGUMENT for
 * host node ID 0 (ASSIGN) and, in DMA_GRANT, a zero size or a device or host
 * range that ends past DXPU_MGMT_DMA_ADDR_LIMIT (2^52; so none wraps); DXPU_MGMT_BAD_CRC for a FW_CHUNK whose data does
 * not match its CRC32C, BAD_ARGUMENT for one whose range wraps past 2^64. A
 * server answers these before it looks at any table.
 */
enum dxpu_mgmt_status dxpu_mgmt_check_args(const struct dxpu_mgmt_msg *request);

/*
 * What a server does with a datagram dxpu_mgmt_decode() refused: true, and
 * *status, when it answers (with an error response echoing type and
 * request_id); false when it drops it silently (too short or bad magic to
 * name a request, or a response: a server never answers one).
 */
bool dxpu_mgmt_error_reply(enum dxpu_mgmt_err err, const struct dxpu_mgmt_msg *m,
			   enum dxpu_mgmt_status *status);

/* The firmware report's wire bytes, and back (RESERVED or BAD_ENTRY as the decoder). */
void dxpu_mgmt_fw_report_write(uint8_t *out, const struct dxpu_mgmt_fw_report *r);
enum dxpu_mgmt_err dxpu_mgmt_fw_report_read(const uint8_t *in, struct dxpu_mgmt_fw_report *r);

/* Stable names: "assign", "device-busy", "length-mismatch", "scrubbing"; "unknown" otherwise. */
const char *dxpu_mgmt_type_name(uint8_t type);
const char *dxpu_mgmt_status_name(uint16_t status);
const char *dxpu_mgmt_err_name(enum dxpu_mgmt_err err);
const char *dxpu_mgmt_device_state_name(uint8_t state);
/* "idle", "receiving", "committed"; "empty", "written", "good", "bad"; "unknown" otherwise. */
const char *dxpu_mgmt_fw_transfer_name(uint8_t transfer);
const char *dxpu_mgmt_fw_slot_state_name(uint8_t state);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXPU_MGMT_H */
