/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * dxfp_session.h - one DxFP session as a sans-IO state machine
 * (docs/protocol.md, 4.4 to 4.8).
 *
 * Time and frames go in; frames to send, TLPs delivered and the next timer
 * deadline come out. The session never allocates, never blocks and never
 * reads a clock: the caller passes "now" (nanoseconds, any monotonic origin)
 * to every call, hands it the memory it needs once (dxfp_session_mem_size()),
 * and drives it like this:
 *
 *	on a received frame:   dxfp_session_receive(s, now, buf, len);
 *	on new TLPs to send:   dxfp_session_send(s, now, &tlp) until it refuses;
 *	then, and when the deadline dxfp_session_next_deadline() passes:
 *	                       while (dxfp_session_poll(s, now, out, cap, &len))
 *	                               transmit(out, len);
 *
 * or, to send without copying TLPs out of the replay buffer, with
 * dxfp_session_poll_pieces() and a scatter-gather transmit (sendmsg).
 *
 * Delivered TLPs and link down are reported through struct dxfp_session_ops
 * callbacks, from inside receive() and poll(). A delivered TLP's payload
 * points into the received frame and is valid only during the callback; the
 * user frees its credit with dxfp_session_release() once it has consumed it.
 *
 * Ordering between classes (a posted TLP may pass a request waiting for
 * credit) is the user's: dxfp_session_send() refuses a TLP without side
 * effects when its class lacks credit, and the user keeps the refused TLP and
 * offers the next class. Everything the session accepts is sent in order.
 */
#ifndef DXPU_CORE_DXFP_SESSION_H
#define DXPU_CORE_DXFP_SESSION_H

#include "dxfp_credit.h"
#include "dxfp_frame.h"
#include "dxfp_handshake.h"
#include "dxfp_rtt.h"
#include "dxfp_seal.h"

DXPU_EXTERN_C_BEGIN

#define DXFP_NS_PER_US 1000ull
#define DXFP_NS_PER_MS 1000000ull
#define DXFP_NO_DEADLINE (~0ull)

enum dxfp_session_role {
	DXFP_ROLE_INITIATOR = 0, /* the host proxy: sends HELLO */
	DXFP_ROLE_RESPONDER = 1, /* the bridge: answers HELLO with WELCOME */
};

enum dxfp_session_state {
	DXFP_STATE_IDLE = 0,	/* initialised, not started */
	DXFP_STATE_CONNECTING,	/* initiator: HELLO sent, waiting for WELCOME */
	DXFP_STATE_ACCEPTING,	/* responder: WELCOME sent, waiting for the first DATA */
	DXFP_STATE_ESTABLISHED, /* TLPs flow */
	DXFP_STATE_DOWN,	/* final: link down reported */
	DXFP_STATE_COUNT
};

/* Why a session went down (the link_down callback's reason). */
enum dxfp_down_reason {
	DXFP_DOWN_NONE = 0,
	DXFP_DOWN_NO_PROGRESS,	     /* nothing acknowledged / heard for link_down_ns */
	DXFP_DOWN_HANDSHAKE_TIMEOUT, /* no WELCOME (or first DATA) within link_down_ns */
	DXFP_DOWN_PEER_CLOSED,	     /* the peer sent CLOSE (peer_close_reason says why) */
	DXFP_DOWN_LOCAL_CLOSE,	     /* dxfp_session_close() */
	DXFP_DOWN_COUNT
};

/* What dxfp_session_send() says. Refusals have no side effects. */
enum dxfp_send_result {
	DXFP_SEND_OK = 0,
	DXFP_SEND_NOT_READY,   /* not established yet */
	DXFP_SEND_DOWN,	       /* the session is down */
	DXFP_SEND_NO_CREDIT,   /* the class has no header or data credit left: try another class */
	DXFP_SEND_REPLAY_FULL, /* replay buffer full (TLPs or bytes) until an ack frees it */
	DXFP_SEND_NP_FULL,     /* non-posted request table full until completions arrive */
	DXFP_SEND_TOO_BIG,     /* the TLP can never fit a frame or the replay buffer */
	DXFP_SEND_INVALID,     /* the TLP does not encode (dxpu_tlp_validate) */
	DXFP_SEND_COUNT
};

