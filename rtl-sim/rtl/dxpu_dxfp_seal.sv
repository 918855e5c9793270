// dxpu_dxfp_seal - the sealing side of a sealed DxFP session (docs/protocol.md 4.12, docs/rtl.md
// "The sealed port"): the encapsulator's frames in (header, records, CRC32C trailer; built into
// cfg_max_frame - DXFP_SEAL_GROWTH bytes), each out sealed as lib/core's dxfp_frame_seal() seals
// it:
//
//   header (32, clear: Flags | SEALED, Length + 20) | counter (8, big-endian) | records
//   (ChaCha20-Poly1305 ciphertext) | tag (16)
//
// The AAD is the changed header and the counter; the nonce is the counter (dxpu_aead_chacha20
// poly1305 does both). The counter counts frames from cfg_counter (loaded by start, with the key)
// and is never used twice: a retransmission is a new frame from the encapsulator, sealed under the
// next counter. The CRC32C the encapsulator appended is dropped (the tag takes its place). The
// frames are trusted (this end's own encapsulator): a frame is its header's Length bytes.
//
// The AEAD is 64 bits wide: in a wider port the frames are cut into 64-bit beats in front of it
// (dxpu_beat_down) and gathered again after it (dxpu_beat_up), so the sealing side carries 8
// bytes a cycle whatever DATA_WIDTH is (docs/rtl.md says why, and what a wider engine needs).
// Timing at 64 bits: one payload beat per cycle within a frame; per frame the header's four
// beats in, the AEAD's start (about 17 cycles) and the header and counter out (five beats).
`resetall
`default_nettype none

