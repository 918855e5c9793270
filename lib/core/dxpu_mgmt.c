// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * dxpu_mgmt.c - DxPU management message decoder and encoder (see dxpu_mgmt.h).
 */
#include "dxpu_mgmt.h"

#include "crc32c.h"

static uint64_t get_be64(const uint8_t *p)
{
	return ((uint64_t)dxpu_get_be32(p) << 32) | dxpu_get_be32(p + 4);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	dxpu_put_be32(p, (uint32_t)(v >> 32));
	dxpu_put_be32(p + 4, (uint32_t)v);
}

static bool known_type(uint8_t type)
{
	return type >= DXPU_MGMT_ASSIGN && type <= DXPU_MGMT_TYPE_MAX;
}

/* The body size of a request of a known type. */
static size_t request_body_size(uint8_t type)
{
	switch (type) {
	case DXPU_MGMT_ASSIGN:
		return DXPU_MGMT_ASSIGN_SIZE;
	case DXPU_MGMT_RELEASE:
	case DXPU_MGMT_DMA_REVOKE_ALL:
	case DXPU_MGMT_DMA_LIST:
		return DXPU_MGMT_DEVICE_REF_SIZE;
	case DXPU_MGMT_DMA_GRANT:
		return DXPU_MGMT_DMA_GRANT_SIZE;
	case DXPU_MGMT_SCREENSHOT:
		return DXPU_MGMT_SCREENSHOT_REQ_SIZE;
	case DXPU_MGMT_FW_BEGIN:
		return DXPU_MGMT_FW_BEGIN_SIZE;
	case DXPU_MGMT_HOST_KEY_SET:
		return DXPU_MGMT_HOST_KEY_SET_SIZE;
	case DXPU_MGMT_HOST_KEY_REMOVE:
		return DXPU_MGMT_HOST_KEY_REMOVE_SIZE;
	default: /* STATUS, INVENTORY, FW_STATUS, FW_COMMIT, FW_REBOOT: empty */
		return DXPU_MGMT_STATUS_REQ_SIZE;
	}
}

/*
 * A STATUS OK response carries a report, an INVENTORY OK response an
 * inventory; every other response has an empty body.
 */
static bool has_report(const struct dxpu_mgmt_msg *m)
{
	return dxpu_mgmt_is_response(m) && m->status == DXPU_MGMT_OK && m->type == DXPU_MGMT_STATUS;
}

static bool has_inventory(const struct dxpu_mgmt_msg *m)
{
	return dxpu_mgmt_is_response(m) && m->status == DXPU_MGMT_OK &&
	       m->type == DXPU_MGMT_INVENTORY;
}

static bool has_dma_list(const struct dxpu_mgmt_msg *m)
{
	return dxpu_mgmt_is_response(m) && m->status == DXPU_MGMT_OK &&
	       m->type == DXPU_MGMT_DMA_LIST;
}

static bool has_screenshot(const struct dxpu_mgmt_msg *m)
{
	return dxpu_mgmt_is_response(m) && m->status == DXPU_MGMT_OK &&
	       m->type == DXPU_MGMT_SCREENSHOT;
}

/* An OK response to FW_BEGIN, FW_CHUNK, FW_STATUS or FW_COMMIT carries a firmware report. */
static bool has_fw_report(const struct dxpu_mgmt_msg *m)
{
	if (!dxpu_mgmt_is_response(m) || m->status != DXPU_MGMT_OK)
		return false;
	return m->type == DXPU_MGMT_FW_BEGIN || m->type == DXPU_MGMT_FW_CHUNK ||
	       m->type == DXPU_MGMT_FW_STATUS || m->type == DXPU_MGMT_FW_COMMIT;
}

/* Header checks shared by decoder and encoder (after magic and version). */
static enum dxpu_mgmt_err check_header(const struct dxpu_mgmt_msg *m)
{
	if (m->flags & ~DXPU_MGMT_F_ALL)
		return DXPU_MGMT_ERR_RESERVED;
	if (dxpu_mgmt_is_response(m) && dxpu_mgmt_is_signed(m))
		return DXPU_MGMT_ERR_RESERVED; /* only requests are signed */
	if (!dxpu_mgmt_is_response(m) && m->status != DXPU_MGMT_OK)
		return DXPU_MGMT_ERR_REQUEST_STATUS;
	if (m->status >= DXPU_MGMT_STATUS_COUNT)
		return DXPU_MGMT_ERR_BAD_STATUS;
	/* An error response echoes the request's type, whatever it was. */
	if (!known_type(m->type) && !(dxpu_mgmt_is_response(m) && m->status != DXPU_MGMT_OK))
		return DXPU_MGMT_ERR_UNKNOWN_TYPE;
	return DXPU_MGMT_ERR_OK;
}

static void entry_read(const uint8_t *p, struct dxpu_mgmt_device_entry *e)
{
	e->device = dxpu_get_be16(&p[0]);
	e->box_bdf = dxpu_get_be16(&p[2]);
	e->host_bdf = dxpu_get_be16(&p[4]);
	e->state = p[6];
	e->owner = get_be64(&p[8]);
}

static enum dxpu_mgmt_err check_entry(const struct dxpu_mgmt_device_entry *e)
{
	switch (e->state) {
	case DXPU_MGMT_DEV_FREE:
		return e->owner == 0 ? DXPU_MGMT_ERR_OK : DXPU_MGMT_ERR_BAD_ENTRY;
	case DXPU_MGMT_DEV_ASSIGNED:
	case DXPU_MGMT_DEV_QUARANTINED:
		return e->owner != 0 ? DXPU_MGMT_ERR_OK : DXPU_MGMT_ERR_BAD_ENTRY;
	case DXPU_MGMT_DEV_SCRUBBING:
		return DXPU_MGMT_ERR_OK; /* the owner it is scrubbed after, or 0 */
	default:
		return DXPU_MGMT_ERR_BAD_ENTRY;
	}
}

/* The wire entries at p, n of them: reserved byte zero, state and owner consistent. */
static enum dxpu_mgmt_err check_entries(const uint8_t *p, size_t n)
{
	struct dxpu_mgmt_device_entry e;
	enum dxpu_mgmt_err err;
	size_t i;

	for (i = 0; i < n; i++, p += DXPU_MGMT_STATUS_ENTRY_SIZE) {
		if (p[7])
			return DXPU_MGMT_ERR_RESERVED;
		entry_read(p, &e);
		err = check_entry(&e);
		if (err)
			return err;
	}
	return DXPU_MGMT_ERR_OK;
}