/* What dxfp_session_receive() did with a frame: DXFP_RX_OK or the counter it went to. */
enum dxfp_rx_result {
	DXFP_RX_OK = 0,
	DXFP_RX_BAD_CRC,
	DXFP_RX_TRUNCATED,
	DXFP_RX_BAD_LENGTH,
	DXFP_RX_BAD_VERSION,
	DXFP_RX_BAD_TYPE,
	DXFP_RX_MALFORMED,
	DXFP_RX_UNKNOWN_SESSION, /* destination session is not this one */
	DXFP_RX_STALE_EPOCH,	 /* an epoch is not the current one */
	DXFP_RX_UNEXPECTED, /* a frame type this state does not take (e.g. DATA before WELCOME) */
	DXFP_RX_BAD_ACK,    /* acknowledges a sequence number never sent */
	DXFP_RX_WINDOW_VIOLATION, /* TLPs beyond the peer's replay window */
	DXFP_RX_CREDIT_VIOLATION, /* TLPs beyond the credit this end advertised */
	DXFP_RX_DOWN,		  /* the session is down */
	DXFP_RX_BAD_TAG,	  /* a sealed frame whose tag fails (forged, changed, wrong key) */
	DXFP_RX_REPLAYED,	  /* a sealed frame whose counter was taken already or is too old */
	DXFP_RX_UNSEALED,	  /* a DATA or CLOSE in the clear on an authenticated session */
	DXFP_RX_NO_AUTH, /* a HELLO or WELCOME without the handshake an authenticated end needs */
	DXFP_RX_COUNT
};

/*
 * Authentication (docs/protocol.md 4.12): with ops set, the HELLO and WELCOME
 * carry a Noise IK handshake and every frame after them is sealed
 * (dxfp_seal.h); frames in the clear other than the handshake's are dropped.
 * ops NULL: a plaintext session (CRC32C only), as before authentication.
 */
struct dxfp_session_auth {
	const struct dxfp_crypto_ops *ops;
	uint8_t static_secret[DXFP_KEY_SIZE]; /* initiator: this host's long-term key */
	uint8_t peer_public[DXFP_KEY_SIZE];   /* initiator: the bridge's public key */
	/* initiator: the HELLO's timestamp (wall clock, ns) is now + this; it must grow */
	uint64_t wall_clock_offset_ns;
};

/* The largest handshake frame: a HELLO with its handshake records. */
#define DXFP_HS_FRAME_MAX                                                                          \
	(DXFP_HDR_SIZE + 2u * DXFP_REC_HDR_SIZE + DXFP_HELLO_BODY_SIZE + DXFP_CREDIT_BODY_SIZE +   \
	 DXFP_HELLO_AUTH_SIZE + DXFP_CRC_SIZE)

/*
 * Configuration. dxfp_session_config_defaults() fills sensible values for a
 * datacenter fabric; the caller then sets the identity fields.
 */
struct dxfp_session_config {
	enum dxfp_session_role role;
	uint64_t node_id;     /* this endpoint's stable identity (HELLO) */
	uint32_t session_id;  /* this end's session ID, non-zero */
	uint32_t epoch;	      /* this endpoint's epoch, non-zero, random per start */
	uint32_t initial_seq; /* first sequence number this end sends (random is best) */
	uint32_t max_frame;   /* largest frame the link carries, DXFP_MIN_FRAME..DXFP_MAX_FRAME */

	uint32_t replay_window; /* TLPs in flight: power of two, 1..DXFP_MAX_REPLAY_WINDOW */
	/* bytes of TLP records (4-byte header + TLP) the replay buffer holds */
	uint32_t replay_bytes;
	uint32_t max_np; /* non-posted requests awaiting completion, 1..DXFP_MAX_NP */

