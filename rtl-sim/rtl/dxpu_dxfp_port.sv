// dxpu_dxfp_port - one DxFP session's data path in hardware (docs/protocol.md 4.5, docs/rtl.md):
// dxpu_dxfp_decap, dxpu_replay_buf and dxpu_dxfp_encap chained, with the session's
// acknowledgement, NAK, keepalive and retransmission timers that lib/core's dxfp_session runs
// around them, and the sender's credit check. What the firmware keeps: the handshake (HELLO,
// WELCOME, CLOSE), session IDs and epochs on receive, link-down, and the receive credits
// (cfg_credits is what it advertises as its buffers free; a frame whose new TLPs pass it is
// dropped, credit-violation, as lib/core does).
//
//   frames in ──> dxpu_dxfp_decap ──> TLPs delivered (m_tlp_*, with their sequence numbers)
//                   │ peer's ack / NAK ─────────> dxpu_replay_buf (free / replay)
//                   │ our cumulative ack (m_ack) ──> cfg_ack ─┐          │
//                   │ NAK request ─> timers (below) ─ flags ─>┤          │ seq_load
//   TLPs to send (s_tlp_*) ──────────────────> dxpu_replay_buf ──> dxpu_dxfp_encap ──> frames out
//
// start (a pulse, once the firmware's handshake is done) begins a session: the first sequence
// number this end sends (cfg_tx_seq) and the one it expects (cfg_rx_seq); the counters are not
// reset. The cfg_* session values are held while the session runs. From reset to start the port
// sends nothing: no timer runs a frame out.
//
// Frames out (lib/core's rules, dxfp_session.c):
//   - every frame carries the cumulative acknowledgement (the decapsulator's m_ack: TLPs
//     delivered in order) and cfg_credits;
//   - TLPs go into frames as they come out of the replay buffer; the open frame closes when the
//     next TLP does not fit, or when no TLP follows (flush: nothing waits);
//   - a standalone acknowledgement (a DATA frame with only the CREDIT record) when a frame the
//     peer sent asked for one (ACK_REQ), after a duplicate, when a quarter of the peer's replay
//     window (cfg_peer_window) arrived unacknowledged, and cfg_ack_delay after data arrived
//     unacknowledged if no frame went out meanwhile;
//   - a NAK (the NAK flag, its Acknowledgement the expected number) when the decapsulator finds
//     a gap, sent once the TLPs before the gap are delivered (so its Acknowledgement names the
//     gap), dropped if the gap fills first; the same gap is NAKed again only one RTO later;
//   - a keepalive (ACK_REQ, no TLP) when nothing went out for cfg_keepalive.
// Retransmission timer: runs while TLPs are sent and not acknowledged; restarted (and the RTO
// back to cfg_rto) when the acknowledgement advances; on expiry the replay buffer replays from
// the oldest and the RTO doubles, up to cfg_max_rto. (lib/core estimates the RTO from round
// trips, RFC 6298; here the firmware programs it.) Not done: ACK_REQ on a replay's last frame
// (the peer's delayed acknowledgement answers it cfg_ack_delay later instead).
//
// Credits (docs/protocol.md 4.6): a TLP to send is taken only when its class's header and data
// credit, after counting it, stay within the peer's limits (lib/core's dxfp_tx_credits_allow):
// the limits start at what the peer's handshake advertised (cfg_peer_credits, loaded by start)
// and follow each CREDIT record the peer sends (a limit not ahead of the known one changes
// nothing). A sender refused for credit with nothing in flight sends a credit probe (ACK_REQ,
// answered at once with the peer's limits) every RTO while refused.
//
// A sealed session (cfg_sealed, docs/protocol.md 4.12: the firmware's handshake was a Noise IK
// one and gave the transport keys): every frame out is sealed (dxpu_dxfp_seal, after the
// encapsulator, which builds into cfg_max_frame - 20 bytes: the sealed frame is 20 bytes longer)
// under cfg_tx_key with a counter per frame from cfg_tx_counter (a retransmission is a new frame,
// a new counter; m_tx_counter is the next one, for the firmware's own sealed CLOSE); every frame
// in is checked and opened (dxpu_dxfp_open, before the decapsulator: replayed frames dropped
// before any cryptography, the tag checked before a TLP of the frame leaves, a bad tag dropped
// and takes no counter); a DATA frame in the clear is dropped (unsealed). Keys and counter are
// loaded by start: the firmware need not hold them on the inputs. A plaintext session
// (cfg_sealed low) goes round both at full width, as before.
//
// `now` and every time value are in one unit (lib/core's: ns; a cycle count works as well).
`resetall
`default_nettype none

