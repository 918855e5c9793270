// dxpu_dxfp_decap - DxFP frame decapsulation (docs/protocol.md 4.2-4.5, 4.8, docs/rtl.md): a
// received frame in (untrusted: any bytes, any length), a verdict out equal to lib/core's
// dxfp_frame_parse() (enum dxfp_err), and for a good DATA frame the sequence-number rules of
// lib/core's session (dxfp_session.c on_data, deliver_tlps): TLP records delivered in order,
// duplicates counted and dropped, a gap drops the frame's TLPs, counts them and asks for a NAK.
// The frame layout and its numbers: dxpu_dxfp_pkg (include/dxpu/dxfp.h).
//
// Store and forward in two frame buffers (ping-pong), so that receiving a frame overlaps
// delivering the one before. Three stages, each on one frame at a time, frames in order:
//   - receive: the frame is stored in a free buffer (DW-wide, MAX_FRAME bytes; bytes past
//     MAX_FRAME are counted, not stored) while its CRC32C is computed over the bytes before the
//     trailer (dxpu_crc32c);
//   - check: its records are walked as they arrive, one per cycle, each as soon as the DWs it
//     needs are stored: bounds, reserved byte, zero padding, record type against frame type,
//     CREDIT/HELLO/CLOSE/NOISE/MAC1 body lengths, and every TLP record through a dxpu_tlp_classify instance
//     (lib/core's decoder rules, given the TLP's first 16 bytes and its length). Once the frame
//     is in and its records walked, it is decided in parse order: fewer than 36 bytes
//     (truncated), Length (below 36, above cfg_max_frame or 9216, not a multiple of 4), Length
//     beyond the bytes received (truncated), CRC, Version, Type, reserved byte and flags, the
//     records, the record count; and for a DATA frame that parses, its sequence numbers (below);
//   - deliver: the TLP records of a frame with new TLPs go out (header beside payload), while the
//     next frame is received and checked in the other buffer. A bad frame delivers nothing.
// Bytes after Length (Ethernet padding) are ignored. A frame may start in a buffer whose frame is
// still being delivered: it is written behind the delivery (which reads from its current record
// on and moves at least as fast as the input). So the input waits (s_frm_ready low) only when
// both buffers hold a frame not yet decided, or when it catches up with a delivery held up by
// the output.
//
// Session checks done here, for DATA frames that parse: bad-ack (Acknowledgement after
// cfg_tx_next_seq, the next sequence number this end will send: the frame is dropped); the peer's
// Acknowledgement and flags out (m_peer_ack_*, for the replay buffer); window-violation (a gap
// of cfg_peer_window or more, or TLPs reaching more than cfg_peer_window past the expected
// number: dropped); gap (first TLP after the expected number: the frame's TLPs dropped and
// counted; a NAK request for the expected number, once per gap: again only after nak_rearm, the
// retransmission timer's business); duplicates (before the expected number: counted, dropped);
// the rest delivered in order. A frame is decided against the expected number that holds once
// every frame before it is delivered (the previous frame may still be going out); the expected
// number the output shows (m_ack, the cumulative acknowledgement) advances by one per TLP as the
// TLPs go out. Not done here (the firmware's part): session IDs and epochs (unknown-session,
// stale-epoch), session state (unexpected, rx-down), HELLO/WELCOME/CLOSE contents, ACK_REQ and
// the acknowledgement timers. credit-violation (lib/core's deliver_tlps) is checked here: a frame
// whose new TLPs, counted in, pass a class's limits (cfg_rx_limits) delivers nothing. A
// DATA frame's CREDIT record (the peer's limits) goes out with its acknowledgement
// (m_peer_credits), for the sender's credit check. Non-DATA frames get a verdict only.
//
// Input beats: s_frm_bytes bytes from the top of s_frm_data (byte 0 in the top bits); every beat
// but the last (s_frm_last) is full. Beside the last beat, s_frm_mark (dxpu_dxfp_pkg's MARK_*):
// what dxpu_dxfp_open, in front of this module in a sealed session, made of the frame: in the
// clear as it came (MARK_PLAIN: every check above; a plaintext session gives only these),
// opened (MARK_OPENED: its tag passed, so its trailer is no CRC and is not checked), or dropped
// (MARK_DROP: the open stage counted why; the frame is decided at once, unseen: no verdict, no
// counter, nothing delivered). With cfg_sealed a DATA frame that parses in the clear is dropped
// and counted (m_cnt_unsealed), lib/core's unsealed: nothing of it is taken. Output TLPs: header beside payload, as dxpu_tlp_classify's
// input (header with sop, a 3 DW header leaves [31:0] zero; s_tlp_len = the record's body
// length; payload in DATA_WIDTH-bit beats with DW enables), with the record's sequence number.
//
// Timing: a beat in every cycle while a buffer is free; a frame is decided the cycle after its
// last beat when its records are checked by then (they are, unless the last records are tiny);
// its delivery starts the cycle after at its first TLP record and takes a cycle per output beat
// and per skipped record (non-TLP or duplicate). So frames whose TLPs carry payload go through
// at one beat per cycle, never stalling the input. Measured in tb/dxfp_decap_tb.cc.
`resetall
`default_nettype none