	/* Receive buffers per class (enum dxpu_tlp_class): TLPs and 16-byte data units. */
	uint32_t rx_hdr_cap[DXFP_CLASSES];
	uint32_t rx_data_cap[DXFP_CLASSES];

	uint64_t ack_delay_ns;	 /* longest wait before a standalone acknowledgement */
	uint64_t keepalive_ns;	 /* idle time before a keepalive */
	uint64_t link_down_ns;	 /* time without progress before link down */
	uint64_t initial_rto_ns; /* RTO before the first RTT sample; also the first HELLO retry */
	uint64_t min_rto_ns;
	uint64_t max_rto_ns;
	uint64_t timer_granularity_ns; /* resolution of the caller's timer (RFC 6298 G) */

	struct dxfp_session_auth auth; /* zeroed by the defaults: plaintext */
};

#define DXFP_MAX_REPLAY_WINDOW (1u << 20)
#define DXFP_MAX_NP (1u << 16)
#define DXFP_MIN_SESSION_FRAME 128u /* room for a CREDIT record and a small TLP */
#define DXFP_MAX_TLP_RECORD (DXFP_REC_HDR_SIZE + DXPU_TLP_MAX_SIZE) /* 4120 bytes */
#define DXFP_MAX_RX_CAP (1u << 30) /* keeps credit counters comparable (4.6) */

/* Every counter of a session; dxfp_session_counter_name() names them in order. */
struct dxfp_session_counters {
	/* frames and TLPs */
	uint64_t frames_tx;
	uint64_t bytes_tx;
	uint64_t frames_rx;
	uint64_t bytes_rx;
	uint64_t tlps_tx;   /* first transmissions */
	uint64_t tlps_retx; /* retransmissions */
	uint64_t tlps_delivered;
	uint64_t acks_tx; /* standalone acknowledgements */
	uint64_t keepalives_tx;
	uint64_t naks_tx;
	uint64_t naks_rx;
	uint64_t rto_expiries;
	uint64_t hellos_tx;
	uint64_t welcomes_tx;
	uint64_t credit_refusals; /* dxfp_session_send() said NO_CREDIT */
	uint64_t unexpected_cpl;  /* completion matching no outstanding request (delivered) */
	uint64_t cookies_rx;	  /* COOKIE frames taken: the HELLO went again with their MAC2 */
	/* drops, one per enum dxfp_rx_result after DXFP_RX_OK (frames) ... */
	uint64_t bad_crc;
	uint64_t truncated;
	uint64_t bad_length;
	uint64_t bad_version;
	uint64_t bad_type;
	uint64_t malformed;
	uint64_t unknown_session;
	uint64_t stale_epoch;
	uint64_t unexpected;
	uint64_t bad_ack;
	uint64_t window_violation;
	uint64_t credit_violation;
	uint64_t rx_down;
	uint64_t bad_tag;
	uint64_t replayed;
	uint64_t unsealed;
	uint64_t no_auth;
	/* ... and per TLP record */
	uint64_t duplicate; /* TLP records before the expected sequence number */
	uint64_t gap;	    /* TLP records after it (dropped; a NAK follows) */
};

#define DXFP_SESSION_COUNTER_COUNT (sizeof(struct dxfp_session_counters) / sizeof(uint64_t))

struct dxfp_session_ops {
	/* A TLP arrived in order. tlp->payload is valid only during the call. */
	void (*deliver)(void *ctx, const struct dxpu_tlp *tlp);
	/*
	 * The session went down (once; it is DXFP_STATE_DOWN during the call).
	 * unanswered: the non-posted requests this end sent that no final
	 * completion answered, headers only (payload NULL), oldest first.
	 */
	void (*link_down)(void *ctx, enum dxfp_down_reason reason,
			  const struct dxpu_tlp *unanswered, size_t n_unanswered);
	/* Optional: the session became established. */
	void (*established)(void *ctx);
};