module dxpu_dxfp_seal
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int DOUBLE_ROUNDS_PER_CYCLE = DATA_WIDTH == 256 ? 5 : 2
) (
    input wire logic clk,
    input wire logic rst,

    // The session's sending key and first counter, loaded by start
    input wire logic         start,
    input wire logic [255:0] cfg_key,      // byte 0 in bits 255:248
    input wire logic [ 63:0] cfg_counter,

    // Frames from the encapsulator
    input  wire logic [ DATA_WIDTH-1:0] s_frm_data,
    input  wire logic [BYTES_WIDTH-1:0] s_frm_bytes,
    input  wire logic                   s_frm_last,
    input  wire logic                   s_frm_valid,
    output wire logic                   s_frm_ready,

    // Sealed frames
    output wire logic [ DATA_WIDTH-1:0] m_frm_data,
    output wire logic [BYTES_WIDTH-1:0] m_frm_bytes,
    output wire logic                   m_frm_last,
    output wire logic                   m_frm_valid,
    input  wire logic                   m_frm_ready,

    output wire logic [63:0] m_next_counter,  // the counter the next frame is sealed with
    output wire logic [31:0] m_cnt_frames     // frames sealed (out whole)
);

  // Parameters checked at elaboration.
  if (!width_ok(DATA_WIDTH)) begin : g_bad_width
    $error("dxpu_dxfp_seal: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_dxfp_seal: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end

  // ---- 64-bit beats in ----
  logic [63:0] d_data;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [3:0] d_bytes;  // the Length field says where the records end
  /* verilator lint_on UNUSEDSIGNAL */
  logic d_last, d_valid, d_ready;
  dxpu_beat_down #(
      .DATA_WIDTH(DATA_WIDTH)
  ) u_down (
      .clk,
      .rst,
      .s_data(s_frm_data),
      .s_bytes(s_frm_bytes),
      .s_last(s_frm_last),
      .s_valid(s_frm_valid),
      .s_ready(s_frm_ready),
      .m_data(d_data),
      .m_bytes(d_bytes),
      .m_last(d_last),
      .m_valid(d_valid),
      .m_ready(d_ready)
  );

  // ---- the AEAD ----
  logic [255:0] key_reg = '0;
  logic [255:0] hdr_reg = '0, hdr_next;  // the frame's header, as sealed (the AAD's first part)
  logic [63:0] ctr_reg = '0, ctr_next;  // the next counter
  logic [63:0] fctr_reg = '0, fctr_next;  // this frame's
  logic a_s_sop, a_s_eop, a_s_valid, a_s_ready;
  logic [3:0] a_s_bytes;
  logic [255:0] a_m_hdr;
  logic [63:0] a_m_nonce, a_m_data;
  logic [3:0] a_m_bytes;
  logic a_m_eop, a_m_valid, a_m_ready;
  /* verilator lint_off UNUSEDSIGNAL */
  logic a_m_sop, a_m_decrypt, a_m_tag_ok, a_m_tag_bad;  // encrypting: no verdict
  logic [31:0] a_cnt_frames, a_cnt_tag_bad, a_cnt_stray;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_aead_chacha20poly1305 #(
      .DATA_WIDTH(64),
      .HDR_BYTES(DXFP_HDR_SIZE),
      .DOUBLE_ROUNDS_PER_CYCLE(DOUBLE_ROUNDS_PER_CYCLE)
  ) u_aead (
      .clk,
      .rst,
      .s_hdr(hdr_reg),
      .s_key(key_reg),
      .s_nonce(fctr_reg),
      .s_decrypt(1'b0),
      .s_len('0),
      .s_data(d_data),
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

  // ---- input: the header, then the records into the AEAD, the CRC dropped ----
  typedef enum logic [1:0] {
    I_HDR,  // the header's four beats
    I_REC,  // the records: the AEAD's payload
    I_CRC   // what is left (the CRC32C): dropped
  } in_state_t;
  in_state_t in_state_reg = I_HDR, in_state_next;
  logic [1:0] hidx_reg = '0, hidx_next;
  logic [15:0] left_reg = '0, left_next;  // record bytes still to go in
  logic first_reg = 1'b0, first_next;

  assign a_s_sop = first_reg;
  assign a_s_bytes = left_reg < 16'd8 ? left_reg[3:0] : 4'd8;
  assign a_s_eop = left_reg <= 16'd8;
  always_comb begin
    logic [255:0] h;
    logic [15:0] flen;
    in_state_next = in_state_reg;
    hidx_next = hidx_reg;
    left_next = left_reg;
    first_next = first_reg;
    hdr_next = hdr_reg;
    ctr_next = ctr_reg;
    fctr_next = fctr_reg;
    h = {hdr_reg[191:0], d_data};
    flen = h[223:208];
    a_s_valid = 1'b0;
    d_ready = 1'b1;
    unique case (in_state_reg)
      I_HDR:
      if (d_valid) begin
        hdr_next = h;
        hidx_next = hidx_reg + 2'd1;
        if (hidx_reg == 2'd3) begin
          // Sealed: SEALED set, Length counts the counter and the tag instead of the CRC.
          hdr_next[239:232] = h[239:232] | F_SEALED;
          hdr_next[223:208] = flen + 16'(DXFP_SEAL_GROWTH);
          left_next = flen >= 16'(DXFP_MIN_FRAME) ? flen - 16'(DXFP_MIN_FRAME) : '0;
          fctr_next = ctr_reg;
          ctr_next = ctr_reg + 64'd1;
          first_next = 1'b1;
          in_state_next = d_last ? I_HDR : I_REC;
        end
      end
      I_REC: begin
        a_s_valid = d_valid;
        d_ready = a_s_ready;
        if (d_valid && a_s_ready) begin
          first_next = 1'b0;
          left_next = left_reg - 16'(a_s_bytes);
          if (a_s_eop) in_state_next = d_last ? I_HDR : I_CRC;
        end
      end
      I_CRC: if (d_valid && d_last) in_state_next = I_HDR;
      default: ;
    endcase
  end

  // ---- output: header, counter, then the AEAD's ciphertext and tag ----
  logic [63:0] u_data;
  logic [3:0] u_bytes;
  logic u_last, u_valid, u_ready;
  logic [2:0] oidx_reg = '0, oidx_next;  // 0..3 header beats, 4 the counter, 5 the AEAD's
  logic [31:0] cnt_frames_reg = '0, cnt_frames_next;
  always_comb begin
    oidx_next = oidx_reg;
    cnt_frames_next = cnt_frames_reg;
    u_valid = a_m_valid;
    u_data = a_m_data;
    u_bytes = a_m_bytes;
    u_last = a_m_eop;
    a_m_ready = 1'b0;
    if (oidx_reg < 3'd5) begin
      // The frame's first beat waits in the AEAD while its header and counter go out.
      u_data = oidx_reg == 3'd4 ? a_m_nonce : a_m_hdr[255-64*oidx_reg[1:0]-:64];
      u_bytes = 4'd8;
      u_last = 1'b0;
      if (a_m_valid && u_ready) oidx_next = oidx_reg + 3'd1;
    end else begin
      a_m_ready = u_ready;
      if (a_m_valid && u_ready && a_m_eop) begin
        oidx_next = '0;
        cnt_frames_next = cnt_frames_reg + 32'd1;
      end
    end
  end

  /* verilator lint_off UNUSEDSIGNAL */
  logic u_user_unused;
  /* verilator lint_on UNUSEDSIGNAL */
  dxpu_beat_up #(
      .DATA_WIDTH(DATA_WIDTH)
  ) u_up (
      .clk,
      .rst,
      .s_data(u_data),
      .s_bytes(u_bytes),
      .s_last(u_last),
      .s_user(1'b0),
      .s_valid(u_valid),
      .s_ready(u_ready),
      .m_data(m_frm_data),
      .m_bytes(m_frm_bytes),
      .m_last(m_frm_last),
      .m_user(u_user_unused),
      .m_valid(m_frm_valid),
      .m_ready(m_frm_ready)
  );

  always_ff @(posedge clk) begin
    in_state_reg <= in_state_next;
    hidx_reg <= hidx_next;
    left_reg <= left_next;
    first_reg <= first_next;
    hdr_reg <= hdr_next;
    ctr_reg <= ctr_next;
    fctr_reg <= fctr_next;
    oidx_reg <= oidx_next;
    cnt_frames_reg <= cnt_frames_next;
    if (start) begin
      key_reg <= cfg_key;
      ctr_reg <= cfg_counter;
    end
    if (rst) begin
      in_state_reg <= I_HDR;
      hidx_reg <= '0;
      oidx_reg <= '0;
      key_reg <= '0;
      cnt_frames_reg <= '0;
    end
  end

  assign m_next_counter = ctr_reg;
  assign m_cnt_frames = cnt_frames_reg;

endmodule

`resetall
