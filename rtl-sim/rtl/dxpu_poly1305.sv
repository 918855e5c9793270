// dxpu_poly1305 - the Poly1305 one-time authenticator of RFC 8439 (section 2.5) over a stream of
// 64-bit beats, one beat per cycle when unstalled; with key_aead, the message of the AEAD
// construction (RFC 8439 2.8): the AAD zero-padded to 16 bytes, the ciphertext zero-padded to 16
// bytes, then the lengths of both as two 64-bit little-endian numbers.
//
// A message starts with its key (key_valid while key_ready: r in bytes 0..15, s in 16..31, byte 0
// in bits 255:248) and its mode (key_aead). Its bytes then come as beats, byte 0 of a beat in
// bits 63:56 (docs/rtl.md), in segments: a beat with s_last ends a segment and carries s_bytes
// bytes (0..8, more counts as 8); every other beat is full. Plain mode: one segment, the message
// (an empty one: a beat with s_last and s_bytes 0). AEAD mode: the AAD segment (s_aad high on its
// beats), then the ciphertext segment (s_aad low); each at least one beat. The tag comes out on
// m_tag (byte 0 in bits 127:120) and stays until taken (m_tag_ready); the next key is taken after
// that. The caller is trusted (the AEAD engine): the stream is not checked.
//
// Pipeline: beats pair up into 16-byte blocks; a block is multiplied and accumulated,
// h = (h + m) * r mod 2^130 - 5, in two register stages (radix 2^26: stage 1 the 25 limb
// products and their five column sums, r1..r4 taken times 5 for the wrap-around; stage 2 the
// carries), so one block every two cycles: 8 bytes per cycle. A segment end can make two blocks a
// cycle apart: then the input waits a cycle. The AEAD's length block follows the last block;
// the tag is ready 3 to 5 cycles after the last beat (the final carry, the reduction mod p and
// the addition of s: one more stage).
`resetall
`default_nettype none

module dxpu_poly1305
  import dxpu_aead_pkg::*;