/* Replay buffer descriptor, one per TLP in flight (internal). */
struct dxfp_replay_desc {
	uint64_t tx_time; /* first transmission, for RTT samples */
	uint32_t off;	  /* its TLP record (record header, encoded TLP) in the byte ring */
	uint16_t len;	  /* encoded TLP bytes (the record is DXFP_REC_HDR_SIZE more) */
	uint8_t retx;	  /* retransmitted: no RTT sample (Karn) */
	uint8_t rsvd;
};

/* Outstanding non-posted request (internal). */
struct dxfp_np_entry {
	uint32_t key; /* (requester ID << 10 | tag) + 1; 0 = empty slot */
	uint32_t order;
	struct dxpu_tlp hdr;
};

/* Sort key of an unanswered request (internal). */
struct dxfp_np_order {
	uint32_t order;
	uint32_t slot;
};

/*
 * The session. Fields are internal: use the functions. Grouped by size (64-bit,
 * then pointers, then 32-bit, then flags) so the struct carries no padding.
 */
struct dxfp_session {
	struct dxfp_session_config cfg;
	/* authentication (cfg.auth.ops set): the handshake until it splits, then its keys */
	struct dxfp_noise hs;
	struct dxfp_noise hs_try; /* initiator: a WELCOME is tried on a copy */
	struct dxfp_noise_keys keys;
	struct dxfp_replay replay;
	struct dxfp_session_ops ops;
	struct dxfp_tx_credits tx_credits;
	struct dxfp_rtt rtt;
	struct dxfp_rx_credits rx_credits;
	struct dxfp_credits advertised; /* limits last sent */
	struct dxfp_session_counters counters;

	/* times (ns), DXFP_NO_DEADLINE when not armed */
	uint64_t peer_node_id;
	uint64_t rto_deadline;	       /* retransmission timer, while TLPs are in flight */
	uint64_t last_tx;	       /* last frame sent */
	uint64_t last_nak_time;	       /* last NAK acted on */
	uint64_t credit_blocked_since; /* a send was refused for credit */
	uint64_t probe_deadline;       /* next credit probe */
	uint64_t ack_deadline;	       /* standalone acknowledgement */
	uint64_t nak_time;	       /* last NAK sent */
	uint64_t started;	       /* connect / accept */
	uint64_t hello_deadline;
	uint64_t hello_interval;
	uint64_t last_progress;
	uint64_t seal_counter; /* the next counter this end seals a frame with */

	void *ctx;
	struct dxfp_replay_desc *desc; /* replay_window entries, indexed by seq mod window */
	uint8_t *ring;		       /* replay_bytes of TLP records, ready to send */
	struct dxfp_np_entry *np;      /* outstanding non-posted requests, np_slots entries */
	struct dxpu_tlp *np_report;    /* max_np entries: the link_down list */
	struct dxfp_np_order *np_sort; /* max_np entries */
	uint8_t *tx_sealed;	       /* authenticated: max_frame bytes, the frame being sealed */
	uint8_t *rx_sealed;	       /* authenticated: max_frame bytes, the frame being opened */

	enum dxfp_session_state state;
	enum dxfp_down_reason down_reason;

	/* negotiated */
	uint32_t max_frame;
	uint32_t peer_session;
	uint32_t peer_epoch;
	uint32_t peer_window;

	/* transmit: sequence numbers [una, send_ptr) sent, [send_ptr, next_seq) waiting */
	uint32_t una;
	uint32_t send_ptr;
	uint32_t next_seq;
	uint32_t replay_end; /* a replay is in progress until send_ptr reaches this */
	uint32_t ring_head;
	uint32_t ring_tail;
	uint32_t ring_count;   /* TLPs in the ring */
	uint32_t last_nak_seq; /* last NAK acted on */

	/* receive */
	uint32_t expected;
	uint32_t rx_unacked_tlps; /* TLPs received since the last frame sent */
	uint32_t nak_seq;

	/* outstanding non-posted requests: open addressing */
	uint32_t np_slots;
	uint32_t np_count;
	uint32_t np_order;