module dxpu_dxfp_port
  import dxpu_tlp_pkg::*;
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH  = 64,
    parameter int KEEP_WIDTH  = DATA_WIDTH / 32,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int MAX_FRAME   = DXFP_MAX_FRAME,
    parameter int WINDOW      = 256,   // the replay window (TLPs): what the handshake announced
    parameter int RING_BYTES  = 65536  // the replay buffer's bytes
) (
    input wire logic        clk,
    input wire logic        rst,
    input wire logic [63:0] now,

    // The session, as the firmware's handshake left it
    input wire logic         start,
    input wire logic [ 31:0] cfg_tx_seq,
    input wire logic [ 31:0] cfg_rx_seq,
    input wire logic [ 31:0] cfg_dst_session,
    input wire logic [ 31:0] cfg_src_session,
    input wire logic [ 31:0] cfg_dst_epoch,
    input wire logic [ 31:0] cfg_src_epoch,
    input wire logic [ 13:0] cfg_max_frame,
    input wire logic [ 31:0] cfg_peer_window,
    input wire logic [191:0] cfg_credits,
    input wire logic [191:0] cfg_peer_credits,  // the peer's limits from the handshake
    input wire logic [ 63:0] cfg_rto,
    input wire logic [ 63:0] cfg_max_rto,
    input wire logic [ 63:0] cfg_ack_delay,
    input wire logic [ 63:0] cfg_keepalive,
    // A sealed session: the transport keys (byte 0 in the top bits) and the first counter to
    // seal with, loaded by start
    input wire logic         cfg_sealed,
    input wire logic [255:0] cfg_tx_key,
    input wire logic [255:0] cfg_rx_key,
    input wire logic [ 63:0] cfg_tx_counter,

    // TLPs to send, header beside payload (dxpu_replay_buf's input)
    input  wire logic [             127:0] s_tlp_hdr,
    input  wire logic [TLP_LEN_WIDTH-1:0]  s_tlp_len,
    input  wire logic [  DATA_WIDTH-1:0]   s_tlp_data,
    input  wire logic [  KEEP_WIDTH-1:0]   s_tlp_keep,
    input  wire logic                      s_tlp_sop,
    input  wire logic                      s_tlp_eop,
    input  wire logic                      s_tlp_valid,
    output wire logic                      s_tlp_ready,
    // The TLP offered (its first beat) waits for its class's credit: a sender with TLPs of other
    // classes may withdraw it and offer one of those (PCIe ordering lets them pass).
    output wire logic                      s_tlp_no_credit,

    // TLPs delivered, in order (dxpu_dxfp_decap's output)
    output wire logic [             127:0] m_tlp_hdr,
    output wire logic [TLP_LEN_WIDTH-1:0]  m_tlp_len,
    output wire logic [  DATA_WIDTH-1:0]   m_tlp_data,
    output wire logic [  KEEP_WIDTH-1:0]   m_tlp_keep,
    output wire logic [              31:0] m_tlp_seq,
    output wire logic                      m_tlp_sop,
    output wire logic                      m_tlp_eop,
    output wire logic                      m_tlp_valid,
    input  wire logic                      m_tlp_ready,

    // Frames from the peer (any bytes: untrusted)
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,
    input  wire logic                   s_frm_last,
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Frames to the peer
    output wire logic [ DATA_WIDTH-1:0] m_frm_data,
    output wire logic [BYTES_WIDTH-1:0] m_frm_bytes,
    output wire logic                   m_frm_last,
    output wire logic                   m_frm_valid,
    input  wire logic                   m_frm_ready,

    // A frame's verdict (enum dxfp_err, a pulse per frame; the firmware reads non-DATA frames)
    output wire logic       m_verdict_valid,
    output wire logic [2:0] m_verdict,
    output wire logic [7:0] m_verdict_type,

    output wire logic [31:0] m_ack,  // the next sequence number expected from the peer
    output wire logic [31:0] m_una,  // the oldest TLP sent and not acknowledged
    output wire logic [31:0] m_next_seq,  // the number the next TLP to send gets
    output wire logic [63:0] m_tx_counter,  // sealed: the counter the next frame is sealed with
    output wire logic [PORT_COUNTERS*32-1:0] m_counters  // dxpu_dxfp_pkg's PORT_*: i in [32i+31:32i]
);

  // ---- receive: a sealed session's frames opened first ----
  logic [DATA_WIDTH-1:0] o_frm_data;
  logic [BYTES_WIDTH-1:0] o_frm_bytes;
  logic [1:0] o_frm_mark;
  logic o_frm_last, o_frm_valid, o_frm_ready, open_ready;
  logic [31:0] op_cnt[5];  // opened, bad tag, replayed, truncated, bad length
  dxpu_dxfp_open #(
      .DATA_WIDTH(DATA_WIDTH)
  ) u_open (
      .clk(clk),
      .rst(rst),
      .start(start),
      .cfg_key(cfg_rx_key),
      .cfg_max_frame(cfg_max_frame),
      .s_frm_data(s_frm_data),
      .s_frm_bytes(s_frm_bytes),
      .s_frm_last(s_frm_last),
      .s_frm_valid(s_frm_valid && cfg_sealed),
      .s_frm_ready(open_ready),
      .m_frm_data(o_frm_data),
      .m_frm_bytes(o_frm_bytes),
      .m_frm_last(o_frm_last),
      .m_frm_mark(o_frm_mark),
      .m_frm_valid(o_frm_valid),
      .m_frm_ready(o_frm_ready),
      .m_cnt_opened(op_cnt[0]),
      .m_cnt_bad_tag(op_cnt[1]),
      .m_cnt_replayed(op_cnt[2]),
      .m_cnt_truncated(op_cnt[3]),
      .m_cnt_bad_length(op_cnt[4])
  );
  logic decap_ready;
  assign s_frm_ready = cfg_sealed ? open_ready : decap_ready;
  assign o_frm_ready = decap_ready;

  // ---- receive: frames -> TLPs, the peer's acknowledgements ----
  logic peer_ack_valid, nak_valid, nak_rearm;
  logic [31:0] peer_ack, nak_seq, rb_next_seq;
  logic [7:0] peer_flags;
  logic peer_credits_valid;
  logic [191:0] peer_credits;
  logic [31:0] d_cnt[14];

  dxpu_dxfp_decap #(
      .DATA_WIDTH(DATA_WIDTH),
      .MAX_FRAME (MAX_FRAME)
  ) u_decap (
      .clk(clk),
      .rst(rst),
      .s_frm_data(cfg_sealed ? o_frm_data : s_frm_data),
      .s_frm_bytes(cfg_sealed ? o_frm_bytes : s_frm_bytes),
      .s_frm_last(cfg_sealed ? o_frm_last : s_frm_last),
      .s_frm_mark(cfg_sealed ? o_frm_mark : MARK_PLAIN),
      .s_frm_valid(cfg_sealed ? o_frm_valid : s_frm_valid),
      .s_frm_ready(decap_ready),
      .cfg_sealed(cfg_sealed),
      .cfg_max_frame(cfg_max_frame),
      .cfg_peer_window(cfg_peer_window),
      .cfg_tx_next_seq(rb_next_seq),
      .exp_load(start),
      .exp_load_value(cfg_rx_seq),
      .nak_rearm(nak_rearm),
      // What this end advertises is what the peer may send.
      .cfg_rx_limits(cfg_credits),
      .m_verdict_valid(m_verdict_valid),
      .m_verdict(m_verdict),
      .m_verdict_type(m_verdict_type),
      .m_peer_ack_valid(peer_ack_valid),
      .m_peer_ack(peer_ack),
      .m_peer_flags(peer_flags),
      .m_peer_credits_valid(peer_credits_valid),
      .m_peer_credits(peer_credits),
      .m_nak_valid(nak_valid),
      .m_nak_seq(nak_seq),
      .m_ack(m_ack),
      .m_tlp_hdr(m_tlp_hdr),
      .m_tlp_len(m_tlp_len),
      .m_tlp_data(m_tlp_data),
      .m_tlp_keep(m_tlp_keep),
      .m_tlp_seq(m_tlp_seq),
      .m_tlp_sop(m_tlp_sop),
      .m_tlp_eop(m_tlp_eop),
      .m_tlp_valid(m_tlp_valid),
      .m_tlp_ready(m_tlp_ready),
      .m_cnt_ok(d_cnt[0]),
      .m_cnt_truncated(d_cnt[1]),
      .m_cnt_bad_length(d_cnt[2]),
      .m_cnt_bad_crc(d_cnt[3]),
      .m_cnt_bad_version(d_cnt[4]),
      .m_cnt_bad_type(d_cnt[5]),
      .m_cnt_malformed(d_cnt[6]),
      .m_cnt_bad_ack(d_cnt[7]),
      .m_cnt_window(d_cnt[8]),
      .m_cnt_duplicate(d_cnt[9]),
      .m_cnt_gap(d_cnt[10]),
      .m_cnt_delivered(d_cnt[11]),
      .m_cnt_credit(d_cnt[12]),
      .m_cnt_unsealed(d_cnt[13])
  );

  // ---- send: the credit check, TLPs -> replay buffer -> frames ----
  // The peer's limits and what this end used, per class: header credits (TLPs) in
  // [32*(2c+1)+31 -: 32] of the wire order, data credits (16-byte units) after them.
  logic [31:0] lim_hdr_reg[3], lim_data_reg[3], used_hdr_reg[3], used_data_reg[3];
  logic in_tlp_reg;  // the sop of the TLP being taken went in
  kind_t tx_kind;
  // verilator lint_off UNUSEDSIGNAL
  err_t tx_err;  // trusted TLPs: the bridge's own
  // verilator lint_on UNUSEDSIGNAL
  class_t tx_class;
  logic [31:0] tx_units;
  logic credit_ok, credit_gate, rb_ready;
  always_comb begin
    tx_err = fmt_type_kind(s_tlp_hdr[127:125], s_tlp_hdr[124:120], tx_kind);
    tx_class = kind_class(tx_kind);
    tx_units = data_credits(tx_kind, s_tlp_hdr[105:96]);
    credit_ok = !seq_before(lim_hdr_reg[tx_class], used_hdr_reg[tx_class] + 32'd1) &&
                !seq_before(lim_data_reg[tx_class], used_data_reg[tx_class] + tx_units);
    // A TLP's first beat waits for its credit; the rest of a TLP taken follow.
    credit_gate = in_tlp_reg || credit_ok;
  end
  assign s_tlp_ready = rb_ready && credit_gate;
  wire tx_take_sop = s_tlp_valid && s_tlp_ready && !in_tlp_reg;
  wire credit_blocked = s_tlp_valid && !in_tlp_reg && !credit_ok;
  assign s_tlp_no_credit = credit_blocked;

  logic [127:0] r_hdr;
  logic [TLP_LEN_WIDTH-1:0] r_len;
  logic [DATA_WIDTH-1:0] r_data;
  logic [KEEP_WIDTH-1:0] r_keep;
  logic r_sop, r_eop, r_valid, r_ready;
  logic seq_load, seq_load_ready, rto_expire;
  logic [31:0] seq_load_value, sent_end;
  logic [63:0] rto_cur_reg;
  logic [31:0] rb_cnt[6];
  logic [31:0] e_cnt[3];
  logic [15:0] open_tlps;
  // verilator lint_off UNUSEDSIGNAL
  logic [31:0] r_seq, send_ptr, in_flight, enc_next_seq, rb_full_cycles;
  // verilator lint_on UNUSEDSIGNAL

  dxpu_replay_buf #(
      .DATA_WIDTH(DATA_WIDTH),
      .WINDOW(WINDOW),
      .RING_BYTES(RING_BYTES)
  ) u_replay (
      .clk(clk),
      .rst(rst),
      .now(now),
      .cfg_rto(rto_cur_reg),
      .seq_init(start),
      .seq_init_value(cfg_tx_seq),
      .s_tlp_hdr(s_tlp_hdr),
      .s_tlp_len(s_tlp_len),
      .s_tlp_data(s_tlp_data),
      .s_tlp_keep(s_tlp_keep),
      .s_tlp_sop(s_tlp_sop),
      .s_tlp_eop(s_tlp_eop),
      .s_tlp_valid(s_tlp_valid && credit_gate),
      .s_tlp_ready(rb_ready),
      .m_tlp_hdr(r_hdr),
      .m_tlp_len(r_len),
      .m_tlp_data(r_data),
      .m_tlp_keep(r_keep),
      .m_tlp_sop(r_sop),
      .m_tlp_eop(r_eop),
      .m_tlp_seq(r_seq),
      .m_tlp_valid(r_valid),
      .m_tlp_ready(r_ready),
      .m_seq_load(seq_load),
      .m_seq_load_value(seq_load_value),
      .m_seq_load_ready(seq_load_ready),
      // A NAK frame acknowledges what is before its number too: the buffer takes the ack
      // first when both are high.
      .ack_valid(peer_ack_valid),
      .ack_seq(peer_ack),
      .nak_valid(peer_ack_valid && (peer_flags & F_NAK) != 8'd0),
      .nak_seq(peer_ack),
      .rto_expire(rto_expire),
      .m_una(m_una),
      .m_send_ptr(send_ptr),
      .m_sent_end(sent_end),
      .m_next_seq(rb_next_seq),
      .m_in_flight(in_flight),
      .m_cnt_tlps_tx(rb_cnt[0]),
      .m_cnt_tlps_retx(rb_cnt[1]),
      .m_cnt_naks(rb_cnt[2]),
      .m_cnt_naks_ignored(rb_cnt[3]),
      .m_cnt_rto(rb_cnt[4]),
      .m_cnt_bad_ack(rb_cnt[5]),
      .m_cnt_full_cycles(rb_full_cycles)
  );
  assign m_next_seq = rb_next_seq;

  logic send_empty;
  logic [7:0] flags;
  logic [DATA_WIDTH-1:0] e_frm_data;
  logic [BYTES_WIDTH-1:0] e_frm_bytes;
  logic e_frm_last, e_frm_valid, e_frm_ready;

  dxpu_dxfp_encap #(
      .DATA_WIDTH(DATA_WIDTH),
      .MAX_FRAME (MAX_FRAME)
  ) u_encap (
      .clk(clk),
      .rst(rst),
      .s_tlp_hdr(r_hdr),
      .s_tlp_len(r_len),
      .s_tlp_data(r_data),
      .s_tlp_keep(r_keep),
      .s_tlp_sop(r_sop),
      .s_tlp_eop(r_eop),
      .s_tlp_valid(r_valid),
      .s_tlp_ready(r_ready),
      .cfg_dst_session(cfg_dst_session),
      .cfg_src_session(cfg_src_session),
      .cfg_dst_epoch(cfg_dst_epoch),
      .cfg_src_epoch(cfg_src_epoch),
      .cfg_ack(m_ack),
      .cfg_flags(flags),
      .cfg_credits(cfg_credits),
      // A sealed frame is DXFP_SEAL_GROWTH bytes longer than the frame built.
      .cfg_max_frame(cfg_sealed ? cfg_max_frame - 14'(DXFP_SEAL_GROWTH) : cfg_max_frame),
      // Nothing more to put in the open frame now: let it go.
      .flush(!r_valid),
      .send_empty(send_empty),
      .seq_load(seq_load),
      .seq_load_value(seq_load_value),
      .seq_load_ready(seq_load_ready),
      .m_frm_data(e_frm_data),
      .m_frm_bytes(e_frm_bytes),
      .m_frm_last(e_frm_last),
      .m_frm_valid(e_frm_valid),
      .m_frm_ready(e_frm_ready),
      .m_next_seq(enc_next_seq),
      .m_open_tlps(open_tlps),
      .m_cnt_frames(e_cnt[0]),
      .m_cnt_tlps(e_cnt[1]),
      .m_cnt_oversize(e_cnt[2])
  );

  // ---- a sealed session's frames sealed on the way out ----
  logic [DATA_WIDTH-1:0] z_frm_data;
  logic [BYTES_WIDTH-1:0] z_frm_bytes;
  logic z_frm_last, z_frm_valid, seal_ready;
  logic [31:0] frames_sealed;
  dxpu_dxfp_seal #(
      .DATA_WIDTH(DATA_WIDTH)
  ) u_seal (
      .clk(clk),
      .rst(rst),
      .start(start),
      .cfg_key(cfg_tx_key),
      .cfg_counter(cfg_tx_counter),
      .s_frm_data(e_frm_data),
      .s_frm_bytes(e_frm_bytes),
      .s_frm_last(e_frm_last),
      .s_frm_valid(e_frm_valid && cfg_sealed),
      .s_frm_ready(seal_ready),
      .m_frm_data(z_frm_data),
      .m_frm_bytes(z_frm_bytes),
      .m_frm_last(z_frm_last),
      .m_frm_valid(z_frm_valid),
      .m_frm_ready(m_frm_ready && cfg_sealed),
      .m_next_counter(m_tx_counter),
      .m_cnt_frames(frames_sealed)
  );
  assign e_frm_ready = cfg_sealed ? seal_ready : m_frm_ready;
  assign m_frm_data = cfg_sealed ? z_frm_data : e_frm_data;
  assign m_frm_bytes = cfg_sealed ? z_frm_bytes : e_frm_bytes;
  assign m_frm_last = cfg_sealed ? z_frm_last : e_frm_last;
  assign m_frm_valid = cfg_sealed ? z_frm_valid : e_frm_valid;

  // ---- the session's timers ----
  // A frame closed on the last edge (the encapsulator counts it then): it carried the
  // acknowledgement and flags of the cycle before.
  logic [31:0] frames_seen_reg, dup_seen_reg, una_seen_reg;
  logic [31:0] ack_q_reg, acked_reg;  // the ack of the last cycle; the last ack sent
  logic [7:0] flags_q_reg;
  logic nak_pending_reg, ack_now_reg, ka_pending_reg;
  logic [31:0] nak_seq_reg;
  logic ack_timer_on_reg, rto_on_reg, rearm_on_reg, rto_expire_reg, nak_rearm_reg;
  logic [63:0] ack_deadline_reg, ka_deadline_reg, rto_deadline_reg, rearm_deadline_reg;
  logic [31:0] naks_tx_reg, standalone_tx_reg, keepalives_tx_reg, probes_tx_reg;
  logic probe_on_reg;
  logic [63:0] probe_deadline_reg;
  logic [15:0] open_q_reg;  // TLPs in the open frame, the cycle before
  logic running_reg;  // a session runs: from start to reset; before it no timer sends anything

  wire closed = e_cnt[0] != frames_seen_reg;
  wire owed = m_ack != acked_reg;  // TLPs delivered since the last ack sent
  // A NAK goes out once the TLPs before the gap are delivered: its Acknowledgement names it.
  wire nak_ready = nak_pending_reg && m_ack == nak_seq_reg;
  wire ack_due = ack_timer_on_reg && owed && now >= ack_deadline_reg;
  wire quarter = owed && m_ack - acked_reg >= cfg_peer_window >> 2;
  wire in_flight_any = sent_end != m_una;
  wire [63:0] rto_doubled = rto_cur_reg << 1;

  assign send_empty = running_reg && (nak_ready || ack_now_reg || ack_due || ka_pending_reg);
  assign flags = (nak_ready ? F_NAK : 8'd0) | (ka_pending_reg ? F_ACK_REQ : 8'd0);
  assign rto_expire = rto_expire_reg;
  assign nak_rearm = nak_rearm_reg;

  always_ff @(posedge clk) begin
    ack_q_reg <= m_ack;
    flags_q_reg <= flags;
    open_q_reg <= open_tlps;
    frames_seen_reg <= e_cnt[0];
    dup_seen_reg <= d_cnt[9];
    una_seen_reg <= m_una;
    rto_expire_reg <= 1'b0;
    nak_rearm_reg <= 1'b0;

    // What the frame that closed carried is sent.
    if (closed) begin
      acked_reg <= ack_q_reg;
      ack_now_reg <= 1'b0;
      ka_deadline_reg <= now + cfg_keepalive;
      if ((flags_q_reg & F_NAK) != 8'd0) begin
        nak_pending_reg <= 1'b0;
        naks_tx_reg <= naks_tx_reg + 1'b1;
        rearm_on_reg <= 1'b1;
        rearm_deadline_reg <= now + rto_cur_reg;
      end
      if ((flags_q_reg & F_ACK_REQ) != 8'd0) begin
        ka_pending_reg <= 1'b0;
        keepalives_tx_reg <= keepalives_tx_reg + 1'b1;
      end
      if (open_q_reg == 16'd0) standalone_tx_reg <= standalone_tx_reg + 1'b1;
    end

    // Requests for an acknowledgement now.
    if ((peer_ack_valid && (peer_flags & F_ACK_REQ) != 8'd0) || d_cnt[9] != dup_seen_reg || quarter)
      ack_now_reg <= 1'b1;
    if (!owed) ack_timer_on_reg <= 1'b0;
    else if (!ack_timer_on_reg) begin
      ack_timer_on_reg <= 1'b1;
      ack_deadline_reg <= now + cfg_ack_delay;
    end
    if (!closed && !ka_pending_reg && now >= ka_deadline_reg) ka_pending_reg <= 1'b1;

    // NAKs: one per gap, dropped when the gap fills first.
    if (nak_valid) begin
      nak_pending_reg <= 1'b1;
      nak_seq_reg <= nak_seq;
    end else if (nak_pending_reg && seq_before(nak_seq_reg, m_ack)) begin
      nak_pending_reg <= 1'b0;
    end
    if (rearm_on_reg && now >= rearm_deadline_reg) begin
      rearm_on_reg <= 1'b0;
      nak_rearm_reg <= 1'b1;
    end

    // Credits: what this end took, and the peer's newer limits.
    if (s_tlp_valid && s_tlp_ready) in_tlp_reg <= !s_tlp_eop;
    if (tx_take_sop) begin
      used_hdr_reg[tx_class] <= used_hdr_reg[tx_class] + 32'd1;
      used_data_reg[tx_class] <= used_data_reg[tx_class] + tx_units;
    end
    if (peer_credits_valid) begin
      for (int c = 0; c < 3; c++) begin
        if (seq_before(lim_hdr_reg[c], peer_credits[191-64*c-:32]))
          lim_hdr_reg[c] <= peer_credits[191-64*c-:32];
        if (seq_before(lim_data_reg[c], peer_credits[159-64*c-:32]))
          lim_data_reg[c] <= peer_credits[159-64*c-:32];
      end
    end
    // A credit probe every RTO while refused with nothing in flight.
    if (!credit_blocked || in_flight_any) begin
      probe_on_reg <= 1'b0;
    end else if (!probe_on_reg) begin
      probe_on_reg <= 1'b1;
      probe_deadline_reg <= now + rto_cur_reg;
    end else if (now >= probe_deadline_reg) begin
      ka_pending_reg <= 1'b1;
      probes_tx_reg <= probes_tx_reg + 1'b1;
      probe_deadline_reg <= now + rto_cur_reg;
    end

    // Retransmission timer.
    if (m_una != una_seen_reg) begin
      rto_cur_reg <= cfg_rto;
      rto_on_reg <= in_flight_any;
      rto_deadline_reg <= now + cfg_rto;
    end else if (!rto_on_reg && in_flight_any) begin
      rto_on_reg <= 1'b1;
      rto_deadline_reg <= now + rto_cur_reg;
    end else if (rto_on_reg && !in_flight_any) begin
      rto_on_reg <= 1'b0;
    end else if (rto_on_reg && now >= rto_deadline_reg) begin
      rto_expire_reg <= 1'b1;
      rto_cur_reg <= rto_doubled > cfg_max_rto ? cfg_max_rto : rto_doubled;
      rto_deadline_reg <= now + (rto_doubled > cfg_max_rto ? cfg_max_rto : rto_doubled);
    end

    if (rst || start) begin
      running_reg <= start && !rst;
      in_tlp_reg <= 1'b0;
      probe_on_reg <= 1'b0;
      for (int c = 0; c < 3; c++) begin
        lim_hdr_reg[c] <= cfg_peer_credits[191-64*c-:32];
        lim_data_reg[c] <= cfg_peer_credits[159-64*c-:32];
        used_hdr_reg[c] <= '0;
        used_data_reg[c] <= '0;
      end
      acked_reg <= cfg_rx_seq;
      ack_now_reg <= 1'b0;
      ka_pending_reg <= 1'b0;
      ka_deadline_reg <= now + cfg_keepalive;
      nak_pending_reg <= 1'b0;
      ack_timer_on_reg <= 1'b0;
      rearm_on_reg <= 1'b0;
      rto_on_reg <= 1'b0;
      rto_cur_reg <= cfg_rto;
      rto_expire_reg <= 1'b0;
      nak_rearm_reg <= 1'b0;
    end
    if (rst) begin
      probes_tx_reg <= '0;
      naks_tx_reg <= '0;
      standalone_tx_reg <= '0;
      keepalives_tx_reg <= '0;
    end
  end

  // Counters, by dxpu_dxfp_pkg's PORT_* index.
  function automatic int at(input int index);
    return 32 * index;
  endfunction
  assign m_counters[at(PORT_FRAMES_TX)+:32] = e_cnt[0];
  assign m_counters[at(PORT_TLPS_FRAMED)+:32] = e_cnt[1];
  assign m_counters[at(PORT_OVERSIZE)+:32] = e_cnt[2];
  assign m_counters[at(PORT_TLPS_TX)+:32] = rb_cnt[0];
  assign m_counters[at(PORT_TLPS_RETX)+:32] = rb_cnt[1];
  assign m_counters[at(PORT_NAKS_RX)+:32] = rb_cnt[2];
  assign m_counters[at(PORT_NAKS_IGNORED)+:32] = rb_cnt[3];
  assign m_counters[at(PORT_RTO)+:32] = rb_cnt[4];
  assign m_counters[at(PORT_BAD_ACK_RX)+:32] = rb_cnt[5];
  assign m_counters[at(PORT_FRAMES_OK)+:32] = d_cnt[0];
  // Truncated and bad-length: the decapsulator's, and the sealed frames the open stage refused.
  assign m_counters[at(PORT_TRUNCATED)+:32] = d_cnt[1] + op_cnt[3];
  assign m_counters[at(PORT_BAD_LENGTH)+:32] = d_cnt[2] + op_cnt[4];
  assign m_counters[at(PORT_BAD_CRC)+:32] = d_cnt[3];
  assign m_counters[at(PORT_BAD_VERSION)+:32] = d_cnt[4];
  assign m_counters[at(PORT_BAD_TYPE)+:32] = d_cnt[5];
  assign m_counters[at(PORT_MALFORMED)+:32] = d_cnt[6];
  assign m_counters[at(PORT_BAD_ACK)+:32] = d_cnt[7];
  assign m_counters[at(PORT_WINDOW)+:32] = d_cnt[8];
  assign m_counters[at(PORT_DUPLICATE)+:32] = d_cnt[9];
  assign m_counters[at(PORT_GAP)+:32] = d_cnt[10];
  assign m_counters[at(PORT_DELIVERED)+:32] = d_cnt[11];
  assign m_counters[at(PORT_NAKS_TX)+:32] = naks_tx_reg;
  assign m_counters[at(PORT_STANDALONE_TX)+:32] = standalone_tx_reg;
  assign m_counters[at(PORT_KEEPALIVES_TX)+:32] = keepalives_tx_reg;
  assign m_counters[at(PORT_PROBES_TX)+:32] = probes_tx_reg;
  assign m_counters[at(PORT_CREDIT_VIOLATION)+:32] = d_cnt[12];
  assign m_counters[at(PORT_FRAMES_SEALED)+:32] = frames_sealed;
  assign m_counters[at(PORT_FRAMES_OPENED)+:32] = op_cnt[0];
  assign m_counters[at(PORT_BAD_TAG)+:32] = op_cnt[1];
  assign m_counters[at(PORT_REPLAYED)+:32] = op_cnt[2];
  assign m_counters[at(PORT_UNSEALED)+:32] = d_cnt[13];

endmodule

`resetall