static enum dxpu_mgmt_err decode_report(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	struct dxpu_mgmt_status_report *r = &m->body.status_report;

	if (blen < DXPU_MGMT_STATUS_FIXED_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	r->device_count = dxpu_get_be16(&b[0]);
	r->host_count = dxpu_get_be16(&b[2]);
	r->entries = &b[DXPU_MGMT_STATUS_FIXED_SIZE];
	if (blen !=
	    DXPU_MGMT_STATUS_FIXED_SIZE + (size_t)r->device_count * DXPU_MGMT_STATUS_ENTRY_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	if (!dxpu_all_zero(&b[4], 4))
		return DXPU_MGMT_ERR_RESERVED;
	return check_entries(r->entries, r->device_count);
}

/* ---- INVENTORY ---- */

static bool printable(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((uint8_t)p[i] < 0x20 || (uint8_t)p[i] > 0x7e)
			return false;
	}
	return true;
}

/* The characters of a profile name as the encoder sends it: at most 31, up to its NUL. */
static size_t profile_name_len(const char *name)
{
	size_t n = 0;

	while (n < DXPU_MGMT_PROFILE_NAME_SIZE - 1 && name[n])
		n++;
	return n;
}

/* An entry struct the encoder can send: a name of at least one printable character. */
static enum dxpu_mgmt_err check_inventory_entry(const struct dxpu_mgmt_inventory_device *e)
{
	size_t n = profile_name_len(e->profile);

	return n && printable(e->profile, n) ? DXPU_MGMT_ERR_OK : DXPU_MGMT_ERR_BAD_ENTRY;
}

/*
 * The wire entries at p, n of them: each name 1..31 printable characters, then
 * NULs to the end of its field.
 */
static enum dxpu_mgmt_err check_inventory_entries(const uint8_t *p, size_t n)
{
	const uint8_t *name;
	size_t i, len;

	for (i = 0; i < n; i++, p += DXPU_MGMT_INVENTORY_ENTRY_SIZE) {
		name = &p[16];
		len = 0;
		while (len < DXPU_MGMT_PROFILE_NAME_SIZE && name[len])
			len++;
		if (len == DXPU_MGMT_PROFILE_NAME_SIZE)
			return DXPU_MGMT_ERR_BAD_ENTRY; /* no NUL */
		if (!dxpu_all_zero(&name[len], DXPU_MGMT_PROFILE_NAME_SIZE - len))
			return DXPU_MGMT_ERR_RESERVED;
		if (!len || !printable((const char *)name, len))
			return DXPU_MGMT_ERR_BAD_ENTRY;
	}
	return DXPU_MGMT_ERR_OK;
}

static void inventory_entry_read(const uint8_t *p, struct dxpu_mgmt_inventory_device *e)
{
	e->device = dxpu_get_be16(&p[0]);
	e->box_bdf = dxpu_get_be16(&p[2]);
	e->vendor_id = dxpu_get_be16(&p[4]);
	e->device_id = dxpu_get_be16(&p[6]);
	e->memory_bytes = get_be64(&p[8]);
	memcpy(e->profile, &p[16], DXPU_MGMT_PROFILE_NAME_SIZE);
	e->profile[DXPU_MGMT_PROFILE_NAME_SIZE - 1] = '\0';
}

static enum dxpu_mgmt_err decode_inventory(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	struct dxpu_mgmt_inventory *r = &m->body.inventory;
	size_t fixed = DXPU_MGMT_INVENTORY_FIXED_SIZE;
	uint16_t flags;

	if (blen < DXPU_MGMT_INVENTORY_FIXED_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	r->node_id = get_be64(&b[0]);
	r->device_count = dxpu_get_be16(&b[8]);
	flags = dxpu_get_be16(&b[10]);
	r->has_fabric_key = (flags & DXPU_MGMT_INVENTORY_F_FABRIC_KEY) != 0;
	if (r->has_fabric_key)
		fixed += DXPU_MGMT_FABRIC_KEY_SIZE;
	r->entries = &b[fixed];
	if (blen != fixed + (size_t)r->device_count * DXPU_MGMT_INVENTORY_ENTRY_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	if ((flags & ~DXPU_MGMT_INVENTORY_F_ALL) || !dxpu_all_zero(&b[12], 4))
		return DXPU_MGMT_ERR_RESERVED;
	if (r->has_fabric_key)
		memcpy(r->fabric_key, &b[DXPU_MGMT_INVENTORY_FIXED_SIZE],
		       DXPU_MGMT_FABRIC_KEY_SIZE);
	return check_inventory_entries(r->entries, r->device_count);
}

/* ---- DMA_LIST ---- */

/* Whether [base, base + size) stays below 2^64 (size > 0). */
static bool range_fits(uint64_t base, uint64_t size)
{
	return size - 1 <= ~(uint64_t)0 - base;
}

/* Whether [base, base + size) ends at or below DXPU_MGMT_DMA_ADDR_LIMIT (size > 0). */
static bool range_below_limit(uint64_t base, uint64_t size)
{
	return size <= DXPU_MGMT_DMA_ADDR_LIMIT && base <= DXPU_MGMT_DMA_ADDR_LIMIT - size;
}

static void dma_window_read(const uint8_t *p, struct dxpu_mgmt_dma_window *w)
{
	w->device_base = get_be64(&p[0]);
	w->host_base = get_be64(&p[8]);
	w->size = get_be64(&p[16]);
}

/* A window a bridge can have: a size, neither range wrapping (as DMA_GRANT's arguments). */
static enum dxpu_mgmt_err check_dma_window(const struct dxpu_mgmt_dma_window *w)
{
	if (!w->size || !range_fits(w->device_base, w->size) || !range_fits(w->host_base, w->size))
		return DXPU_MGMT_ERR_BAD_ENTRY;
	return DXPU_MGMT_ERR_OK;
}

static enum dxpu_mgmt_err check_dma_windows(const uint8_t *p, size_t n)
{
	struct dxpu_mgmt_dma_window w;
	enum dxpu_mgmt_err err;
	size_t i;

	for (i = 0; i < n; i++, p += DXPU_MGMT_DMA_WINDOW_SIZE) {
		dma_window_read(p, &w);
		err = check_dma_window(&w);
		if (err)
			return err;
	}
	return DXPU_MGMT_ERR_OK;
}

static enum dxpu_mgmt_err decode_dma_list(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	struct dxpu_mgmt_dma_list *l = &m->body.dma_list;

	if (blen < DXPU_MGMT_DMA_LIST_FIXED_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	l->device = dxpu_get_be16(&b[0]);
	l->window_count = dxpu_get_be16(&b[2]);
	l->windows = &b[DXPU_MGMT_DMA_LIST_FIXED_SIZE];
	if (l->window_count > DXPU_MGMT_DMA_LIST_MAX_WINDOWS)
		return DXPU_MGMT_ERR_TOO_LARGE;
	if (blen !=
	    DXPU_MGMT_DMA_LIST_FIXED_SIZE + (size_t)l->window_count * DXPU_MGMT_DMA_WINDOW_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	if (!dxpu_all_zero(&b[4], 4))
		return DXPU_MGMT_ERR_RESERVED;
	return check_dma_windows(l->windows, l->window_count);
}

/* ---- SCREENSHOT ---- */

/* A piece that lies within its image. */
static enum dxpu_mgmt_err check_screenshot(const struct dxpu_mgmt_screenshot *s)
{
	if (s->offset > s->total || s->data_len > s->total - s->offset ||
	    s->data_len > DXPU_MGMT_SCREENSHOT_MAX_DATA)
		return DXPU_MGMT_ERR_BAD_ENTRY;
	return DXPU_MGMT_ERR_OK;
}

static enum dxpu_mgmt_err decode_screenshot(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	struct dxpu_mgmt_screenshot *s = &m->body.screenshot;

	if (blen < DXPU_MGMT_SCREENSHOT_FIXED_SIZE ||
	    blen > DXPU_MGMT_SCREENSHOT_FIXED_SIZE + DXPU_MGMT_SCREENSHOT_MAX_DATA)
		return DXPU_MGMT_ERR_BODY_SIZE;
	if (!dxpu_all_zero(&b[2], 2))
		return DXPU_MGMT_ERR_RESERVED;
	s->device = dxpu_get_be16(&b[0]);
	s->total = dxpu_get_be32(&b[4]);
	s->offset = dxpu_get_be32(&b[8]);
	s->frame = dxpu_get_be32(&b[12]);
	s->data_len = (uint16_t)(blen - DXPU_MGMT_SCREENSHOT_FIXED_SIZE);
	s->data = &b[DXPU_MGMT_SCREENSHOT_FIXED_SIZE];
	return check_screenshot(s);
}

/* ---- firmware ---- */

static bool fw_slot_ok(uint8_t slot, bool none_ok)
{
	return slot <= 1 || (none_ok && slot == DXPU_MGMT_FW_NO_SLOT);
}

static enum dxpu_mgmt_err check_fw_report(const struct dxpu_mgmt_fw_report *r)
{
	bool idle = r->transfer == DXPU_MGMT_FW_IDLE;

	if (!fw_slot_ok(r->running_slot, false) || !fw_slot_ok(r->trial_slot, true) ||
	    r->transfer > DXPU_MGMT_FW_COMMITTED || r->slot_state[0] > DXPU_MGMT_FW_SLOT_BAD ||
	    r->slot_state[1] > DXPU_MGMT_FW_SLOT_BAD || r->next_offset > r->total)
		return DXPU_MGMT_ERR_BAD_ENTRY;
	if (idle)
		return r->target_slot == DXPU_MGMT_FW_NO_SLOT && r->total == 0
			       ? DXPU_MGMT_ERR_OK
			       : DXPU_MGMT_ERR_BAD_ENTRY;
	return fw_slot_ok(r->target_slot, false) ? DXPU_MGMT_ERR_OK : DXPU_MGMT_ERR_BAD_ENTRY;
}

void dxpu_mgmt_fw_report_write(uint8_t *out, const struct dxpu_mgmt_fw_report *r)
{
	memset(out, 0, DXPU_MGMT_FW_REPORT_SIZE);
	out[0] = r->running_slot;
	out[1] = r->transfer;
	out[2] = r->target_slot;
	out[3] = r->trial_slot;
	out[4] = r->tries_left;
	out[5] = r->slot_state[0];
	out[6] = r->slot_state[1];
	dxpu_put_be32(&out[8], r->slot_version[0]);
	dxpu_put_be32(&out[12], r->slot_version[1]);
	dxpu_put_be32(&out[16], r->running_version);
	dxpu_put_be32(&out[20], r->min_version);
	dxpu_put_be32(&out[24], r->hw_revision);
	put_be64(&out[32], r->next_offset);
	put_be64(&out[40], r->total);
}

enum dxpu_mgmt_err dxpu_mgmt_fw_report_read(const uint8_t *in, struct dxpu_mgmt_fw_report *r)
{
	r->running_slot = in[0];
	r->transfer = in[1];
	r->target_slot = in[2];
	r->trial_slot = in[3];
	r->tries_left = in[4];
	r->slot_state[0] = in[5];
	r->slot_state[1] = in[6];
	r->slot_version[0] = dxpu_get_be32(&in[8]);
	r->slot_version[1] = dxpu_get_be32(&in[12]);
	r->running_version = dxpu_get_be32(&in[16]);
	r->min_version = dxpu_get_be32(&in[20]);
	r->hw_revision = dxpu_get_be32(&in[24]);
	r->next_offset = get_be64(&in[32]);
	r->total = get_be64(&in[40]);
	if (in[7] || !dxpu_all_zero(&in[28], 4))
		return DXPU_MGMT_ERR_RESERVED;
	return check_fw_report(r);
}

static enum dxpu_mgmt_err decode_fw_chunk(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	struct dxpu_mgmt_fw_chunk *c = &m->body.fw_chunk;

	/* At most DXPU_MGMT_FW_CHUNK_MAX_DATA: the whole message is at most DXPU_MGMT_MAX_MSG. */
	if (blen <= DXPU_MGMT_FW_CHUNK_FIXED_SIZE)
		return DXPU_MGMT_ERR_BODY_SIZE;
	if (!dxpu_all_zero(&b[12], 4))
		return DXPU_MGMT_ERR_RESERVED;
	c->offset = get_be64(&b[0]);
	c->crc = dxpu_get_be32(&b[8]);
	c->length = (uint16_t)(blen - DXPU_MGMT_FW_CHUNK_FIXED_SIZE);
	c->data = &b[DXPU_MGMT_FW_CHUNK_FIXED_SIZE];
	return DXPU_MGMT_ERR_OK;
}

static enum dxpu_mgmt_err decode_request(const uint8_t *b, size_t blen, struct dxpu_mgmt_msg *m)
{
	if (m->type == DXPU_MGMT_FW_CHUNK)
		return decode_fw_chunk(b, blen, m);
	if (blen != request_body_size(m->type))
		return DXPU_MGMT_ERR_BODY_SIZE;
	switch (m->type) {
	case DXPU_MGMT_ASSIGN:
		if (!dxpu_all_zero(&b[4], 4))
			return DXPU_MGMT_ERR_RESERVED;
		m->body.assign.device = dxpu_get_be16(&b[0]);
		m->body.assign.host_bdf = dxpu_get_be16(&b[2]);
		m->body.assign.host_node_id = get_be64(&b[8]);
		break;
	case DXPU_MGMT_RELEASE:
	case DXPU_MGMT_DMA_REVOKE_ALL:
	case DXPU_MGMT_DMA_LIST:
		/* release, dma_revoke_all and dma_list_request are the same struct */
		if (!dxpu_all_zero(&b[2], 6))
			return DXPU_MGMT_ERR_RESERVED;
		m->body.release.device = dxpu_get_be16(&b[0]);
		break;
	case DXPU_MGMT_DMA_GRANT:
		if (!dxpu_all_zero(&b[2], 6))
			return DXPU_MGMT_ERR_RESERVED;
		m->body.dma_grant.device = dxpu_get_be16(&b[0]);
		m->body.dma_grant.device_base = get_be64(&b[8]);
		m->body.dma_grant.host_base = get_be64(&b[16]);
		m->body.dma_grant.size = get_be64(&b[24]);
		break;
	case DXPU_MGMT_FW_BEGIN:
		m->body.fw_begin.flags = dxpu_get_be32(&b[0]);
		if ((m->body.fw_begin.flags & ~DXPU_MGMT_FW_F_ALL) || !dxpu_all_zero(&b[4], 4))
			return DXPU_MGMT_ERR_RESERVED;
		m->body.fw_begin.header = &b[8];
		break;
	case DXPU_MGMT_HOST_KEY_SET:
		memcpy(m->body.host_key.public_key, &b[8], DXPU_MGMT_FABRIC_KEY_SIZE);
		m->body.host_key.node_id = get_be64(&b[0]);
		break;
	case DXPU_MGMT_HOST_KEY_REMOVE:
		m->body.host_key.node_id = get_be64(&b[0]);
		break;
	case DXPU_MGMT_SCREENSHOT:
		if (!dxpu_all_zero(&b[2], 2))
			return DXPU_MGMT_ERR_RESERVED;
		m->body.screenshot_request.device = dxpu_get_be16(&b[0]);
		m->body.screenshot_request.offset = dxpu_get_be32(&b[4]);
		break;
	default: /* STATUS, INVENTORY, FW_STATUS, FW_COMMIT, FW_REBOOT: no body */
		break;
	}
	return DXPU_MGMT_ERR_OK;
}

/* ---- authentication record ---- */

static void auth_read(const uint8_t *p, struct dxpu_mgmt_auth *a)
{
	a->epoch = get_be64(&p[0]);
	a->sequence = get_be64(&p[8]);
	memcpy(a->key_id, &p[16], DXPU_MGMT_KEY_ID_SIZE);
	a->signature = &p[16 + DXPU_MGMT_KEY_ID_SIZE];
}

static void auth_write(uint8_t *p, const struct dxpu_mgmt_auth *a)
{
	put_be64(&p[0], a->epoch);
	put_be64(&p[8], a->sequence);
	memcpy(&p[16], a->key_id, DXPU_MGMT_KEY_ID_SIZE);
	memset(&p[16 + DXPU_MGMT_KEY_ID_SIZE], 0, DXPU_MGMT_SIGNATURE_SIZE);
}

bool dxpu_mgmt_changes_state(uint8_t type)
{
	switch (type) {
	case DXPU_MGMT_STATUS:
	case DXPU_MGMT_INVENTORY:
	case DXPU_MGMT_FW_STATUS:
	case DXPU_MGMT_DMA_LIST:
		return false;
	default:
		return true;
	}
}

enum dxpu_mgmt_err dxpu_mgmt_decode(const uint8_t *buf, size_t len, struct dxpu_mgmt_msg *m)
{
	enum dxpu_mgmt_err err;
	const uint8_t *body;
	size_t blen;

	memset(m, 0, sizeof(*m));
	if (len < DXPU_MGMT_HDR_SIZE)
		return DXPU_MGMT_ERR_SHORT;
	if (dxpu_get_be32(&buf[DXPU_MGMT_OFF_MAGIC]) != DXPU_MGMT_MAGIC)
		return DXPU_MGMT_ERR_BAD_MAGIC;
	m->version = buf[DXPU_MGMT_OFF_VERSION];
	m->type = buf[DXPU_MGMT_OFF_TYPE];
	m->flags = dxpu_get_be16(&buf[DXPU_MGMT_OFF_FLAGS]);
	m->request_id = dxpu_get_be32(&buf[DXPU_MGMT_OFF_REQUEST_ID]);
	m->body_length = dxpu_get_be16(&buf[DXPU_MGMT_OFF_BODY_LENGTH]);
	m->status = dxpu_get_be16(&buf[DXPU_MGMT_OFF_STATUS]);
	if (m->version != DXPU_MGMT_VERSION)
		return DXPU_MGMT_ERR_BAD_VERSION;
	err = check_header(m);
	if (err)
		return err;
	if (len > DXPU_MGMT_MAX_MSG)
		return DXPU_MGMT_ERR_TOO_LARGE;
	blen = len - DXPU_MGMT_HDR_SIZE;
	if (dxpu_mgmt_is_signed(m)) {
		if (blen < DXPU_MGMT_AUTH_SIZE)
			return DXPU_MGMT_ERR_LENGTH_MISMATCH;
		blen -= DXPU_MGMT_AUTH_SIZE;
		auth_read(&buf[DXPU_MGMT_HDR_SIZE + blen], &m->auth);
	}
	if (m->body_length != blen)
		return DXPU_MGMT_ERR_LENGTH_MISMATCH;
	body = &buf[DXPU_MGMT_HDR_SIZE];
	if (has_report(m))
		return decode_report(body, blen, m);
	if (has_inventory(m))
		return decode_inventory(body, blen, m);
	if (has_dma_list(m))
		return decode_dma_list(body, blen, m);
	if (has_screenshot(m))
		return decode_screenshot(body, blen, m);
	if (has_fw_report(m)) {
		if (blen != DXPU_MGMT_FW_REPORT_SIZE)
			return DXPU_MGMT_ERR_BODY_SIZE;
		return dxpu_mgmt_fw_report_read(body, &m->body.fw_report);
	}
	if (dxpu_mgmt_is_response(m))
		return blen == 0 ? DXPU_MGMT_ERR_OK : DXPU_MGMT_ERR_BODY_SIZE;
	return decode_request(body, blen, m);
}

/* ---- encoder ---- */

static void put_header(uint8_t *buf, const struct dxpu_mgmt_msg *m, size_t body_len)
{
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_MAGIC], DXPU_MGMT_MAGIC);
	buf[DXPU_MGMT_OFF_VERSION] = DXPU_MGMT_VERSION;
	buf[DXPU_MGMT_OFF_TYPE] = m->type;
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_FLAGS], m->flags);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_REQUEST_ID], m->request_id);
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_BODY_LENGTH], (uint16_t)body_len);
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_STATUS], m->status);
}