	uint16_t peer_close_reason;
	uint16_t hs_len; /* bytes in hs_frame; 0: not built yet */
	/* authenticated: this end's HELLO (initiator) or WELCOME (responder), sent again as is */
	uint8_t hs_frame[DXFP_HS_FRAME_MAX];
	bool keys_ready; /* authenticated: the handshake split, frames are sealed */
	bool replaying;
	bool nak_acted;
	bool ack_pending;     /* TLPs arrived that no frame has acknowledged */
	bool ack_now;	      /* acknowledge at the next poll */
	bool credit_now;      /* a credit limit moved far enough to announce at once */
	bool probe_now;	      /* send ACK_REQ */
	bool nak_pending;     /* send a NAK */
	bool nak_outstanding; /* a NAK for nak_seq was sent and the gap is still open */
	bool welcome_pending;
	bool close_pending;
};

/* Defaults: 9216-byte frames, 1024-TLP window, 2 MiB replay, 256 NP, 512 TLPs and 1 MiB of
 * receive buffer per class, 50 us ack delay,
 * 1 ms keepalive, 20 ms link down, RTO 1 ms initial, 200 us .. 5 ms.
 */
void dxfp_session_config_defaults(struct dxfp_session_config *cfg);

/*
 * Size the replay buffer from the bandwidth-delay product: twice what a link
 * of bandwidth_bps carries in a round trip (rtt_ns) plus the ack delay, plus
 * two frames; and the TLP window to match for TLPs of avg_tlp_bytes.
 */
void dxfp_session_config_size_replay(struct dxfp_session_config *cfg, uint64_t bandwidth_bps,
				     uint64_t rtt_ns, uint32_t avg_tlp_bytes);

/* 0 when the configuration is valid, else a static sentence saying what is wrong. */
const char *dxfp_session_config_check(const struct dxfp_session_config *cfg);

/* Bytes of memory (8-byte aligned) a session with this configuration needs; 0 if invalid. */
size_t dxfp_session_mem_size(const struct dxfp_session_config *cfg);

/*
 * Set up a session in the caller's memory (mem_size bytes, 8-byte aligned,
 * kept until the session is no longer used). False if cfg is invalid or
 * mem_size too small. The session starts IDLE.
 */
bool dxfp_session_init(struct dxfp_session *s, const struct dxfp_session_config *cfg, void *mem,
		       size_t mem_size, const struct dxfp_session_ops *ops, void *ctx);

/* Initiator: start the handshake (the next poll sends HELLO). */
void dxfp_session_connect(struct dxfp_session *s, uint64_t now);

/*
 * Responder: take a HELLO frame (parsed by dxfp_frame_parse) that opens this
 * session. DXFP_RX_OK: the next poll sends WELCOME. Otherwise the frame is
 * counted and the session stays IDLE (DXFP_RX_BAD_VERSION: answer with
 * dxfp_write_close(..., DXFP_CLOSE_UNSUPPORTED_VERSION)).
 */
enum dxfp_rx_result dxfp_session_accept(struct dxfp_session *s, uint64_t now,
					const struct dxfp_frame *hello);

/*
 * Responder, authenticated: as dxfp_session_accept, for a HELLO whose handshake
 * the caller opened with dxfp_hello_open() (it found hs->rs among its hosts' keys
 * and checked the timestamp). The WELCOME, with the handshake's second message,
 * is built here; hs is wiped. DXFP_RX_UNEXPECTED when the session is not
 * authenticated; a plain dxfp_session_accept() on an authenticated session says
 * DXFP_RX_NO_AUTH.
 */
enum dxfp_rx_result dxfp_session_accept_auth(struct dxfp_session *s, uint64_t now,
					     const struct dxfp_frame *hello, struct dxfp_noise *hs);

/* Read the identity of a HELLO frame (for a responder's demultiplexer). */
bool dxfp_hello_identity(const struct dxfp_frame *f, struct dxfp_hello *hello);

/*
 * A received frame, raw (parsed and checked here; sealed frames opened here) or already parsed
 * by dxfp_frame_parse (which checked every TLP in it: they are not checked again before
 * delivery). A parsed frame is in the clear: an authenticated session takes only HELLO and
 * WELCOME that way, whose bytes must surround f (f->records at DXFP_HDR_SIZE after the start).
 */
