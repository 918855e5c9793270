// dxpu_dxfp_open - the opening side of a sealed DxFP session (docs/protocol.md 4.12, docs/rtl.md
// "The sealed port"), in front of the decapsulator: received frames in (untrusted: any bytes, any
// length), each sealed one checked and opened as lib/core's dxfp_frame_open() does it, in its
// order:
//   - fewer than DXFP_MIN_SEALED_FRAME bytes, or fewer than Length: truncated; Length below 56,
//     above cfg_max_frame or 9216, or not a multiple of 4: bad-length;
//   - the counter against the replay window (below): taken already or too old: replayed, decided
//     before any cryptography (the frame is drained, the AEAD never sees it);
//   - the tag: the frame's records are decrypted as they stream through the AEAD (AAD = header
//     and counter, nonce = counter) and passed on at once, header first (Length - 20, SEALED
//     cleared, a 4-byte trailer where the CRC was); the verdict comes with the last beat
//     (m_frm_mark): MARK_OPENED, and the decapsulator checks the records and delivers, or
//     MARK_DROP, and it drops the frame unseen. It stores whole frames and decides on the last
//     beat, so no TLP of a frame leaves before its tag passed.
// Only a frame whose tag passed takes its counter. A frame in the clear (SEALED not set) goes to
// the decapsulator as it came (MARK_PLAIN): it checks its CRC and drops a DATA frame of a sealed
// session (unsealed).
//
// The replay window (lib/core's struct dxfp_replay, dxfp_replay_fresh and _take, bit for bit):
// the highest counter taken plus one (next), and a ring of DXFP_REPLAY_WINDOW bits indexed by
// the counter, cleared a 64-bit word at a time as next moves over it; a counter is fresh when it
// is at or after next, or no more than 4,032 below it with its bit clear. Counters are checked
// when the frame's counter arrives and again when its tag is known (frames ahead of it may have
// moved the window meanwhile: the second check is lib/core's order); a frame whose counter
// equals one still waiting for its tag waits, so a forged frame cannot burn the real one's.
// start (with the key) empties the window.
//
// The AEAD runs at the port's width (DATA_WIDTH 64 or 256, checked at elaboration). The
// ciphertext starts 8 bytes into the beat after the header (the counter comes first), so the
// AEAD's beats are shifted by 8 bytes on the way in (the rest of each beat held and completed by
// the next beat's first 8 bytes; one more beat at the end when the frame's bytes run out); the
// plaintext comes out of it beat-aligned after the header, as the decapsulator reads a frame.
// Timing: one beat per cycle within a frame at both widths; per frame the header and the counter
// (5 or 2 beats), the AEAD's start (about 17 or 8 cycles) and the header out (4 beats or 1).
`resetall
`default_nettype none