module dxpu_dxfp_decap
  import dxpu_tlp_pkg::*;
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH  = 64,
    parameter int KEEP_WIDTH  = DATA_WIDTH / 32,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int MAX_FRAME   = DXFP_MAX_FRAME  // bytes, each buffer's size
) (
    input wire logic clk,
    input wire logic rst,

    // Frames in
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,
    input  wire logic                   s_frm_last,
    input  wire logic [            1:0] s_frm_mark,  // MARK_*, with s_frm_last
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Session values
    input wire logic        cfg_sealed,       // a sealed session: DATA in the clear is dropped
    input wire logic [13:0] cfg_max_frame,    // 36..MAX_FRAME
    input wire logic [31:0] cfg_peer_window,  // the peer's replay window (TLPs)
    input wire logic [31:0] cfg_tx_next_seq,  // the next sequence number this end sends
    input wire logic        exp_load,         // load the expected sequence number
    input wire logic [31:0] exp_load_value,
    input wire logic        nak_rearm,        // a NAK may be asked again for the same gap
    // The receive credit limits (what this end advertises: freed + buffer per class, cumulative
    // from exp_load, as lib/core's dxfp_rx_credits), as on the wire: P hdr, P data, NP hdr, NP
    // data, Cpl hdr, Cpl data, the first in [191:160]
    input wire logic [191:0] cfg_rx_limits,

    // Verdict per frame (a one-cycle pulse)
    output wire logic       m_verdict_valid,
    output wire logic [2:0] m_verdict,       // enum dxfp_err
    output wire logic [7:0] m_verdict_type,  // the frame's Type (when the CRC was good)

    // The peer's acknowledgement from a good DATA frame (a pulse)
    output wire logic        m_peer_ack_valid,
    output wire logic [31:0] m_peer_ack,
    output wire logic [ 7:0] m_peer_flags,  // NAK, ACK_REQ
    // ...and its CREDIT record's limits, as on the wire (P hdr, P data, NP hdr, NP data, Cpl hdr,
    // Cpl data; the first in [191:160]), when it had one (with m_peer_ack_valid)
    output wire logic         m_peer_credits_valid,
    output wire logic [191:0] m_peer_credits,

    // NAK request (a pulse): ask the peer to replay from m_nak_seq
    output wire logic        m_nak_valid,
    output wire logic [31:0] m_nak_seq,
    output wire logic [31:0] m_ack,  // cumulative acknowledgement: the next expected number

    // Delivered TLPs
    output wire logic [             127:0] m_tlp_hdr,
    output wire logic [TLP_LEN_WIDTH-1:0]  m_tlp_len,
    output wire logic [  DATA_WIDTH-1:0]   m_tlp_data,
    output wire logic [  KEEP_WIDTH-1:0]   m_tlp_keep,
    output wire logic [              31:0] m_tlp_seq,
    output wire logic                      m_tlp_sop,
    output wire logic                      m_tlp_eop,
    output wire logic                      m_tlp_valid,
    input  wire logic                      m_tlp_ready,

    // Counters
    output wire logic [31:0] m_cnt_ok,  // frames that parse
    output wire logic [31:0] m_cnt_truncated,
    output wire logic [31:0] m_cnt_bad_length,
    output wire logic [31:0] m_cnt_bad_crc,
    output wire logic [31:0] m_cnt_bad_version,
    output wire logic [31:0] m_cnt_bad_type,
    output wire logic [31:0] m_cnt_malformed,
    output wire logic [31:0] m_cnt_bad_ack,
    output wire logic [31:0] m_cnt_window,
    output wire logic [31:0] m_cnt_duplicate,
    output wire logic [31:0] m_cnt_gap,
    output wire logic [31:0] m_cnt_delivered,
    output wire logic [31:0] m_cnt_credit,  // frames dropped: credit-violation
    output wire logic [31:0] m_cnt_unsealed  // DATA frames in the clear on a sealed session
);

  localparam int DEPTH_DW = MAX_FRAME / 4;
  localparam int PTR_W = $clog2(DEPTH_DW + 1) + 1;  // room for a record running past the end
  localparam int AW = $clog2(2 * DEPTH_DW);
  localparam int BEAT_BYTES = DATA_WIDTH / 8;
  localparam logic [PTR_W-1:0] REC0 = PTR_W'(DW_RECORDS);  // the first record's DW

  // Parameters checked at elaboration (dxpu_dxfp_pkg).
  if (!width_ok(DATA_WIDTH)) begin : g_bad_width
    $error("dxpu_dxfp_decap: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (!widths_follow(DATA_WIDTH, KEEP_WIDTH, BYTES_WIDTH)) begin : g_bad_keep
    $error("dxpu_dxfp_decap: KEEP_WIDTH and BYTES_WIDTH follow DATA_WIDTH");
  end
  if (!max_frame_ok(MAX_FRAME)) begin : g_bad_max
    $error("dxpu_dxfp_decap: MAX_FRAME %0d must be a multiple of 4, 128..9216", MAX_FRAME);
  end

  // ---- two frame buffers ----
  logic [31:0] mem[2*DEPTH_DW];
  // DW i of buffer b (zero past the buffer).
  function automatic logic [31:0] rd(input logic b, input logic [PTR_W-1:0] i);
    return i < PTR_W'(DEPTH_DW) ? mem[(b ? AW'(DEPTH_DW) : AW'(0)) + AW'(i)] : 32'd0;
  endfunction
  // Per buffer, of the last frame received into it: not decided yet; received to its last beat;
  // DWs stored (stops at DEPTH_DW); bytes received (saturating); its Length field; the CRC32C of
  // its bytes before the trailer. (A frame being delivered needs none of these: the deliverer
  // keeps what it needs, and the next frame may already be coming into the buffer behind it.)
  logic [1:0] undec_reg = 2'b00, undec_next;
  logic [1:0] full_reg = 2'b00, full_next;
  logic [1:0][PTR_W-1:0] rx_dw_reg = '0, rx_dw_next;
  logic [1:0][16:0] rx_len_reg = '0, rx_len_next;
  logic [1:0][15:0] flen_reg = '0, flen_next;
  logic [1:0][31:0] fcrc_reg = '0, fcrc_next;
  logic [1:0][1:0] fmark_reg = '0, fmark_next;  // MARK_*
  logic dlv_busy_reg = 1'b0, dlv_busy_next;  // a frame's TLPs are being delivered ...
  logic db_reg = 1'b0, db_next;  // ... from this buffer,
  logic [PTR_W-1:0] dp_reg = REC0, dp_next;  // the record at this DW (the lowest DW still read)

  // ---- receive: into buffer rb, CRC over the bytes before the trailer ----
  logic rb_reg = 1'b0, rb_next;  // the buffer frames go into
  logic rx_on_reg = 1'b0, rx_on_next;  // a frame is part-way in
  logic rx_take, rx_first;
  logic [15:0] flen_now;
  logic [16:0] rx_len_now;  // bytes before this beat
  logic [PTR_W-1:0] wr_dw;  // this beat's first DW
  logic [BYTES_WIDTH-1:0] crc_bytes;
  logic [31:0] crc_with_beat;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] crc_unused;
  /* verilator lint_on UNUSEDSIGNAL */
  // A frame starts in a buffer whose last frame is decided; a beat is written behind the
  // delivery going on in that buffer (it reads from dp on; it moves at least as fast as the
  // input, so the next frame follows it without waiting unless it started far behind).
  logic rx_free[2];  // the next frame may start in buffer b
  always_comb
    for (int b = 0; b < 2; b++)
      rx_free[b] = !undec_reg[b] && !(dlv_busy_reg && db_reg == 1'(b) &&
                                      PTR_W'(KEEP_WIDTH) > dp_reg);
  assign rx_first = !rx_on_reg;
  assign wr_dw = rx_first ? '0 : rx_dw_reg[rb_reg];
  assign s_frm_ready = (rx_on_reg || !undec_reg[rb_reg]) &&
      !(dlv_busy_reg && db_reg == rb_reg && wr_dw + PTR_W'(KEEP_WIDTH) > dp_reg);
  assign rx_take = s_frm_valid && s_frm_ready;
  always_comb begin
    logic [16:0] covered;
    flen_now = rx_first ? s_frm_data[DATA_WIDTH-33-:16] : flen_reg[rb_reg];
    rx_len_now = rx_first ? '0 : rx_len_reg[rb_reg];
    // Bytes of this beat before flen - 4 (0 when Length is too short to mean anything).
    covered = flen_now >= 16'(DXFP_CRC_SIZE) ? 17'(flen_now) - 17'(DXFP_CRC_SIZE) : 17'd0;
    if (covered <= rx_len_now) crc_bytes = '0;
    else if (covered - rx_len_now >= 17'(s_frm_bytes)) crc_bytes = s_frm_bytes;
    else crc_bytes = BYTES_WIDTH'(covered - rx_len_now);
  end

  dxpu_crc32c #(
      .DATA_WIDTH(DATA_WIDTH)
  ) crc (
      .clk,
      .rst,
      .s_data(s_frm_data),
      .s_bytes(crc_bytes),
      .s_sop(rx_first),
      .s_valid(rx_take),
      .m_crc(crc_unused),
      .m_crc_next(crc_with_beat)
  );

  // ---- check: the frame in buffer wb, its records walked as they arrive ----
  logic wb_reg = 1'b0, wb_next;  // the oldest frame not decided (or where the next one goes)
  logic [PTR_W-1:0] p_reg = REC0, p_next;  // the record being checked (DW)
  logic [15:0] n_reg = '0, n_next;  // records checked
  logic [15:0] ntlp_reg = '0, ntlp_next;  // TLP records
  // The credit the frame's new TLP records (at or after the expected number) take, per class.
  logic [31:0] fr_hdr_reg[3], fr_hdr_next[3], fr_data_reg[3], fr_data_next[3];
  // ...and what the TLPs delivered since exp_load took.
  logic [31:0] rcvd_hdr_reg[3], rcvd_hdr_next[3], rcvd_data_reg[3], rcvd_data_next[3];
  logic [PTR_W-1:0] ftlp_reg = REC0, ftlp_next;  // the first TLP record
  logic walk_bad_reg = 1'b0, walk_bad_next;  // a record broke a rule
  logic tlp_bad_reg = 1'b0, tlp_bad_next, tlp_bad_now;  // a TLP record broke the decoder's

  // The frame's header words and its trailer.
  logic [31:0] h0, fseq, fack, ftrl;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] h1;  // [31:16]: Length, taken from the first beat
  /* verilator lint_on UNUSEDSIGNAL */
  logic [7:0] ftype;
  logic [15:0] flen;
  logic [16:0] rx_len;
  logic [PTR_W-1:0] end_dw;  // the trailer's DW: records end here
  logic len_ok;  // a Length whose records can be walked
  // The record at p_reg.
  logic [31:0] rh;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] pad_dw;  // [31:24]: body
  /* verilator lint_on UNUSEDSIGNAL */
  logic [7:0] rtype;
  logic [15:0] blen;
  logic [16:0] padded;
  logic rec_bad, rec_tlp, rec_here, walk_go;
  logic [127:0] thdr;
  logic [PTR_W-1:0] rec_next, need_dw;
  kind_t rec_kind;
  /* verilator lint_off UNUSEDSIGNAL */
  err_t rec_err;  // the classifier's verdict on the record counts; this is for the class only
  /* verilator lint_on UNUSEDSIGNAL */
  class_t rec_class;
  logic [31:0] rec_units;
  always_comb begin
    logic [16:0] avail;
    h0 = rd(wb_reg, 0);
    h1 = rd(wb_reg, 1);
    fseq = rd(wb_reg, PTR_W'(DW_SEQ));
    fack = rd(wb_reg, PTR_W'(DW_ACK));
    flen = flen_reg[wb_reg];
    rx_len = rx_len_reg[wb_reg];
    end_dw = PTR_W'(flen >> 2) - PTR_W'(1);
    ftrl = rd(wb_reg, end_dw);
    ftype = h0[23:16];
    len_ok = flen >= 16'(DXFP_MIN_FRAME) && flen <= 16'(MAX_FRAME) && flen[1:0] == 2'd0;
    rh = rd(wb_reg, p_reg);
    rtype = rh[31:24];
    blen = rh[15:0];
    padded = (17'(blen) + 17'd3) & ~17'd3;
    avail = 17'({end_dw - p_reg - PTR_W'(1), 2'b00});
    pad_dw = rd(wb_reg, p_reg + PTR_W'(1) + PTR_W'(blen >> 2));
    rec_tlp = rtype == REC_TLP;
    rec_bad = rh[23:16] != 8'd0 || padded > avail;
    case (blen[1:0])  // padding bytes after the body
      2'd1: if (pad_dw[23:0] != 24'd0) rec_bad = 1'b1;
      2'd2: if (pad_dw[15:0] != 16'd0) rec_bad = 1'b1;
      2'd3: if (pad_dw[7:0] != 8'd0) rec_bad = 1'b1;
      default: ;
    endcase
    case (rtype)
      REC_TLP: if (ftype != T_DATA) rec_bad = 1'b1;
      REC_CREDIT:
      if ((ftype != T_HELLO && ftype != T_WELCOME && ftype != T_DATA) ||
          blen != 16'(DXFP_CREDIT_BODY_SIZE))
        rec_bad = 1'b1;
      REC_HELLO:
      if ((ftype != T_HELLO && ftype != T_WELCOME) || blen != 16'(DXFP_HELLO_BODY_SIZE))
        rec_bad = 1'b1;
      REC_CLOSE: if (ftype != T_CLOSE || blen != 16'(DXFP_CLOSE_BODY_SIZE)) rec_bad = 1'b1;
      // The handshake's records (docs/protocol.md 4.12): only in HELLO and WELCOME, of the
      // sizes lib/core's parser takes; the port never sees them (handshakes are the session's)
      // but agrees with lib/core on every frame.
      REC_NOISE:
      if ((ftype != T_HELLO || blen != 16'(DXFP_NOISE_HELLO_BODY_SIZE)) &&
          (ftype != T_WELCOME || blen != 16'(DXFP_NOISE_WELCOME_BODY_SIZE)))
        rec_bad = 1'b1;
      REC_MAC1: if (ftype != T_HELLO || blen != 16'(DXFP_MAC1_BODY_SIZE)) rec_bad = 1'b1;
      REC_MAC2: if (ftype != T_HELLO || blen != 16'(DXFP_MAC2_BODY_SIZE)) rec_bad = 1'b1;
      REC_COOKIE: if (ftype != T_COOKIE || blen != 16'(DXFP_COOKIE_BODY_SIZE)) rec_bad = 1'b1;
      default: ;
    endcase
    rec_next = p_reg + PTR_W'(1) + PTR_W'(padded >> 2);
    thdr = {rd(wb_reg, p_reg + PTR_W'(1)), rd(wb_reg, p_reg + PTR_W'(2)),
            rd(wb_reg, p_reg + PTR_W'(3)), rd(wb_reg, p_reg + PTR_W'(4))};
    if (!thdr[125]) thdr[31:0] = 32'd0;
    // A TLP record's class and data credits (lib/core's tlp_class_payload).
    rec_err = fmt_type_kind(thdr[127:125], thdr[124:120], rec_kind);
    rec_class = kind_class(rec_kind);
    rec_units = data_credits(rec_kind, thdr[105:96]);
    // The last DW the checks read (the TLP header's, the padding's), within the frame: the
    // record is checked once it is stored (at once when the frame is in whole).
    need_dw = p_reg + PTR_W'(4);
    if (rtype == REC_CREDIT) need_dw = p_reg + PTR_W'(DXFP_CREDIT_BODY_SIZE / 4);
    if (blen[1:0] != 2'd0 && p_reg + PTR_W'(1) + PTR_W'(blen >> 2) > need_dw)
      need_dw = p_reg + PTR_W'(1) + PTR_W'(blen >> 2);
    if (need_dw > end_dw) need_dw = end_dw;
    rec_here = full_reg[wb_reg] || need_dw < rx_dw_reg[wb_reg];
  end

  // The TLP decoder's rules: a dxpu_tlp_classify stage, given each TLP record's first 16 bytes
  // and length (clamped: a body longer than 8191 bytes is wrong for the decoder either way).
  logic cls_valid;
  err_t cls_err;
  /* verilator lint_off UNUSEDSIGNAL */
  logic cls_ready, cls_sop, cls_eop, cls_hdr4;
  logic [127:0] cls_hdr;
  logic [TLP_LEN_WIDTH-1:0] cls_len;
  logic [63:0] cls_data;
  logic [1:0] cls_keep;
  logic cls_user;
  kind_t cls_kind;
  class_t cls_class;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_tlp_classify #(
      .DATA_WIDTH(64)
  ) classify (
      .clk,
      .rst,
      .s_tlp_hdr(thdr),
      .s_tlp_len(blen > 16'd8191 ? 13'd8191 : blen[12:0]),
      .s_tlp_data(64'd0),
      .s_tlp_keep(2'd0),
      .s_tlp_user(1'b0),
      .s_tlp_sop(1'b1),
      .s_tlp_eop(1'b1),
      .s_tlp_valid(walk_go && rec_tlp),
      .s_tlp_ready(cls_ready),
      .m_tlp_hdr(cls_hdr),
      .m_tlp_len(cls_len),
      .m_tlp_data(cls_data),
      .m_tlp_keep(cls_keep),
      .m_tlp_user(cls_user),
      .m_tlp_sop(cls_sop),
      .m_tlp_eop(cls_eop),
      .m_tlp_valid(cls_valid),
      .m_tlp_ready(1'b1),
      .m_tlp_kind(cls_kind),
      .m_tlp_class(cls_class),
      .m_tlp_err(cls_err),
      .m_tlp_hdr4(cls_hdr4)
  );
  // The classifier's verdict on a TLP record comes one cycle after the record.
  assign tlp_bad_now = tlp_bad_reg || (cls_valid && cls_err != ERR_OK);

  // ---- decide: the verdict (dxfp_frame_parse(), in its order) and, for a DATA frame that
  // parses, the sequence numbers, against exp_dec: the expected number once every frame decided
  // so far is delivered ----
  logic [31:0] exp_dec_reg = '0, exp_dec_next;
  logic dec_now, decide, dlv_need, ack_bad, seq_gap, gap_win, ahead_win, credit_bad;
  logic silent, unsealed;  // dropped by the open stage; in the clear on a sealed session
  logic [2:0] verdict_now;
  logic [15:0] ndup;
  always_comb begin
    logic [31:0] behind;  // how far the frame starts before the expected number
    dec_now = 1'b0;
    verdict_now = E_OK;
    silent = fmark_reg[wb_reg] == MARK_DROP;
    if (undec_reg[wb_reg] && full_reg[wb_reg]) begin
      dec_now = 1'b1;
      if (silent) ;  // decided at once, unseen
      else if (rx_len < 17'(DXFP_MIN_FRAME)) verdict_now = E_TRUNCATED;
      else if (!len_ok || flen > 16'(cfg_max_frame)) verdict_now = E_BAD_LENGTH;
      else if (17'(flen) > rx_len) verdict_now = E_TRUNCATED;
      else if (fmark_reg[wb_reg] != MARK_OPENED && fcrc_reg[wb_reg] != ftrl) verdict_now = E_BAD_CRC;
      else if (h0[31:24] != DXFP_VERSION) verdict_now = E_BAD_VERSION;
      else if (ftype < T_HELLO || ftype > T_COOKIE) verdict_now = E_BAD_TYPE;
      else if (h0[7:0] != 8'd0 || (h0[15:8] & ~F_ALL) != 8'd0) verdict_now = E_MALFORMED;
      else if (walk_bad_reg) verdict_now = E_MALFORMED;
      else if (p_reg != end_dw) dec_now = 1'b0;  // records still to check
      else if (tlp_bad_now || n_reg != h1[15:0]) verdict_now = E_MALFORMED;
    end
    ack_bad = seq_before(cfg_tx_next_seq, fack);
    seq_gap = seq_before(exp_dec_reg, fseq);
    gap_win = fseq - exp_dec_reg >= cfg_peer_window;
    ahead_win = fseq + 32'(ntlp_reg) - exp_dec_reg > cfg_peer_window &&
        seq_before(exp_dec_reg, fseq + 32'(ntlp_reg));
    // Duplicates: the TLP records before the expected number (a prefix, when there is no gap).
    behind = exp_dec_reg - fseq;
    ndup = behind < 32'(ntlp_reg) ? behind[15:0] : ntlp_reg;
    unsealed = cfg_sealed && fmark_reg[wb_reg] == MARK_PLAIN;
    dlv_need = !silent && !unsealed && verdict_now == E_OK && ftype == T_DATA && !ack_bad &&
        ntlp_reg != 16'd0 &&
        !seq_gap && !ahead_win && ndup != ntlp_reg;
    // lib/core's deliver_tlps: every new TLP's credit is checked before any is delivered.
    credit_bad = 1'b0;
    for (int c = 0; c < 3; c++)
      if (seq_before(cfg_rx_limits[191-64*c-:32], rcvd_hdr_reg[c] + fr_hdr_reg[c]) ||
          seq_before(cfg_rx_limits[159-64*c-:32], rcvd_data_reg[c] + fr_data_reg[c]))
        credit_bad = 1'b1;
    // A frame with TLPs to deliver waits for the previous one's delivery to end.
    decide = dec_now && (!dlv_need || !dlv_busy_reg);
    // The walker stands still while its frame is decided (the classifier's next verdict would
    // otherwise count against the next frame).
    walk_go = undec_reg[wb_reg] && len_ok && !walk_bad_reg && p_reg != end_dw && rec_here &&
        !decide;
  end

  // ---- deliver: the frame in buffer db, beat dbeat of the TLP record at dp ----
  logic [PTR_W-1:0] dend_reg = '0, dend_next;  // the frame's trailer DW
  logic [15:0] dskip_reg = '0, dskip_next;  // duplicate TLP records still to skip
  logic [31:0] dseq_reg = '0, dseq_next;  // sequence number of the record at dp
  logic [10:0] dbeat_reg = '0, dbeat_next;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] drh;  // [23:16]: checked already
  /* verilator lint_on UNUSEDSIGNAL */
  logic [15:0] dblen;
  logic drec_tlp;
  logic [PTR_W-1:0] drec_next;
  logic [127:0] o_hdr;
  logic [2:0] hdr_dws;
  logic [10:0] pay_dws;
  logic [DATA_WIDTH-1:0] o_data;
  logic [KEEP_WIDTH-1:0] o_keep;
  logic o_sop, o_eop;
  always_comb begin
    logic [PTR_W-1:0] base;
    drh = rd(db_reg, dp_reg);
    dblen = drh[15:0];
    drec_tlp = drh[31:24] == REC_TLP;
    drec_next = dp_reg + PTR_W'(1) + PTR_W'(((17'(dblen) + 17'd3) & ~17'd3) >> 2);
    o_hdr = {rd(db_reg, dp_reg + PTR_W'(1)), rd(db_reg, dp_reg + PTR_W'(2)),
             rd(db_reg, dp_reg + PTR_W'(3)), rd(db_reg, dp_reg + PTR_W'(4))};
    hdr_dws = o_hdr[125] ? 3'd4 : 3'd3;
    if (!o_hdr[125]) o_hdr[31:0] = 32'd0;
    pay_dws = 11'((dblen >> 2) - 16'(hdr_dws));
    base = dp_reg + PTR_W'(1) + PTR_W'(hdr_dws) + PTR_W'(32'(dbeat_reg) * KEEP_WIDTH);
    o_data = '0;
    o_keep = '0;
    for (int k = 0; k < KEEP_WIDTH; k++)
      if (32'(dbeat_reg) * KEEP_WIDTH + k < 32'(pay_dws)) begin
        o_data[DATA_WIDTH-1-32*k-:32] = rd(db_reg, base + PTR_W'(k));
        o_keep[k] = 1'b1;
      end
    o_sop = dbeat_reg == '0;
    o_eop = (32'(dbeat_reg) + 32'd1) * KEEP_WIDTH >= 32'(pay_dws);
  end

  // ---- registers ----
  logic [2:0] verdict_reg = '0, verdict_next;
  logic verdict_valid_reg = 1'b0, verdict_valid_next;
  logic [7:0] verdict_type_reg = '0, verdict_type_next;
  logic [31:0] expected_reg = '0, expected_next;  // m_ack: advances as TLPs go out
  logic nak_out_reg = 1'b0, nak_out_next;
  logic [31:0] nak_seq_reg = '0, nak_seq_next;
  logic nak_valid_reg = 1'b0, nak_valid_next;
  logic peer_ack_valid_reg = 1'b0, peer_ack_valid_next;
  logic [31:0] peer_ack_reg = '0, peer_ack_next;
  logic [7:0] peer_flags_reg = '0, peer_flags_next;
  logic peer_credits_valid_reg = 1'b0, peer_credits_valid_next;
  logic [191:0] peer_credits_reg = '0, peer_credits_next;
  // The CREDIT record of the frame being walked (wcred_ok_reg: it had one).
  logic wcred_ok_reg = 1'b0, wcred_ok_next;
  logic [191:0] wcred_reg = '0, wcred_next;
  logic [31:0] cnt_reg[14];
  logic [31:0] cnt_next[14];
  localparam int C_OK = 0, C_TRUNC = 1, C_LEN = 2, C_CRC = 3, C_VER = 4, C_TYPE = 5, C_MAL = 6,
                 C_ACK = 7, C_WIN = 8, C_DUP = 9, C_GAP = 10, C_DLV = 11, C_CRED = 12,
                 C_UNSEALED = 13;

  // Output register stage (TLPs).
  logic [127:0] o_hdr_reg = '0;
  logic [TLP_LEN_WIDTH-1:0] o_len_reg = '0;
  logic [DATA_WIDTH-1:0] o_data_reg = '0;
  logic [KEEP_WIDTH-1:0] o_keep_reg = '0;
  logic [31:0] o_seq_reg = '0;
  logic o_sop_reg = 1'b0, o_eop_reg = 1'b0, o_valid_reg = 1'b0, o_valid_next, emit;

  always_comb begin
    logic dlv_end;
    undec_next = undec_reg;
    full_next = full_reg;
    rx_dw_next = rx_dw_reg;
    rx_len_next = rx_len_reg;
    flen_next = flen_reg;
    fcrc_next = fcrc_reg;
    fmark_next = fmark_reg;
    rb_next = rb_reg;
    rx_on_next = rx_on_reg;
    p_next = p_reg;
    n_next = n_reg;
    ntlp_next = ntlp_reg;
    ftlp_next = ftlp_reg;
    walk_bad_next = walk_bad_reg;
    tlp_bad_next = tlp_bad_now;
    exp_dec_next = exp_dec_reg;
    verdict_next = verdict_reg;
    verdict_valid_next = 1'b0;
    verdict_type_next = verdict_type_reg;
    expected_next = expected_reg;
    nak_out_next = nak_out_reg && !nak_rearm;
    nak_seq_next = nak_seq_reg;
    nak_valid_next = 1'b0;
    peer_ack_valid_next = 1'b0;
    peer_ack_next = peer_ack_reg;
    peer_flags_next = peer_flags_reg;
    peer_credits_valid_next = 1'b0;
    peer_credits_next = peer_credits_reg;
    wcred_ok_next = wcred_ok_reg;
    wcred_next = wcred_reg;
    fr_hdr_next = fr_hdr_reg;
    fr_data_next = fr_data_reg;
    rcvd_hdr_next = rcvd_hdr_reg;
    rcvd_data_next = rcvd_data_reg;
    cnt_next = cnt_reg;
    dlv_busy_next = dlv_busy_reg;
    db_next = db_reg;
    dp_next = dp_reg;
    dend_next = dend_reg;
    dskip_next = dskip_reg;
    dseq_next = dseq_reg;
    dbeat_next = dbeat_reg;
    o_valid_next = o_valid_reg && !m_tlp_ready;
    emit = 1'b0;
    dlv_end = 1'b0;

    // Receive.
    if (rx_take) begin
      rx_dw_next[rb_reg] = wr_dw < PTR_W'(DEPTH_DW) ? wr_dw + PTR_W'(KEEP_WIDTH) : wr_dw;
      rx_len_next[rb_reg] = rx_len_now + 17'(s_frm_bytes) > 17'h1ffff - 17'(BEAT_BYTES) ?
          17'h1ffff - 17'(BEAT_BYTES) : rx_len_now + 17'(s_frm_bytes);
      if (rx_first) begin
        flen_next[rb_reg] = flen_now;
        undec_next[rb_reg] = 1'b1;
        full_next[rb_reg] = 1'b0;
      end
      rx_on_next = !s_frm_last;
      if (s_frm_last) begin
        full_next[rb_reg] = 1'b1;
        fcrc_next[rb_reg] = crc_with_beat;
        fmark_next[rb_reg] = s_frm_mark;
        rb_next = !rb_reg;
      end
    end else if (!rx_on_reg && !rx_free[rb_reg] && rx_free[!rb_reg]) begin
      rb_next = !rb_reg;  // the other buffer came free first
    end

    // Check, one record per cycle.
    if (walk_go) begin
      if (rec_bad) walk_bad_next = 1'b1;
      else begin
        p_next = rec_next;
        n_next = n_reg + 16'd1;
        if (rec_tlp) begin
          ntlp_next = ntlp_reg + 16'd1;
          if (ntlp_reg == 16'd0) ftlp_next = p_reg;
        end
        if (rec_tlp && !seq_before(fseq + 32'(ntlp_reg), exp_dec_reg)) begin
          fr_hdr_next[rec_class] = fr_hdr_reg[rec_class] + 32'd1;
          fr_data_next[rec_class] = fr_data_reg[rec_class] + rec_units;
        end
        if (rtype == REC_CREDIT) begin
          wcred_ok_next = 1'b1;
          wcred_next = {rd(wb_reg, p_reg + PTR_W'(1)), rd(wb_reg, p_reg + PTR_W'(2)),
                        rd(wb_reg, p_reg + PTR_W'(3)), rd(wb_reg, p_reg + PTR_W'(4)),
                        rd(wb_reg, p_reg + PTR_W'(5)), rd(wb_reg, p_reg + PTR_W'(6))};
        end
      end
    end

    // Deliver: non-TLP and duplicate records are skipped (a cycle each), a TLP goes out a beat
    // per cycle (its header with the first payload beat).
    if (dlv_busy_reg) begin
      if (dp_reg == dend_reg) dlv_end = 1'b1;
      else if (!drec_tlp) begin
        dp_next = drec_next;
        dlv_end = drec_next == dend_reg;
      end else if (dskip_reg != 16'd0) begin
        dskip_next = dskip_reg - 16'd1;
        dseq_next = dseq_reg + 32'd1;
        dp_next = drec_next;
        dlv_end = drec_next == dend_reg;
      end else if (!o_valid_reg || m_tlp_ready) begin
        emit = 1'b1;
        o_valid_next = 1'b1;
        dbeat_next = dbeat_reg + 11'd1;
        if (o_sop) begin
          expected_next = expected_reg + 32'd1;
          cnt_next[C_DLV] = cnt_reg[C_DLV] + 32'd1;
        end
        if (o_eop) begin
          dbeat_next = '0;
          dseq_next = dseq_reg + 32'd1;
          dp_next = drec_next;
          dlv_end = drec_next == dend_reg;
        end
      end
      if (dlv_end) dlv_busy_next = 1'b0;
    end

    // Decide.
    if (decide) begin
      verdict_valid_next = !silent;
      verdict_next = verdict_now;
      verdict_type_next = ftype;
      if (silent) begin
      end else if (verdict_now == E_OK && ftype == T_DATA && unsealed) begin
        cnt_next[C_UNSEALED] = cnt_reg[C_UNSEALED] + 32'd1;  // nothing of it is taken
      end else if (verdict_now == E_OK && ftype == T_DATA) begin
        if (ack_bad) begin
          cnt_next[C_ACK] = cnt_reg[C_ACK] + 32'd1;
        end else begin
          peer_ack_valid_next = 1'b1;
          peer_ack_next = fack;
          peer_flags_next = h0[15:8];
          peer_credits_valid_next = wcred_ok_reg;
          peer_credits_next = wcred_reg;
          if (ntlp_reg == 16'd0) begin
          end else if (seq_gap) begin
            if (gap_win) cnt_next[C_WIN] = cnt_reg[C_WIN] + 32'd1;
            else begin
              cnt_next[C_GAP] = cnt_reg[C_GAP] + 32'(ntlp_reg);
              if (!nak_out_reg || nak_rearm || nak_seq_reg != exp_dec_reg) begin
                nak_valid_next = 1'b1;
                nak_out_next = 1'b1;
                nak_seq_next = exp_dec_reg;
              end
            end
          end else if (ahead_win) begin
            cnt_next[C_WIN] = cnt_reg[C_WIN] + 32'd1;
          end else if (dlv_need && credit_bad) begin
            cnt_next[C_CRED] = cnt_reg[C_CRED] + 32'd1;
          end else begin
            cnt_next[C_DUP] = cnt_reg[C_DUP] + 32'(ndup);
            if (dlv_need) begin
              exp_dec_next = exp_dec_reg + 32'(ntlp_reg) - 32'(ndup);
              nak_out_next = 1'b0;
            end
          end
        end
      end
      undec_next[wb_reg] = 1'b0;
      if (dlv_need && !credit_bad) begin
        for (int c = 0; c < 3; c++) begin
          rcvd_hdr_next[c] = rcvd_hdr_reg[c] + fr_hdr_reg[c];
          rcvd_data_next[c] = rcvd_data_reg[c] + fr_data_reg[c];
        end
        dlv_busy_next = 1'b1;
        db_next = wb_reg;
        dp_next = ftlp_reg;
        dend_next = end_dw;
        dskip_next = ndup;
        dseq_next = fseq;
        dbeat_next = '0;
      end
      p_next = REC0;
      n_next = '0;
      ntlp_next = '0;
      wcred_ok_next = 1'b0;
      for (int c = 0; c < 3; c++) begin
        fr_hdr_next[c] = '0;
        fr_data_next[c] = '0;
      end
      walk_bad_next = 1'b0;
      tlp_bad_next = 1'b0;
    end
    wb_next = undec_next[wb_reg] ? wb_reg : undec_next[!wb_reg] ? !wb_reg : rb_next;

    if (verdict_valid_next) begin
      case (verdict_next)
        E_OK: cnt_next[C_OK] = cnt_reg[C_OK] + 32'd1;
        E_TRUNCATED: cnt_next[C_TRUNC] = cnt_reg[C_TRUNC] + 32'd1;
        E_BAD_LENGTH: cnt_next[C_LEN] = cnt_reg[C_LEN] + 32'd1;
        E_BAD_CRC: cnt_next[C_CRC] = cnt_reg[C_CRC] + 32'd1;
        E_BAD_VERSION: cnt_next[C_VER] = cnt_reg[C_VER] + 32'd1;
        E_BAD_TYPE: cnt_next[C_TYPE] = cnt_reg[C_TYPE] + 32'd1;
        default: cnt_next[C_MAL] = cnt_reg[C_MAL] + 32'd1;
      endcase
    end
    if (exp_load) begin
      expected_next = exp_load_value;
      exp_dec_next = exp_load_value;
      for (int c = 0; c < 3; c++) begin
        rcvd_hdr_next[c] = '0;
        rcvd_data_next[c] = '0;
      end
    end
  end

  always_ff @(posedge clk) begin
    undec_reg <= undec_next;
    full_reg <= full_next;
    rx_dw_reg <= rx_dw_next;
    rx_len_reg <= rx_len_next;
    flen_reg <= flen_next;
    fcrc_reg <= fcrc_next;
    fmark_reg <= fmark_next;
    rb_reg <= rb_next;
    rx_on_reg <= rx_on_next;
    wb_reg <= wb_next;
    p_reg <= p_next;
    n_reg <= n_next;
    ntlp_reg <= ntlp_next;
    ftlp_reg <= ftlp_next;
    walk_bad_reg <= walk_bad_next;
    tlp_bad_reg <= tlp_bad_next;
    exp_dec_reg <= exp_dec_next;
    verdict_reg <= verdict_next;
    verdict_valid_reg <= verdict_valid_next;
    verdict_type_reg <= verdict_type_next;
    expected_reg <= expected_next;
    nak_out_reg <= nak_out_next;
    nak_seq_reg <= nak_seq_next;
    nak_valid_reg <= nak_valid_next;
    peer_ack_valid_reg <= peer_ack_valid_next;
    peer_ack_reg <= peer_ack_next;
    peer_flags_reg <= peer_flags_next;
    peer_credits_valid_reg <= peer_credits_valid_next;
    peer_credits_reg <= peer_credits_next;
    wcred_ok_reg <= wcred_ok_next;
    wcred_reg <= wcred_next;
    fr_hdr_reg <= fr_hdr_next;
    fr_data_reg <= fr_data_next;
    rcvd_hdr_reg <= rcvd_hdr_next;
    rcvd_data_reg <= rcvd_data_next;
    cnt_reg <= cnt_next;
    dlv_busy_reg <= dlv_busy_next;
    db_reg <= db_next;
    dp_reg <= dp_next;
    dend_reg <= dend_next;
    dskip_reg <= dskip_next;
    dseq_reg <= dseq_next;
    dbeat_reg <= dbeat_next;
    o_valid_reg <= o_valid_next;
    if (emit) begin
      o_hdr_reg <= o_sop ? o_hdr : '0;
      o_len_reg <= dblen[12:0];
      o_data_reg <= o_data;
      o_keep_reg <= o_keep;
      o_seq_reg <= dseq_reg;
      o_sop_reg <= o_sop;
      o_eop_reg <= o_eop;
    end
    if (rx_take)
      for (int k = 0; k < KEEP_WIDTH; k++)
        if (32'(wr_dw) + k < DEPTH_DW)
          mem[(rb_reg ? AW'(DEPTH_DW) : AW'(0)) + AW'(32'(wr_dw) + k)] <=
              s_frm_data[DATA_WIDTH-1-32*k-:32];
    if (rst) begin
      undec_reg <= 2'b00;
      full_reg <= 2'b00;
      rb_reg <= 1'b0;
      rx_on_reg <= 1'b0;
      wb_reg <= 1'b0;
      p_reg <= REC0;
      n_reg <= '0;
      ntlp_reg <= '0;
      walk_bad_reg <= 1'b0;
      tlp_bad_reg <= 1'b0;
      exp_dec_reg <= '0;
      verdict_valid_reg <= 1'b0;
      expected_reg <= '0;
      nak_out_reg <= 1'b0;
      nak_valid_reg <= 1'b0;
      peer_ack_valid_reg <= 1'b0;
      peer_credits_valid_reg <= 1'b0;
      wcred_ok_reg <= 1'b0;
      for (int c = 0; c < 3; c++) begin
        fr_hdr_reg[c] <= '0;
        fr_data_reg[c] <= '0;
        rcvd_hdr_reg[c] <= '0;
        rcvd_data_reg[c] <= '0;
      end
      dlv_busy_reg <= 1'b0;
      o_valid_reg <= 1'b0;
      for (int c = 0; c < 14; c++) cnt_reg[c] <= '0;
    end
  end

  assign m_verdict_valid = verdict_valid_reg;
  assign m_verdict = verdict_reg;
  assign m_verdict_type = verdict_type_reg;
  assign m_peer_ack_valid = peer_ack_valid_reg;
  assign m_peer_ack = peer_ack_reg;
  assign m_peer_flags = peer_flags_reg;
  assign m_peer_credits_valid = peer_credits_valid_reg;
  assign m_peer_credits = peer_credits_reg;
  assign m_nak_valid = nak_valid_reg;
  assign m_nak_seq = nak_seq_reg;
  assign m_ack = expected_reg;
  assign m_tlp_hdr = o_hdr_reg;
  assign m_tlp_len = o_len_reg;
  assign m_tlp_data = o_data_reg;
  assign m_tlp_keep = o_keep_reg;
  assign m_tlp_seq = o_seq_reg;
  assign m_tlp_sop = o_sop_reg;
  assign m_tlp_eop = o_eop_reg;
  assign m_tlp_valid = o_valid_reg;
  assign m_cnt_ok = cnt_reg[C_OK];
  assign m_cnt_truncated = cnt_reg[C_TRUNC];
  assign m_cnt_bad_length = cnt_reg[C_LEN];
  assign m_cnt_bad_crc = cnt_reg[C_CRC];
  assign m_cnt_bad_version = cnt_reg[C_VER];
  assign m_cnt_bad_type = cnt_reg[C_TYPE];
  assign m_cnt_malformed = cnt_reg[C_MAL];
  assign m_cnt_bad_ack = cnt_reg[C_ACK];
  assign m_cnt_window = cnt_reg[C_WIN];
  assign m_cnt_duplicate = cnt_reg[C_DUP];
  assign m_cnt_gap = cnt_reg[C_GAP];
  assign m_cnt_delivered = cnt_reg[C_DLV];
  assign m_cnt_credit = cnt_reg[C_CRED];
  assign m_cnt_unsealed = cnt_reg[C_UNSEALED];

endmodule

`resetall