enum dxfp_rx_result dxfp_session_receive(struct dxfp_session *s, uint64_t now, const uint8_t *buf,
					 size_t len);
enum dxfp_rx_result dxfp_session_receive_frame(struct dxfp_session *s, uint64_t now,
					       const struct dxfp_frame *f);

/* Whether a TLP of this class, payload and wire size could be sent now (no side effects). */
enum dxfp_send_result dxfp_session_can_send(struct dxfp_session *s, int cls, uint32_t payload_bytes,
					    uint32_t wire_len);

/* Queue a TLP for sending (encoded into the replay buffer at once). */
enum dxfp_send_result dxfp_session_send(struct dxfp_session *s, uint64_t now,
					const struct dxpu_tlp *tlp);

/* The user has consumed a delivered TLP of this class: its receive credit is free. */
void dxfp_session_release(struct dxfp_session *s, int cls, uint32_t payload_bytes);

/*
 * Run the timers due at now, then write the next frame to send into
 * buf[0..cap) (cap >= the session's max_frame, or at least the negotiated
 * one). True and *len set when there is a frame; call again until false.
 */
bool dxfp_session_poll(struct dxfp_session *s, uint64_t now, uint8_t *buf, size_t cap, size_t *len);

/* Enough for a frame header and the largest set of control records. */
#define DXFP_OUT_HEAD_SIZE 128u
/* Pieces of one frame: its head, runs of TLP records in the replay ring, its CRC. */
#define DXFP_OUT_PIECES 8u

/*
 * The next frame to send, in pieces to transmit in order as one datagram
 * (scatter-gather): the head (header and control records) and the CRC live
 * here, the TLP records stay in the session's replay buffer. Valid until the
 * next call into the session.
 */
struct dxfp_frame_out {
	uint8_t head[DXFP_OUT_HEAD_SIZE];
	uint8_t crc[DXFP_CRC_SIZE];
	struct dxfp_piece piece[DXFP_OUT_PIECES];
	size_t npieces;
	size_t len; /* the frame's size: the pieces' lengths added up */
};

/*
 * dxfp_session_poll() without the copy: the next frame of at most cap bytes
 * as pieces in *out. True when there is a frame; call again until false.
 */
bool dxfp_session_poll_pieces(struct dxfp_session *s, uint64_t now, size_t cap,
			      struct dxfp_frame_out *out);

/* When poll() must next be called even if nothing else happens; DXFP_NO_DEADLINE: never. */
uint64_t dxfp_session_next_deadline(const struct dxfp_session *s);

/* Close: the next poll sends CLOSE(reason) once; link_down(LOCAL_CLOSE) is reported now. */
void dxfp_session_close(struct dxfp_session *s, uint64_t now, enum dxfp_close_reason reason);

static inline enum dxfp_session_state dxfp_session_get_state(const struct dxfp_session *s)
{
	return s->state;
}

static inline const struct dxfp_session_counters *
dxfp_session_get_counters(const struct dxfp_session *s)
{
	return &s->counters;
}

/* TLPs sent and not yet acknowledged, and TLPs accepted and not yet sent. */
static inline uint32_t dxfp_session_in_flight(const struct dxfp_session *s)
{
	return s->send_ptr - s->una;
}

static inline uint32_t dxfp_session_queued(const struct dxfp_session *s)
{
	return s->next_seq - s->send_ptr;
}

/*
 * An offloaded data path (docs/protocol.md 4.11): a responder whose DATA frames, once the
 * handshake is done, a hardware port (rtl-sim/rtl/dxpu_dxfp_port.sv) sends and receives. The
 * session keeps the handshake, CLOSE, its receive credits, the outstanding non-posted requests
 * and link-down; its replay buffer, acknowledgements and timers stand idle. Its user feeds it
 * what the port did, and does not call dxfp_session_send(), _receive*() or _poll*() again until
 * the session is DOWN (then a poll sends the CLOSE that is due, if any).
 */