static void put_request_body(uint8_t *b, const struct dxpu_mgmt_msg *m)
{
	switch (m->type) {
	case DXPU_MGMT_ASSIGN:
		dxpu_put_be16(&b[0], m->body.assign.device);
		dxpu_put_be16(&b[2], m->body.assign.host_bdf);
		put_be64(&b[8], m->body.assign.host_node_id);
		break;
	case DXPU_MGMT_RELEASE:
	case DXPU_MGMT_DMA_REVOKE_ALL:
	case DXPU_MGMT_DMA_LIST:
		dxpu_put_be16(&b[0], m->body.release.device);
		break;
	case DXPU_MGMT_DMA_GRANT:
		dxpu_put_be16(&b[0], m->body.dma_grant.device);
		put_be64(&b[8], m->body.dma_grant.device_base);
		put_be64(&b[16], m->body.dma_grant.host_base);
		put_be64(&b[24], m->body.dma_grant.size);
		break;
	case DXPU_MGMT_FW_BEGIN:
		dxpu_put_be32(&b[0], m->body.fw_begin.flags);
		memcpy(&b[8], m->body.fw_begin.header, DXPU_MGMT_FW_IMAGE_HEADER_SIZE);
		break;
	case DXPU_MGMT_FW_CHUNK:
		put_be64(&b[0], m->body.fw_chunk.offset);
		dxpu_put_be32(&b[8], m->body.fw_chunk.crc);
		memcpy(&b[DXPU_MGMT_FW_CHUNK_FIXED_SIZE], m->body.fw_chunk.data,
		       m->body.fw_chunk.length);
		break;
	case DXPU_MGMT_HOST_KEY_SET:
		put_be64(&b[0], m->body.host_key.node_id);
		memcpy(&b[8], m->body.host_key.public_key, DXPU_MGMT_FABRIC_KEY_SIZE);
		break;
	case DXPU_MGMT_HOST_KEY_REMOVE:
		put_be64(&b[0], m->body.host_key.node_id);
		break;
	case DXPU_MGMT_SCREENSHOT:
		dxpu_put_be16(&b[0], m->body.screenshot_request.device);
		dxpu_put_be32(&b[4], m->body.screenshot_request.offset);
		break;
	default:
		break;
	}
}