#(
    parameter int DATA_WIDTH  = 64,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int LEN_WIDTH   = 32   // bytes counted per segment (the length block's numbers)
) (
    input wire logic clk,
    input wire logic rst,

    input  wire logic         key_valid,
    output wire logic         key_ready,
    input  wire logic [255:0] key,
    input  wire logic         key_aead,  // AEAD padding and length block

    input  wire logic [ DATA_WIDTH-1:0] s_data,
    input  wire logic [BYTES_WIDTH-1:0] s_bytes,  // bytes of a segment's last beat
    input  wire logic                   s_aad,    // AEAD mode: a beat of the AAD segment
    input  wire logic                   s_last,   // the last beat of a segment
    input  wire logic                   s_valid,
    output wire logic                   s_ready,

    output wire logic [127:0] m_tag,
    output wire logic         m_tag_valid,
    input  wire logic         m_tag_ready
);

  // Parameters checked at elaboration.
  if (DATA_WIDTH != 64) begin : g_bad_width
    $error("dxpu_poly1305: DATA_WIDTH %0d must be 64 (a 16-byte block every two beats)",
           DATA_WIDTH);
  end
  if (BYTES_WIDTH != 4) begin : g_bad_bytes
    $error("dxpu_poly1305: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end
  if (LEN_WIDTH < 16 || LEN_WIDTH > 64) begin : g_bad_len
    $error("dxpu_poly1305: LEN_WIDTH %0d must be 16..64", LEN_WIDTH);
  end

  localparam logic [25:0] M26 = 26'h3ffffff;

  // A beat's first n bytes as a little-endian number (the rest zero).
  function automatic logic [63:0] le_bytes(input logic [63:0] beat, input logic [3:0] n);
    return bswap64(first_bytes(beat, n));
  endfunction

  // ---- key and message state ----
  logic running_reg = 1'b0, running_next;  // a key was taken; its tag not yet
  logic aead_reg = 1'b0, aead_next;
  logic [25:0] r_reg[5], r_next[5];  // r, clamped, in radix 2^26
  logic [127:0] s_reg = '0, s_next;
  logic [LEN_WIDTH-1:0] aad_len_reg = '0, aad_len_next;
  logic [LEN_WIDTH-1:0] txt_len_reg = '0, txt_len_next;
  logic in_done_reg = 1'b0, in_done_next;  // the message's last beat was taken
  logic len_pending_reg = 1'b0, len_pending_next;  // AEAD: the length block still to go

  // ---- block assembly ----
  logic [63:0] half_reg = '0, half_next;  // a block's first 8 bytes, little-endian
  logic half_full_reg = 1'b0, half_full_next;
  logic [129:0] blk_reg = '0, blk_next;  // a block with its 2^(8*len) bit, waiting for stage 1
  logic blk_valid_reg = 1'b0, blk_valid_next;

  // ---- the multiply-accumulate: stage 1 (products), stage 2 (carries) ----
  logic [63:0] d_reg[5], d_next[5];
  logic d_valid_reg = 1'b0, d_valid_next;
  logic [26:0] h_reg[5], h_next[5];

  // ---- the tag ----
  logic [127:0] tag_reg = '0, tag_next;
  logic tag_valid_reg = 1'b0, tag_valid_next;

  // A block issues into stage 1 when stage 2 is not busy with the previous one (h is ready).
  wire logic issue = blk_valid_reg && !d_valid_reg;
  wire logic in_ready = running_reg && !in_done_reg && (!blk_valid_reg || issue);
  wire logic fire = s_valid && in_ready;

  // Stage 1: d = (h + m) * r, column sums of the limb products (5 r_i folds 2^130 back to 5).
  function automatic void mac_stage1(input logic [26:0] h[5], input logic [129:0] m,
                                     input logic [25:0] r[5], output logic [63:0] d[5]);
    logic [63:0] a[5], rr[5], s5[5];
    for (int i = 0; i < 5; i++) begin
      a[i] = 64'(h[i]) + 64'(m[26*i+:26]);
      rr[i] = 64'(r[i]);
      s5[i] = 64'(r[i]) * 64'd5;
    end
    d[0] = a[0] * rr[0] + a[1] * s5[4] + a[2] * s5[3] + a[3] * s5[2] + a[4] * s5[1];
    d[1] = a[0] * rr[1] + a[1] * rr[0] + a[2] * s5[4] + a[3] * s5[3] + a[4] * s5[2];
    d[2] = a[0] * rr[2] + a[1] * rr[1] + a[2] * rr[0] + a[3] * s5[4] + a[4] * s5[3];
    d[3] = a[0] * rr[3] + a[1] * rr[2] + a[2] * rr[1] + a[3] * rr[0] + a[4] * s5[4];
    d[4] = a[0] * rr[4] + a[1] * rr[3] + a[2] * rr[2] + a[3] * rr[1] + a[4] * rr[0];
  endfunction

  // Stage 2: the carries, back to limbs of 26 bits (h1 may keep one more).
  function automatic void mac_stage2(input logic [63:0] d[5], output logic [26:0] h[5]);
    logic [63:0] c, t[5];
    for (int i = 0; i < 5; i++) t[i] = d[i];
    for (int i = 0; i < 4; i++) begin
      c = t[i] >> 26;
      t[i] = 64'(t[i][25:0]);
      t[i+1] = t[i+1] + c;
    end
    c = t[4] >> 26;
    t[4] = 64'(t[4][25:0]);
    t[0] = t[0] + c * 64'd5;
    c = t[0] >> 26;
    t[0] = 64'(t[0][25:0]);
    t[1] = t[1] + c;
    for (int i = 0; i < 5; i++) h[i] = t[i][26:0];
  endfunction

  // The tag: h fully reduced mod 2^130 - 5, plus s, mod 2^128; byte 0 at the top.
  function automatic logic [127:0] finish(input logic [26:0] h[5], input logic [127:0] s);
    logic [132:0] acc = '0;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [130:0] g;  // bits 129:128 are gone mod 2^128
    /* verilator lint_on UNUSEDSIGNAL */
    logic [127:0] hr;
    for (int i = 0; i < 5; i++) acc = acc + (133'(h[i]) << (26 * i));
    acc = 133'(acc[129:0]) + 133'(acc[132:130]) * 133'd5;  // < 2^130 + 35 < 2p
    g = acc[130:0] + 131'd5;  // h - p + 2^130
    hr = g[130] ? g[127:0] : acc[127:0];
    return bswap128(hr + s);
  endfunction

  always_comb begin
    logic [3:0] n;
    logic [63:0] le;
    logic [4:0] total;
    logic [129:0] m;
    logic form;
    logic [127:0] r;

    running_next = running_reg;
    aead_next = aead_reg;
    r_next = r_reg;
    s_next = s_reg;
    aad_len_next = aad_len_reg;
    txt_len_next = txt_len_reg;
    in_done_next = in_done_reg;
    len_pending_next = len_pending_reg;
    half_next = half_reg;
    half_full_next = half_full_reg;
    blk_next = blk_reg;
    blk_valid_next = blk_valid_reg;
    d_next = d_reg;
    d_valid_next = 1'b0;
    h_next = h_reg;
    tag_next = tag_reg;
    tag_valid_next = tag_valid_reg;

    // Stage 2 of the block issued last cycle.
    if (d_valid_reg) mac_stage2(d_reg, h_next);
    // Stage 1.
    if (issue) begin
      mac_stage1(h_reg, blk_reg, r_reg, d_next);
      d_valid_next = 1'b1;
      blk_valid_next = 1'b0;
    end

    // A beat: into the first half of a block, or completing one (a segment's last beat pads).
    n = 4'd8;
    if (s_last && s_bytes < 4'd8) n = s_bytes;
    le = le_bytes(s_data, n);
    total = (half_full_reg ? 5'd8 : 5'd0) + 5'(n);
    m = half_full_reg ? {2'b00, le, half_reg} : {66'd0, le};
    form = 1'b0;
    r = bswap128(key[255:128]) & 128'h0ffffffc0ffffffc0ffffffc0fffffff;
    if (fire) begin
      if (!s_last) begin
        if (half_full_reg) form = 1'b1;
        else half_next = le;
        half_full_next = !half_full_reg;
      end else begin
        form = total != 5'd0;
        half_full_next = 1'b0;
      end
      if (form) begin
        // A full block, or an AEAD segment padded to 16: 2^128; a short plain one: 2^(8*total).
        if (total == 5'd16 || aead_reg) blk_next = m | (130'd1 << 128);
        else blk_next = m | (130'd1 << (8 * total));
        blk_valid_next = 1'b1;
      end
      if (aead_reg && s_aad) aad_len_next = aad_len_reg + LEN_WIDTH'(n);
      else txt_len_next = txt_len_reg + LEN_WIDTH'(n);
      if (s_last && !(aead_reg && s_aad)) begin
        in_done_next = 1'b1;
        len_pending_next = aead_reg;
      end
    end

    // The AEAD's length block, once the last data block has left the slot.
    if (len_pending_reg && (!blk_valid_reg || issue)) begin
      blk_next = {2'b01, 64'(txt_len_reg), 64'(aad_len_reg)};
      blk_valid_next = 1'b1;
      len_pending_next = 1'b0;
    end

    // The tag, once every block went through both stages.
    if (running_reg && in_done_reg && !len_pending_reg && !blk_valid_reg && !d_valid_reg &&
        !tag_valid_reg) begin
      tag_next = finish(h_reg, s_reg);
      tag_valid_next = 1'b1;
    end
    if (tag_valid_reg && m_tag_ready) begin
      tag_valid_next = 1'b0;
      running_next = 1'b0;
    end

    // A new key starts a message.
    if (key_valid && !running_reg) begin
      for (int i = 0; i < 5; i++) r_next[i] = 26'(130'(r) >> (26 * i)) & M26;
      s_next = bswap128(key[127:0]);
      aead_next = key_aead;
      running_next = 1'b1;
      aad_len_next = '0;
      txt_len_next = '0;
      in_done_next = 1'b0;
      len_pending_next = 1'b0;
      half_full_next = 1'b0;
      for (int i = 0; i < 5; i++) h_next[i] = '0;
    end
  end

  always_ff @(posedge clk) begin
    running_reg <= running_next;
    aead_reg <= aead_next;
    r_reg <= r_next;
    s_reg <= s_next;
    aad_len_reg <= aad_len_next;
    txt_len_reg <= txt_len_next;
    in_done_reg <= in_done_next;
    len_pending_reg <= len_pending_next;
    half_reg <= half_next;
    half_full_reg <= half_full_next;
    blk_reg <= blk_next;
    blk_valid_reg <= blk_valid_next;
    d_reg <= d_next;
    d_valid_reg <= d_valid_next;
    h_reg <= h_next;
    tag_reg <= tag_next;
    tag_valid_reg <= tag_valid_next;
    if (rst) begin
      running_reg <= 1'b0;
      blk_valid_reg <= 1'b0;
      d_valid_reg <= 1'b0;
      tag_valid_reg <= 1'b0;
      in_done_reg <= 1'b0;
      len_pending_reg <= 1'b0;
      half_full_reg <= 1'b0;
    end
  end

  assign key_ready = !running_reg;
  assign s_ready = in_ready;
  assign m_tag = tag_reg;
  assign m_tag_valid = tag_valid_reg;

endmodule

`resetall