/*
 * The first DATA frame of the session arrived and goes to the port, not here: ACCEPTING ->
 * ESTABLISHED (the established callback runs). False, and nothing changes, in any other state.
 * The port starts from the session's numbers: it sends from next_seq, expects expected.
 */
bool dxfp_session_offload_begin(struct dxfp_session *s, uint64_t now);

/*
 * An authenticated session's port seals and opens its DATA frames itself (docs/protocol.md
 * 4.12): the transport keys and the first counter it seals with. The caller wipes its copy
 * (dxpu_wipe()) once the port holds them.
 */
struct dxfp_offload_keys {
	struct dxfp_cipher send;
	struct dxfp_cipher recv;
	uint64_t send_counter;
};

/* Authenticated, keys split: *k filled. False (and *k untouched) for a plaintext session. */
bool dxfp_session_offload_keys(const struct dxfp_session *s, struct dxfp_offload_keys *k);

/*
 * Authenticated, ACCEPTING: whether the sealed DATA frame in buf[0..len) from the peer opens
 * under the receiving key (key confirmation: only then may the port take the session). buf is
 * not changed; the frame is opened in the session's receive buffer, and its counter taken in
 * the session's window, which after the hand-over sees only the peer's sealed CLOSE.
 */
bool dxfp_session_offload_confirm(struct dxfp_session *s, const uint8_t *buf, size_t len);

/*
 * The port sealed frames under counters below next_counter: the session's own sealed frames
 * (the CLOSE it sends) take counters from there on, so that no counter is used twice.
 */
void dxfp_session_offload_sealed(struct dxfp_session *s, uint64_t next_counter);

/* OK when the port may be offered this TLP: else DOWN, NOT_READY, INVALID or NP_FULL. */
enum dxfp_send_result dxfp_session_offload_admit(const struct dxfp_session *s,
						 const struct dxpu_tlp *tlp);

/* The port took tlp (admitted): a non-posted request is now outstanding. */
void dxfp_session_offload_sent(struct dxfp_session *s, const struct dxpu_tlp *tlp);

/*
 * The port delivered tlp: it takes its receive credit (freed by dxfp_session_release()) and a
 * completion answers its request. False when it passed the credit advertised (the port drops
 * such a frame, so never; counted as credit_violation).
 */
bool dxfp_session_offload_delivered(struct dxfp_session *s, const struct dxpu_tlp *tlp);

/* The limits to advertise (the port's cfg_credits): the receive buffers free. */
void dxfp_session_offload_advert(const struct dxfp_session *s, struct dxfp_credits *limits);

/*
 * The port's transmit side made progress at now: its acknowledgement advanced, or a valid frame
 * arrived with nothing in flight (4.7).
 */
void dxfp_session_offload_progress(struct dxfp_session *s, uint64_t now);

/*
 * Link-down: with no progress for link_down_ns the session goes DOWN (NO_PROGRESS; the next
 * poll tells the peer), as it would itself. Returns the time to check again, or
 * DXFP_NO_DEADLINE once DOWN.
 */
uint64_t dxfp_session_offload_timers(struct dxfp_session *s, uint64_t now);

/*
 * A stateless CLOSE for a frame no session takes (unknown session, version):
 * addressed back to the frame's sender. Returns the frame length, 0 if cap
 * is too small.
 */
size_t dxfp_write_close(uint8_t *buf, size_t cap, const struct dxfp_header *cause,
			uint32_t my_epoch, enum dxfp_close_reason reason);

const char *dxfp_session_state_name(enum dxfp_session_state st);
const char *dxfp_down_reason_name(enum dxfp_down_reason r);
const char *dxfp_send_result_name(enum dxfp_send_result r);
const char *dxfp_rx_result_name(enum dxfp_rx_result r);
/* "frames-tx", "bad-crc", ...: the i-th counter of struct dxfp_session_counters. */
const char *dxfp_session_counter_name(size_t i);

DXPU_EXTERN_C_END

#endif /* DXPU_CORE_DXFP_SESSION_H */