/* The body size of a firmware request to encode, or why it cannot be encoded. */
static enum dxpu_mgmt_err fw_request_body_size(const struct dxpu_mgmt_msg *m, size_t *body_len)
{
	const struct dxpu_mgmt_fw_chunk *c = &m->body.fw_chunk;

	if (m->type == DXPU_MGMT_FW_BEGIN) {
		if (!m->body.fw_begin.header)
			return DXPU_MGMT_ERR_BODY_SIZE;
		if (m->body.fw_begin.flags & ~DXPU_MGMT_FW_F_ALL)
			return DXPU_MGMT_ERR_RESERVED;
	}
	if (m->type != DXPU_MGMT_FW_CHUNK) {
		*body_len = request_body_size(m->type);
		return DXPU_MGMT_ERR_OK;
	}
	if (c->length > DXPU_MGMT_FW_CHUNK_MAX_DATA)
		return DXPU_MGMT_ERR_TOO_LARGE;
	if (!c->length || !c->data)
		return DXPU_MGMT_ERR_BODY_SIZE;
	*body_len = DXPU_MGMT_FW_CHUNK_FIXED_SIZE + c->length;
	return DXPU_MGMT_ERR_OK;
}

/* The fixed part of an INVENTORY body, with or without the bridge's key. */
static size_t inventory_fixed_size(bool has_fabric_key)
{
	return DXPU_MGMT_INVENTORY_FIXED_SIZE + (has_fabric_key ? DXPU_MGMT_FABRIC_KEY_SIZE : 0);
}