module dxpu_dxfp_open
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int DOUBLE_ROUNDS_PER_CYCLE = DATA_WIDTH == 256 ? 5 : 2
) (
    input wire logic clk,
    input wire logic rst,

    // The session's receiving key, loaded by start (which also empties the replay window)
    input wire logic         start,
    input wire logic [255:0] cfg_key,
    input wire logic [ 13:0] cfg_max_frame,

    // Frames from the peer
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,
    input  wire logic                   s_frm_last,
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Frames to the decapsulator, the mark beside the last beat
    output wire logic [ DATA_WIDTH-1:0] m_frm_data,
    output wire logic [BYTES_WIDTH-1:0] m_frm_bytes,
    output wire logic                   m_frm_last,
    output wire logic [            1:0] m_frm_mark,
    output wire logic                   m_frm_valid,
    input  wire logic                   m_frm_ready,

    output wire logic [31:0] m_cnt_opened,     // sealed frames whose tag passed
    output wire logic [31:0] m_cnt_bad_tag,
    output wire logic [31:0] m_cnt_replayed,
    output wire logic [31:0] m_cnt_truncated,  // sealed frames (the decapsulator counts the rest)
    output wire logic [31:0] m_cnt_bad_length  // sealed frames
);

  localparam int WORDS = DXFP_REPLAY_WINDOW / 64;
  localparam int PEND = 4;  // frames between the AEAD's input and their verdict, at most 3

  // Parameters checked at elaboration.
  if (DATA_WIDTH != 64 && DATA_WIDTH != 256) begin : g_bad_width
    $error("dxpu_dxfp_open: DATA_WIDTH %0d must be 64 or 256 (the AEAD's widths)", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_dxfp_open: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end
  if (WORDS != 64) begin : g_bad_window
    $error("dxpu_dxfp_open: the replay window is 64 words of 64 bits (DXFP_REPLAY_WINDOW 4096)");
  end

  // ---- the replay window ----
  logic [63:0] win_reg[WORDS];
  logic [63:0] win_next[WORDS];
  logic [63:0] wnext_reg = '0, wnext_next;  // one more than the highest counter taken; 0: none
  function automatic logic fresh(input logic [63:0] c, input logic [63:0] next,
                                 input logic [63:0] word);
    if (c > DXFP_SEAL_COUNTER_MAX) return 1'b0;
    if (c >= next) return 1'b1;
    if (next - c > 64'(DXFP_REPLAY_WINDOW) - 64'd64) return 1'b0;
    return !word[c[5:0]];
  endfunction

  localparam int BB = DATA_WIDTH / 8;  // bytes per beat
  localparam int HB = DXFP_HDR_SIZE / BB;  // the header's beats
  localparam int BW = BYTES_WIDTH;

  // ---- beats in (every beat but a frame's last is full) ----
  wire logic [DATA_WIDTH-1:0] d_data = s_frm_data;
  wire logic [BW-1:0] d_bytes = s_frm_last ? s_frm_bytes : BW'(BB);
  wire logic d_last = s_frm_last;
  wire logic d_valid = s_frm_valid;
  logic d_ready;
  assign s_frm_ready = d_ready;
  wire logic [63:0] d_ctr = d_data[DATA_WIDTH-1-:64];  // the counter, in the beat after the header

  // ---- the AEAD ----
  logic [255:0] key_reg = '0;
  logic [255:0] hb_reg = '0, hb_next;  // the frame's header as it came (the AAD's first part)
  logic [63:0] ctr_reg = '0, ctr_next;  // its counter
  logic [15:0] flen_reg = '0, flen_next;
  logic a_s_sop, a_s_eop, a_s_valid, a_s_ready;
  logic [BW-1:0] a_s_bytes;
  logic [DATA_WIDTH-1:0] a_s_data;
  logic [255:0] a_m_hdr;
  logic [DATA_WIDTH-1:0] a_m_data;
  logic [BW-1:0] a_m_bytes;
  logic a_m_eop, a_m_tag_bad, a_m_valid, a_m_ready;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [63:0] a_m_nonce;
  logic a_m_sop, a_m_decrypt, a_m_tag_ok;
  logic [31:0] a_cnt_frames, a_cnt_tag_bad, a_cnt_stray;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_aead_chacha20poly1305 #(
      .DATA_WIDTH(DATA_WIDTH),
      .HDR_BYTES(DXFP_HDR_SIZE),
      .DOUBLE_ROUNDS_PER_CYCLE(DOUBLE_ROUNDS_PER_CYCLE)
  ) u_aead (
      .clk,
      .rst,
      .s_hdr(hb_reg),
      .s_key(key_reg),
      .s_nonce(ctr_reg),
      .s_decrypt(1'b1),
      .s_len(14'(flen_reg - 16'(DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE))),
      .s_data(a_s_data),
      .s_bytes(a_s_bytes),
      .s_sop(a_s_sop),
      .s_eop(a_s_eop),
      .s_valid(a_s_valid),
      .s_ready(a_s_ready),
      .m_hdr(a_m_hdr),
      .m_nonce(a_m_nonce),
      .m_data(a_m_data),
      .m_bytes(a_m_bytes),
      .m_sop(a_m_sop),
      .m_eop(a_m_eop),
      .m_decrypt(a_m_decrypt),
      .m_tag_ok(a_m_tag_ok),
      .m_tag_bad(a_m_tag_bad),
      .m_valid(a_m_valid),
      .m_ready(a_m_ready),
      .m_cnt_frames(a_cnt_frames),
      .m_cnt_tag_bad(a_cnt_tag_bad),
      .m_cnt_stray(a_cnt_stray)
  );

  // ---- frames waiting for their tag: counter, and whether fewer bytes than Length came ----
  logic [63:0] pend_ctr_reg[PEND];
  logic [PEND-1:0] pend_trunc_reg = '0;
  logic [1:0] pend_wr_reg = '0, pend_rd_reg = '0;
  logic [2:0] pend_n_reg = '0;
  logic push, pop, push_trunc;
  logic waiting;  // the counter offered equals one waiting for its tag
  always_comb begin
    waiting = 1'b0;
    for (int i = 0; i < PEND; i++)
      if (3'(i) < pend_n_reg && pend_ctr_reg[2'(pend_rd_reg + 2'(i))] == d_ctr) waiting = 1'b1;
  end

  // ---- input ----
  typedef enum logic [2:0] {
    I_HDR,   // the header's beats (the first decides: sealed or in the clear)
    I_CTR,   // the counter's beat: the frame is checked
    I_FEED,  // the ciphertext and tag into the AEAD, 8 bytes on
    I_PAD,   // bytes after Length: dropped
    I_REJ,   // a frame refused before the AEAD: drained, its bytes counted
    I_PASS   // a frame in the clear, to the decapsulator as it is
  } in_state_t;
  in_state_t in_state_reg = I_HDR, in_state_next;
  logic [1:0] hidx_reg = '0, hidx_next;
  logic [16:0] rx_reg = '0, rx_next;  // bytes received (saturating)
  logic [15:0] left_reg = '0, left_next;  // bytes still to go into the AEAD
  logic first_reg = 1'b0, first_next;
  logic rej_len_reg = 1'b0, rej_len_next;  // refused for Length (else: replayed)
  logic [DATA_WIDTH-1:0] hold_reg = '0, hold_next;  // a beat's bytes after its first 8, at the top
  logic [BW-1:0] hold_n_reg = '0, hold_n_next;
  logic hold_end_reg = 1'b0, hold_end_next;  // the frame's last beat is in: hold is all there is
  logic out_idle;
  logic in_trunc, in_len, in_replay;  // the input side refused a frame this cycle, and why
  logic [31:0] cnt_trunc_reg = '0, cnt_len_reg = '0, cnt_replay_reg = '0;
  logic [31:0] cnt_opened_reg = '0, cnt_bad_tag_reg = '0;

  assign a_s_sop = first_reg;

  // Why a frame refused before the AEAD is counted, once its last beat is in: lib/core's order,
  // the bytes received, Length, Length against them, the counter.
  typedef enum logic [1:0] {
    R_TRUNC,
    R_LEN,
    R_REPLAY
  } refusal_t;
  function automatic refusal_t refusal(input logic [16:0] rx, input logic len_bad,
                                       input logic [15:0] flen);
    if (rx < 17'(DXFP_MIN_SEALED_FRAME)) return R_TRUNC;
    if (len_bad) return R_LEN;
    if (17'(flen) > rx) return R_TRUNC;
    return R_REPLAY;
  endfunction

  always_comb begin
    logic [16:0] rx_now;
    logic [15:0] flen;
    logic len_bad;
    logic [6:0] a_n;  // bytes of the AEAD's beat this cycle: the held ones and the new beat's
    logic [BW-1:0] new_hold_n;
    refusal_t why;
    in_state_next = in_state_reg;
    hidx_next = hidx_reg;
    rx_next = rx_reg;
    left_next = left_reg;
    first_next = first_reg;
    rej_len_next = rej_len_reg;
    hold_next = hold_reg;
    hold_n_next = hold_n_reg;
    hold_end_next = hold_end_reg;
    hb_next = hb_reg;
    ctr_next = ctr_reg;
    flen_next = flen_reg;
    in_trunc = 1'b0;
    in_len = 1'b0;
    in_replay = 1'b0;
    push = 1'b0;
    push_trunc = 1'b0;
    d_ready = 1'b0;
    a_s_valid = 1'b0;
    rx_now = rx_reg + 17'(d_bytes) < rx_reg ? 17'h1ffff : rx_reg + 17'(d_bytes);
    flen = hb_reg[223:208];
    len_bad = flen < 16'(DXFP_MIN_SEALED_FRAME) || flen > 16'(cfg_max_frame) ||
        flen > 16'(DXFP_MAX_FRAME) || flen[1:0] != 2'd0;
    why = refusal(rx_now, rej_len_reg, flen_reg);
    // The AEAD's beat: the held bytes, then (unless the frame is over) the new beat's first 8.
    new_hold_n = d_bytes > BW'(8) ? d_bytes - BW'(8) : '0;
    if (hold_end_reg) begin
      a_s_data = hold_reg;
      a_n = 7'(hold_n_reg);
    end else begin
      a_s_data = hold_reg | (d_data >> (DATA_WIDTH - 64));
      a_n = 7'(hold_n_reg) + (d_bytes > BW'(8) ? 7'd8 : 7'(d_bytes));
    end
    a_s_bytes = 16'(a_n) > left_reg ? BW'(left_reg) : BW'(a_n);
    a_s_eop = 16'(a_n) >= left_reg || hold_end_reg || (d_last && new_hold_n == '0);
    unique case (in_state_reg)
      I_HDR:
      if (d_valid) begin
        if (hidx_reg == 2'd0 && (d_data[DATA_WIDTH-17-:8] & F_SEALED) == 8'd0) begin
          // In the clear: after every sealed frame before it has gone out.
          if (pend_n_reg == '0 && out_idle) in_state_next = I_PASS;
        end else begin
          d_ready = 1'b1;
          hb_next = 256'({hb_reg, d_data});
          rx_next = hidx_reg == 2'd0 ? 17'(d_bytes) : rx_now;
          hidx_next = hidx_reg + 2'd1;
          if (d_last) begin
            in_trunc = 1'b1;
            hidx_next = '0;
          end else if (hidx_reg == 2'(HB - 1)) begin
            in_state_next = I_CTR;
          end
        end
      end
      I_CTR:
      if (d_valid) begin
        rx_next = rx_now;
        flen_next = flen;
        ctr_next = d_ctr;
        why = refusal(rx_now, len_bad, flen);
        if (d_last && d_bytes <= BW'(8)) begin
          d_ready = 1'b1;
          in_trunc = 1'b1;  // 40 bytes at most
          in_state_next = I_HDR;
        end else if (len_bad || !fresh(d_ctr, wnext_reg, win_reg[d_ctr[11:6]])) begin
          d_ready = 1'b1;
          rej_len_next = len_bad;
          in_state_next = I_REJ;
          if (d_last) begin  // a 256-bit beat: the frame is all in
            in_trunc = why == R_TRUNC;
            in_len = why == R_LEN;
            in_replay = why == R_REPLAY;
            in_state_next = I_HDR;
          end
        end else if (!waiting && pend_n_reg < 3'(PEND - 1)) begin
          d_ready = 1'b1;
          left_next = flen - 16'(DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE);
          first_next = 1'b1;
          hold_next = d_data << 64;
          hold_n_next = new_hold_n;
          hold_end_next = d_last;
          in_state_next = I_FEED;
        end
      end
      I_FEED: begin
        a_s_valid = d_valid || hold_end_reg;
        d_ready = a_s_ready && !hold_end_reg;
        if (a_s_valid && a_s_ready) begin
          if (!hold_end_reg) rx_next = rx_now;
          first_next = 1'b0;
          left_next = left_reg - 16'(a_s_bytes);
          hold_next = d_data << 64;
          hold_n_next = new_hold_n;
          hold_end_next = hold_end_reg || d_last;
          if (a_s_eop) begin
            push = 1'b1;
            push_trunc = left_reg > 16'(a_n);  // the frame ended before Length
            in_state_next = (hold_end_reg || d_last) ? I_HDR : I_PAD;
          end
        end
      end
      I_PAD: begin
        d_ready = 1'b1;
        if (d_valid && d_last) in_state_next = I_HDR;
      end
      I_REJ: begin
        d_ready = 1'b1;
        if (d_valid) begin
          rx_next = rx_now;
          if (d_last) begin
            in_trunc = why == R_TRUNC;
            in_len = why == R_LEN;
            in_replay = why == R_REPLAY;
            in_state_next = I_HDR;
          end
        end
      end
      I_PASS: begin  // the output side passes the beats on (it is idle: O_IDLE)
        d_ready = u_ready;
        if (d_valid && u_ready && d_last) in_state_next = I_HDR;
      end
      default: ;
    endcase
    if (in_state_next == I_HDR && in_state_reg != I_HDR) hidx_next = '0;
  end

  // ---- output: the header in the clear, the plaintext, the trailer with the verdict ----
  typedef enum logic [1:0] {
    O_IDLE,
    O_HDR,   // the header's beats, from the AEAD's first beat out
    O_DATA,  // the plaintext
    O_TRL    // the trailer's last bytes, when the last plaintext beat had no room for them
  } out_state_t;
  out_state_t out_state_reg = O_IDLE, out_state_next;
  logic [1:0] oidx_reg = '0, oidx_next;
  logic [BW-1:0] tail_reg = '0, tail_next;
  logic [1:0] mark_reg = '0, mark_next;
  logic [DATA_WIDTH-1:0] u_data;
  logic [BW-1:0] u_bytes;
  logic [1:0] u_mark;
  logic u_last, u_valid, u_ready;
  logic out_trunc, out_replay, out_bad_tag, out_opened;  // a verdict on the output side
  assign out_idle = out_state_reg == O_IDLE;

  always_comb begin
    logic [255:0] h;
    logic [63:0] pc;
    logic [1:0] mark;
    logic [6:0] with_trl;
    logic [63:0] from, to, span;  // the ring's words the window moves over
    from = '0;
    to = '0;
    span = '0;
    out_state_next = out_state_reg;
    oidx_next = oidx_reg;
    tail_next = tail_reg;
    mark_next = mark_reg;
    wnext_next = wnext_reg;
    win_next = win_reg;
    out_trunc = 1'b0;
    out_replay = 1'b0;
    out_bad_tag = 1'b0;
    out_opened = 1'b0;
    pop = 1'b0;
    a_m_ready = 1'b0;
    u_valid = 1'b0;
    u_data = a_m_data;
    u_bytes = BW'(BB);
    u_last = 1'b0;
    u_mark = MARK_PLAIN;
    // The header as the decapsulator reads a frame in the clear.
    h = a_m_hdr;
    h[239:232] = a_m_hdr[239:232] & ~F_SEALED;
    h[223:208] = a_m_hdr[223:208] - 16'(DXFP_SEAL_GROWTH);
    pc = pend_ctr_reg[pend_rd_reg];
    mark = MARK_DROP;
    with_trl = 7'(a_m_bytes) + 7'(DXFP_CRC_SIZE);
    unique case (out_state_reg)
      O_IDLE:
      if (in_state_reg == I_PASS) begin
        u_valid = d_valid;
        u_data = d_data;
        u_bytes = d_bytes;
        u_last = d_last;
      end else if (a_m_valid) begin
        out_state_next = O_HDR;
        oidx_next = '0;
      end
      O_HDR: begin
        u_valid = 1'b1;
        u_data = h[255-DATA_WIDTH*oidx_reg-:DATA_WIDTH];
        if (u_ready) begin
          oidx_next = oidx_reg + 2'd1;
          if (oidx_reg == 2'(HB - 1)) begin
            oidx_next = '0;
            out_state_next = O_DATA;
          end
        end
      end
      O_DATA:
      if (a_m_valid) begin
        u_valid = 1'b1;
        a_m_ready = u_ready;
        if (a_m_eop) begin
          // The verdict, in lib/core's order: fewer bytes than Length, the counter (frames
          // ahead of this one may have moved the window), the tag.
          if (pend_trunc_reg[pend_rd_reg]) begin
            out_trunc = u_ready;
          end else if (!fresh(pc, wnext_reg, win_reg[pc[11:6]])) begin
            out_replay = u_ready;
          end else if (a_m_tag_bad) begin
            out_bad_tag = u_ready;
          end else begin
            mark = MARK_OPENED;
          end
          // The plaintext's last bytes (the rest of the beat zero), then the trailer's four.
          u_data = a_m_data & ~({DATA_WIDTH{1'b1}} >> (8 * 32'(a_m_bytes)));
          u_bytes = with_trl > 7'(BB) ? BW'(BB) : BW'(with_trl);
          u_last = with_trl <= 7'(BB);
          u_mark = mark;
          if (u_ready) begin
            pop = 1'b1;
            mark_next = mark;
            tail_next = with_trl > 7'(BB) ? BW'(with_trl - 7'(BB)) : '0;
            out_state_next = with_trl > 7'(BB) ? O_TRL : O_IDLE;
            if (mark == MARK_OPENED) begin
              // Take the counter (lib/core's dxfp_replay_take).
              out_opened = 1'b1;
              if (pc >= wnext_reg) begin
                from = (wnext_reg >> 6) + ((wnext_reg[5:0] != 6'd0) ? 64'd1 : 64'd0);
                to = pc >> 6;
                span = to - from + 64'd1;
                for (int i = 0; i < WORDS; i++)
                  if (wnext_reg == '0 || span >= 64'(WORDS) ||
                      (span != '0 && 64'(6'(6'(i) - from[5:0])) < span))
                    win_next[i] = '0;
                wnext_next = pc + 64'd1;
              end
              win_next[pc[11:6]][pc[5:0]] = 1'b1;
            end
          end
        end
      end
      O_TRL: begin
        u_valid = 1'b1;
        u_data = '0;
        u_bytes = tail_reg;
        u_last = 1'b1;
        u_mark = mark_reg;
        if (u_ready) out_state_next = O_IDLE;
      end
      default: ;
    endcase
  end

  assign u_ready = m_frm_ready;
  assign m_frm_data = u_data;
  assign m_frm_bytes = u_bytes;
  assign m_frm_last = u_last;
  assign m_frm_mark = u_mark;
  assign m_frm_valid = u_valid;

  always_ff @(posedge clk) begin
    in_state_reg <= in_state_next;
    hidx_reg <= hidx_next;
    rx_reg <= rx_next;
    left_reg <= left_next;
    first_reg <= first_next;
    rej_len_reg <= rej_len_next;
    hold_reg <= hold_next;
    hold_n_reg <= hold_n_next;
    hold_end_reg <= hold_end_next;
    hb_reg <= hb_next;
    ctr_reg <= ctr_next;
    flen_reg <= flen_next;
    out_state_reg <= out_state_next;
    oidx_reg <= oidx_next;
    tail_reg <= tail_next;
    mark_reg <= mark_next;
    wnext_reg <= wnext_next;
    win_reg <= win_next;
    cnt_trunc_reg <= cnt_trunc_reg + 32'(in_trunc) + 32'(out_trunc);
    cnt_len_reg <= cnt_len_reg + 32'(in_len);
    cnt_replay_reg <= cnt_replay_reg + 32'(in_replay) + 32'(out_replay);
    cnt_opened_reg <= cnt_opened_reg + 32'(out_opened);
    cnt_bad_tag_reg <= cnt_bad_tag_reg + 32'(out_bad_tag);
    if (push) begin
      pend_ctr_reg[pend_wr_reg] <= ctr_reg;
      pend_trunc_reg[pend_wr_reg] <= push_trunc;
      pend_wr_reg <= pend_wr_reg + 2'd1;
    end
    if (pop) pend_rd_reg <= pend_rd_reg + 2'd1;
    pend_n_reg <= pend_n_reg + (push ? 3'd1 : 3'd0) - (pop ? 3'd1 : 3'd0);
    if (start) begin
      key_reg <= cfg_key;
      wnext_reg <= '0;  // the first counter taken clears the ring
    end
    if (rst) begin
      in_state_reg <= I_HDR;
      hidx_reg <= '0;
      out_state_reg <= O_IDLE;
      pend_wr_reg <= '0;
      pend_rd_reg <= '0;
      pend_n_reg <= '0;
      wnext_reg <= '0;
      key_reg <= '0;
      cnt_trunc_reg <= '0;
      cnt_len_reg <= '0;
      cnt_replay_reg <= '0;
      cnt_opened_reg <= '0;
      cnt_bad_tag_reg <= '0;
    end
  end

  assign m_cnt_opened = cnt_opened_reg;
  assign m_cnt_bad_tag = cnt_bad_tag_reg;
  assign m_cnt_replayed = cnt_replay_reg;
  assign m_cnt_truncated = cnt_trunc_reg;
  assign m_cnt_bad_length = cnt_len_reg;

endmodule

`resetall