static void put_inventory_fixed(uint8_t *b, uint64_t node_id, size_t n, const uint8_t *fabric_key)
{
	memset(b, 0, inventory_fixed_size(fabric_key != NULL));
	put_be64(&b[0], node_id);
	dxpu_put_be16(&b[8], (uint16_t)n);
	if (fabric_key) {
		dxpu_put_be16(&b[10], DXPU_MGMT_INVENTORY_F_FABRIC_KEY);
		memcpy(&b[DXPU_MGMT_INVENTORY_FIXED_SIZE], fabric_key, DXPU_MGMT_FABRIC_KEY_SIZE);
	}
}

/* Header checks and the body size of *m, for the encoder. */
static enum dxpu_mgmt_err encoded_body_size(const struct dxpu_mgmt_msg *m, size_t *body_len)
{
	enum dxpu_mgmt_err err = check_header(m);
	const struct dxpu_mgmt_status_report *r = &m->body.status_report;
	const struct dxpu_mgmt_inventory *inv = &m->body.inventory;

	*body_len = 0;
	if (err)
		return err;
	if (has_report(m)) {
		if (r->device_count > DXPU_MGMT_STATUS_MAX_DEVICES)
			return DXPU_MGMT_ERR_TOO_LARGE;
		*body_len = DXPU_MGMT_STATUS_FIXED_SIZE +
			    (size_t)r->device_count * DXPU_MGMT_STATUS_ENTRY_SIZE;
	} else if (has_inventory(m)) {
		if (inv->device_count > DXPU_MGMT_INVENTORY_MAX_DEVICES)
			return DXPU_MGMT_ERR_TOO_LARGE;
		*body_len = inventory_fixed_size(inv->has_fabric_key) +
			    (size_t)inv->device_count * DXPU_MGMT_INVENTORY_ENTRY_SIZE;
	} else if (has_dma_list(m)) {
		if (m->body.dma_list.window_count > DXPU_MGMT_DMA_LIST_MAX_WINDOWS)
			return DXPU_MGMT_ERR_TOO_LARGE;
		*body_len = DXPU_MGMT_DMA_LIST_FIXED_SIZE +
			    (size_t)m->body.dma_list.window_count * DXPU_MGMT_DMA_WINDOW_SIZE;
	} else if (has_screenshot(m)) {
		err = check_screenshot(&m->body.screenshot);
		if (err)
			return err;
		if (m->body.screenshot.data_len && !m->body.screenshot.data)
			return DXPU_MGMT_ERR_BAD_ENTRY;
		*body_len = DXPU_MGMT_SCREENSHOT_FIXED_SIZE + m->body.screenshot.data_len;
	} else if (has_fw_report(m)) {
		err = check_fw_report(&m->body.fw_report);
		if (err)
			return err;
		*body_len = DXPU_MGMT_FW_REPORT_SIZE;
	} else if (!dxpu_mgmt_is_response(m)) {
		return fw_request_body_size(m, body_len);
	}
	return DXPU_MGMT_ERR_OK;
}

enum dxpu_mgmt_err dxpu_mgmt_encode(const struct dxpu_mgmt_msg *m, uint8_t *buf, size_t cap,
				    size_t *len)
{
	const struct dxpu_mgmt_status_report *r = &m->body.status_report;
	const struct dxpu_mgmt_inventory *inv = &m->body.inventory;
	size_t body_len = 0, entries_len, auth_len;
	enum dxpu_mgmt_err err = encoded_body_size(m, &body_len);
	uint8_t *b;

	*len = 0;
	if (err)
		return err;
	if (has_report(m) && r->device_count) {
		if (!r->entries)
			return DXPU_MGMT_ERR_BAD_ENTRY;
		err = check_entries(r->entries, r->device_count);
		if (err)
			return err;
	}
	if (has_inventory(m) && inv->device_count) {
		if (!inv->entries)
			return DXPU_MGMT_ERR_BAD_ENTRY;
		err = check_inventory_entries(inv->entries, inv->device_count);
		if (err)
			return err;
	}
	if (has_dma_list(m) && m->body.dma_list.window_count) {
		if (!m->body.dma_list.windows)
			return DXPU_MGMT_ERR_BAD_ENTRY;
		err = check_dma_windows(m->body.dma_list.windows, m->body.dma_list.window_count);
		if (err)
			return err;
	}
	auth_len = dxpu_mgmt_is_signed(m) ? DXPU_MGMT_AUTH_SIZE : 0;
	if (DXPU_MGMT_HDR_SIZE + body_len + auth_len > DXPU_MGMT_MAX_MSG)
		return DXPU_MGMT_ERR_TOO_LARGE;
	if (cap < DXPU_MGMT_HDR_SIZE + body_len + auth_len)
		return DXPU_MGMT_ERR_NO_SPACE;
	put_header(buf, m, body_len);
	b = &buf[DXPU_MGMT_HDR_SIZE];
	memset(b, 0, body_len);
	if (has_report(m)) {
		entries_len = body_len - DXPU_MGMT_STATUS_FIXED_SIZE;
		dxpu_put_be16(&b[0], r->device_count);
		dxpu_put_be16(&b[2], r->host_count);
		if (entries_len)
			memmove(&b[DXPU_MGMT_STATUS_FIXED_SIZE], r->entries, entries_len);
	} else if (has_inventory(m)) {
		put_inventory_fixed(b, inv->node_id, inv->device_count,
				    inv->has_fabric_key ? inv->fabric_key : NULL);
		entries_len = body_len - inventory_fixed_size(inv->has_fabric_key);
		if (entries_len)
			memmove(&b[inventory_fixed_size(inv->has_fabric_key)], inv->entries,
				entries_len);
	} else if (has_dma_list(m)) {
		entries_len = body_len - DXPU_MGMT_DMA_LIST_FIXED_SIZE;
		dxpu_put_be16(&b[0], m->body.dma_list.device);
		dxpu_put_be16(&b[2], m->body.dma_list.window_count);
		if (entries_len)
			memmove(&b[DXPU_MGMT_DMA_LIST_FIXED_SIZE], m->body.dma_list.windows,
				entries_len);
	} else if (has_screenshot(m)) {
		dxpu_put_be16(&b[0], m->body.screenshot.device);
		dxpu_put_be32(&b[4], m->body.screenshot.total);
		dxpu_put_be32(&b[8], m->body.screenshot.offset);
		dxpu_put_be32(&b[12], m->body.screenshot.frame);
		if (m->body.screenshot.data_len)
			memmove(&b[DXPU_MGMT_SCREENSHOT_FIXED_SIZE], m->body.screenshot.data,
				m->body.screenshot.data_len);
	} else if (has_fw_report(m)) {
		dxpu_mgmt_fw_report_write(b, &m->body.fw_report);
	} else if (!dxpu_mgmt_is_response(m)) {
		put_request_body(b, m);
	}
	if (auth_len)
		auth_write(&b[body_len], &m->auth);
	*len = DXPU_MGMT_HDR_SIZE + body_len + auth_len;
	return DXPU_MGMT_ERR_OK;
}

void dxpu_mgmt_status_entry_write(uint8_t *out, const struct dxpu_mgmt_device_entry *e)
{
	dxpu_put_be16(&out[0], e->device);
	dxpu_put_be16(&out[2], e->box_bdf);
	dxpu_put_be16(&out[4], e->host_bdf);
	out[6] = e->state;
	out[7] = 0;
	put_be64(&out[8], e->owner);
}

bool dxpu_mgmt_status_entry(const struct dxpu_mgmt_status_report *r, size_t i,
			    struct dxpu_mgmt_device_entry *e)
{
	if (i >= r->device_count)
		return false;
	entry_read(&r->entries[i * DXPU_MGMT_STATUS_ENTRY_SIZE], e);
	return true;
}

enum dxpu_mgmt_err dxpu_mgmt_encode_status_report(uint32_t request_id, uint16_t host_count,
						  const struct dxpu_mgmt_device_entry *entries,
						  size_t n, uint8_t *buf, size_t cap, size_t *len)
{
	size_t i, total;
	enum dxpu_mgmt_err err;
	uint8_t *b;

	*len = 0;
	if (n > DXPU_MGMT_STATUS_MAX_DEVICES)
		return DXPU_MGMT_ERR_TOO_LARGE;
	for (i = 0; i < n; i++) {
		err = check_entry(&entries[i]);
		if (err)
			return err;
	}
	total = DXPU_MGMT_HDR_SIZE + DXPU_MGMT_STATUS_FIXED_SIZE + n * DXPU_MGMT_STATUS_ENTRY_SIZE;
	if (cap < total)
		return DXPU_MGMT_ERR_NO_SPACE;
	memset(buf, 0, DXPU_MGMT_HDR_SIZE + DXPU_MGMT_STATUS_FIXED_SIZE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_MAGIC], DXPU_MGMT_MAGIC);
	buf[DXPU_MGMT_OFF_VERSION] = DXPU_MGMT_VERSION;
	buf[DXPU_MGMT_OFF_TYPE] = DXPU_MGMT_STATUS;
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_FLAGS], DXPU_MGMT_F_RESPONSE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_REQUEST_ID], request_id);
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_BODY_LENGTH], (uint16_t)(total - DXPU_MGMT_HDR_SIZE));
	b = &buf[DXPU_MGMT_HDR_SIZE];
	dxpu_put_be16(&b[0], (uint16_t)n);
	dxpu_put_be16(&b[2], host_count);
	b += DXPU_MGMT_STATUS_FIXED_SIZE;
	for (i = 0; i < n; i++, b += DXPU_MGMT_STATUS_ENTRY_SIZE)
		dxpu_mgmt_status_entry_write(b, &entries[i]);
	*len = total;
	return DXPU_MGMT_ERR_OK;
}

void dxpu_mgmt_inventory_entry_write(uint8_t *out, const struct dxpu_mgmt_inventory_device *e)
{
	size_t n = profile_name_len(e->profile);

	dxpu_put_be16(&out[0], e->device);
	dxpu_put_be16(&out[2], e->box_bdf);
	dxpu_put_be16(&out[4], e->vendor_id);
	dxpu_put_be16(&out[6], e->device_id);
	put_be64(&out[8], e->memory_bytes);
	memset(&out[16], 0, DXPU_MGMT_PROFILE_NAME_SIZE);
	memcpy(&out[16], e->profile, n);
}

bool dxpu_mgmt_inventory_entry(const struct dxpu_mgmt_inventory *r, size_t i,
			       struct dxpu_mgmt_inventory_device *e)
{
	if (i >= r->device_count)
		return false;
	inventory_entry_read(&r->entries[i * DXPU_MGMT_INVENTORY_ENTRY_SIZE], e);
	return true;
}

enum dxpu_mgmt_err dxpu_mgmt_encode_inventory(uint32_t request_id, uint64_t node_id,
					      const uint8_t *fabric_key,
					      const struct dxpu_mgmt_inventory_device *entries,
					      size_t n, uint8_t *buf, size_t cap, size_t *len)
{
	size_t i, total, fixed = inventory_fixed_size(fabric_key != NULL);
	enum dxpu_mgmt_err err;
	uint8_t *b;

	*len = 0;
	if (n > DXPU_MGMT_INVENTORY_MAX_DEVICES)
		return DXPU_MGMT_ERR_TOO_LARGE;
	for (i = 0; i < n; i++) {
		err = check_inventory_entry(&entries[i]);
		if (err)
			return err;
	}
	total = DXPU_MGMT_HDR_SIZE + fixed + n * DXPU_MGMT_INVENTORY_ENTRY_SIZE;
	if (cap < total)
		return DXPU_MGMT_ERR_NO_SPACE;
	memset(buf, 0, DXPU_MGMT_HDR_SIZE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_MAGIC], DXPU_MGMT_MAGIC);
	buf[DXPU_MGMT_OFF_VERSION] = DXPU_MGMT_VERSION;
	buf[DXPU_MGMT_OFF_TYPE] = DXPU_MGMT_INVENTORY;
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_FLAGS], DXPU_MGMT_F_RESPONSE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_REQUEST_ID], request_id);
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_BODY_LENGTH], (uint16_t)(total - DXPU_MGMT_HDR_SIZE));
	b = &buf[DXPU_MGMT_HDR_SIZE];
	put_inventory_fixed(b, node_id, n, fabric_key);
	b += fixed;
	for (i = 0; i < n; i++, b += DXPU_MGMT_INVENTORY_ENTRY_SIZE)
		dxpu_mgmt_inventory_entry_write(b, &entries[i]);
	*len = total;
	return DXPU_MGMT_ERR_OK;
}

void dxpu_mgmt_dma_window_write(uint8_t *out, const struct dxpu_mgmt_dma_window *w)
{
	put_be64(&out[0], w->device_base);
	put_be64(&out[8], w->host_base);
	put_be64(&out[16], w->size);
}

bool dxpu_mgmt_dma_list_window(const struct dxpu_mgmt_dma_list *l, size_t i,
			       struct dxpu_mgmt_dma_window *w)
{
	if (i >= l->window_count)
		return false;
	dma_window_read(&l->windows[i * DXPU_MGMT_DMA_WINDOW_SIZE], w);
	return true;
}

enum dxpu_mgmt_err dxpu_mgmt_encode_dma_list(uint32_t request_id, uint16_t device,
					     const struct dxpu_mgmt_dma_window *windows, size_t n,
					     uint8_t *buf, size_t cap, size_t *len)
{
	size_t i, total;
	enum dxpu_mgmt_err err;
	uint8_t *b;

	*len = 0;
	if (n > DXPU_MGMT_DMA_LIST_MAX_WINDOWS)
		return DXPU_MGMT_ERR_TOO_LARGE;
	for (i = 0; i < n; i++) {
		err = check_dma_window(&windows[i]);
		if (err)
			return err;
	}
	total = DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_LIST_FIXED_SIZE + n * DXPU_MGMT_DMA_WINDOW_SIZE;
	if (cap < total)
		return DXPU_MGMT_ERR_NO_SPACE;
	memset(buf, 0, DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_LIST_FIXED_SIZE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_MAGIC], DXPU_MGMT_MAGIC);
	buf[DXPU_MGMT_OFF_VERSION] = DXPU_MGMT_VERSION;
	buf[DXPU_MGMT_OFF_TYPE] = DXPU_MGMT_DMA_LIST;
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_FLAGS], DXPU_MGMT_F_RESPONSE);
	dxpu_put_be32(&buf[DXPU_MGMT_OFF_REQUEST_ID], request_id);
	dxpu_put_be16(&buf[DXPU_MGMT_OFF_BODY_LENGTH], (uint16_t)(total - DXPU_MGMT_HDR_SIZE));
	b = &buf[DXPU_MGMT_HDR_SIZE];
	dxpu_put_be16(&b[0], device);
	dxpu_put_be16(&b[2], (uint16_t)n);
	b += DXPU_MGMT_DMA_LIST_FIXED_SIZE;
	for (i = 0; i < n; i++, b += DXPU_MGMT_DMA_WINDOW_SIZE)
		dxpu_mgmt_dma_window_write(b, &windows[i]);
	*len = total;
	return DXPU_MGMT_ERR_OK;
}

enum dxpu_mgmt_status dxpu_mgmt_check_args(const struct dxpu_mgmt_msg *request)
{
	const struct dxpu_mgmt_dma_grant *g = &request->body.dma_grant;
	const struct dxpu_mgmt_fw_chunk *c = &request->body.fw_chunk;

	if (dxpu_mgmt_is_response(request))
		return DXPU_MGMT_OK; /* only requests have arguments */
	switch (request->type) {
	case DXPU_MGMT_FW_CHUNK:
		if (!range_fits(c->offset, c->length))
			return DXPU_MGMT_BAD_ARGUMENT;
		return dxpu_crc32c(0, c->data, c->length) == c->crc ? DXPU_MGMT_OK
								    : DXPU_MGMT_BAD_CRC;
	case DXPU_MGMT_ASSIGN:
		return request->body.assign.host_node_id ? DXPU_MGMT_OK : DXPU_MGMT_BAD_ARGUMENT;
	case DXPU_MGMT_HOST_KEY_SET:
		if (dxpu_all_zero(request->body.host_key.public_key, DXPU_MGMT_FABRIC_KEY_SIZE))
			return DXPU_MGMT_BAD_ARGUMENT;
		return request->body.host_key.node_id ? DXPU_MGMT_OK : DXPU_MGMT_BAD_ARGUMENT;
	case DXPU_MGMT_HOST_KEY_REMOVE:
		return request->body.host_key.node_id ? DXPU_MGMT_OK : DXPU_MGMT_BAD_ARGUMENT;
	case DXPU_MGMT_DMA_GRANT:
		if (!g->size || !range_below_limit(g->device_base, g->size) ||
		    !range_below_limit(g->host_base, g->size))
			return DXPU_MGMT_BAD_ARGUMENT;
		return DXPU_MGMT_OK;
	default:
		return DXPU_MGMT_OK;
	}
}

bool dxpu_mgmt_error_reply(enum dxpu_mgmt_err err, const struct dxpu_mgmt_msg *m,
			   enum dxpu_mgmt_status *status)
{
	switch (err) {
	case DXPU_MGMT_ERR_OK:
	case DXPU_MGMT_ERR_SHORT:
	case DXPU_MGMT_ERR_BAD_MAGIC:
	case DXPU_MGMT_ERR_NO_SPACE:
		return false;
	case DXPU_MGMT_ERR_BAD_VERSION:
		*status = DXPU_MGMT_UNSUPPORTED_VERSION;
		break;
	case DXPU_MGMT_ERR_UNKNOWN_TYPE:
		*status = DXPU_MGMT_UNKNOWN_TYPE;
		break;
	default:
		*status = DXPU_MGMT_MALFORMED;
		break;
	}
	return !dxpu_mgmt_is_response(m);
}

const char *dxpu_mgmt_type_name(uint8_t type)
{
	static const char *const names[DXPU_MGMT_TYPE_MAX + 1] = {
		[0] = "unknown",
		[DXPU_MGMT_ASSIGN] = "assign",
		[DXPU_MGMT_RELEASE] = "release",
		[DXPU_MGMT_DMA_GRANT] = "dma-grant",
		[DXPU_MGMT_DMA_REVOKE_ALL] = "dma-revoke-all",
		[DXPU_MGMT_STATUS] = "status",
		[DXPU_MGMT_INVENTORY] = "inventory",
		[DXPU_MGMT_FW_BEGIN] = "fw-begin",
		[DXPU_MGMT_FW_CHUNK] = "fw-chunk",
		[DXPU_MGMT_FW_STATUS] = "fw-status",
		[DXPU_MGMT_FW_COMMIT] = "fw-commit",
		[DXPU_MGMT_FW_REBOOT] = "fw-reboot",
		[DXPU_MGMT_DMA_LIST] = "dma-list",
		[DXPU_MGMT_HOST_KEY_SET] = "host-key-set",
		[DXPU_MGMT_HOST_KEY_REMOVE] = "host-key-remove",
		[DXPU_MGMT_SCREENSHOT] = "screenshot",
	};

	return type <= DXPU_MGMT_TYPE_MAX ? names[type] : "unknown";
}

const char *dxpu_mgmt_status_name(uint16_t status)
{
	static const char *const names[DXPU_MGMT_STATUS_COUNT] = {
		[DXPU_MGMT_OK] = "ok",
		[DXPU_MGMT_MALFORMED] = "malformed",
		[DXPU_MGMT_UNSUPPORTED_VERSION] = "unsupported-version",
		[DXPU_MGMT_UNKNOWN_TYPE] = "unknown-type",
		[DXPU_MGMT_NO_SUCH_DEVICE] = "no-such-device",
		[DXPU_MGMT_DEVICE_BUSY] = "device-busy",
		[DXPU_MGMT_NOT_ASSIGNED] = "not-assigned",
		[DXPU_MGMT_TABLE_FULL] = "table-full",
		[DXPU_MGMT_OVERLAP] = "overlap",
		[DXPU_MGMT_BAD_ARGUMENT] = "bad-argument",
		[DXPU_MGMT_INTERNAL] = "internal",
		[DXPU_MGMT_FW_UNAVAILABLE] = "fw-unavailable",
		[DXPU_MGMT_IMAGE_UNTRUSTED] = "image-untrusted",
		[DXPU_MGMT_WRONG_HARDWARE] = "wrong-hardware",
		[DXPU_MGMT_DOWNGRADE] = "downgrade",
		[DXPU_MGMT_IMAGE_INVALID] = "image-invalid",
		[DXPU_MGMT_NO_TRANSFER] = "no-transfer",
		[DXPU_MGMT_OUT_OF_ORDER] = "out-of-order",
		[DXPU_MGMT_BAD_CRC] = "bad-crc",
		[DXPU_MGMT_INCOMPLETE] = "incomplete",
		[DXPU_MGMT_FLASH_ERROR] = "flash-error",
		[DXPU_MGMT_TRIAL_RUNNING] = "trial-running",
		[DXPU_MGMT_UNAUTHENTICATED] = "unauthenticated",
		[DXPU_MGMT_STALE_EPOCH] = "stale-epoch",
		[DXPU_MGMT_REPLAYED] = "replayed",
		[DXPU_MGMT_QUARANTINED] = "quarantined",
		[DXPU_MGMT_NO_IDENTITY] = "no-identity",
		[DXPU_MGMT_KEY_IN_USE] = "key-in-use",
		[DXPU_MGMT_NO_DISPLAY] = "no-display",
	};

	return status < DXPU_MGMT_STATUS_COUNT ? names[status] : "unknown";
}

const char *dxpu_mgmt_err_name(enum dxpu_mgmt_err err)
{
	static const char *const names[DXPU_MGMT_ERR_COUNT] = {
		[DXPU_MGMT_ERR_OK] = "ok",
		[DXPU_MGMT_ERR_SHORT] = "short",
		[DXPU_MGMT_ERR_BAD_MAGIC] = "bad-magic",
		[DXPU_MGMT_ERR_BAD_VERSION] = "bad-version",
		[DXPU_MGMT_ERR_RESERVED] = "reserved",
		[DXPU_MGMT_ERR_REQUEST_STATUS] = "request-status",
		[DXPU_MGMT_ERR_BAD_STATUS] = "bad-status",
		[DXPU_MGMT_ERR_UNKNOWN_TYPE] = "unknown-type",
		[DXPU_MGMT_ERR_TOO_LARGE] = "too-large",
		[DXPU_MGMT_ERR_LENGTH_MISMATCH] = "length-mismatch",
		[DXPU_MGMT_ERR_BODY_SIZE] = "body-size",
		[DXPU_MGMT_ERR_BAD_ENTRY] = "bad-entry",
		[DXPU_MGMT_ERR_NO_SPACE] = "no-space",
	};

	return (unsigned int)err < DXPU_MGMT_ERR_COUNT ? names[err] : "unknown";
}

const char *dxpu_mgmt_device_state_name(uint8_t state)
{
	switch (state) {
	case DXPU_MGMT_DEV_FREE:
		return "free";
	case DXPU_MGMT_DEV_ASSIGNED:
		return "assigned";
	case DXPU_MGMT_DEV_SCRUBBING:
		return "scrubbing";
	case DXPU_MGMT_DEV_QUARANTINED:
		return "quarantined";
	default:
		return "unknown";
	}
}

const char *dxpu_mgmt_fw_transfer_name(uint8_t transfer)
{
	switch (transfer) {
	case DXPU_MGMT_FW_IDLE:
		return "idle";
	case DXPU_MGMT_FW_RECEIVING:
		return "receiving";
	case DXPU_MGMT_FW_COMMITTED:
		return "committed";
	default:
		return "unknown";
	}
}

const char *dxpu_mgmt_fw_slot_state_name(uint8_t state)
{
	switch (state) {
	case DXPU_MGMT_FW_SLOT_EMPTY:
		return "empty";
	case DXPU_MGMT_FW_SLOT_WRITTEN:
		return "written";
	case DXPU_MGMT_FW_SLOT_GOOD:
		return "good";
	case DXPU_MGMT_FW_SLOT_BAD:
		return "bad";
	default:
		return "unknown";
	}
}
