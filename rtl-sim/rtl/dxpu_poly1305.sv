// dxpu_poly1305 - the Poly1305 one-time authenticator of RFC 8439 (section 2.5) over a stream of
// DATA_WIDTH-bit beats (64 or 256), one beat per cycle when unstalled; with key_aead, the message
// of the AEAD construction (RFC 8439 2.8): the AAD zero-padded to 16 bytes, the ciphertext
// zero-padded to 16 bytes, then the lengths of both as two 64-bit little-endian numbers.
//
// A message starts with its key (key_valid while key_ready: r in bytes 0..15, s in 16..31, byte 0
// in bits 255:248) and its mode (key_aead). Its bytes then come as beats, byte 0 of a beat in
// its top bits (docs/rtl.md), in segments: a beat with s_last ends a segment and carries s_bytes
// bytes (0..DATA_WIDTH/8, more counts as all); every other beat is full. Plain mode: one segment,
// the message (an empty one: a beat with s_last and s_bytes 0). AEAD mode: the AAD segment (s_aad
// high on its beats), then the ciphertext segment (s_aad low); each at least one beat. The tag
// comes out on m_tag (byte 0 in bits 127:120) and stays until taken (m_tag_ready); the next key
// is taken after that. The caller is trusted (the AEAD engine): the stream is not checked.
//
// Pipeline: the beats are cut or paired into groups of G 16-byte blocks (G = 1 at 64 bits: two
// beats a block; G = 2 at 256: a beat is two blocks), a group (k of its G blocks used, k >= 1)
// goes through one multiply-accumulate a cycle (radix 2^26, carries in the same cycle):
//   G = 1:  h = (h + m1) * r                     mod 2^130 - 5   25 limb products
//   G = 2:  h = (h + m1) * r^2 + m2 * r           (k = 2)         50 limb products
//           h = (h + m1) * r                      (k = 1: a segment's odd last block)
// r^2 is computed by the same multiplier on the cycle after the key (h = 0, m1 = r, times r), so
// a 256-bit message's first beat is taken two cycles after its key, a 64-bit one's one cycle
// after. The products are 27 x 29-bit (the limbs of h + m against r, r^2 and 5 r, 5 r^2 for the
// wrap-around), five column sums of 5 (G = 1) or 10 (G = 2) products, then the carry chain. The
// AEAD's length block follows the last block; the tag is ready 3 cycles after the last beat (the
// last group, the length block, then the reduction mod p and the addition of s on the tag's
// output, no register of its own).
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
  if (DATA_WIDTH != 64 && DATA_WIDTH != 256) begin : g_bad_width
    $error("dxpu_poly1305: DATA_WIDTH %0d must be 64 or 256", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_poly1305: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end
  if (LEN_WIDTH < 16 || LEN_WIDTH > 64) begin : g_bad_len
    $error("dxpu_poly1305: LEN_WIDTH %0d must be 16..64", LEN_WIDTH);
  end

  localparam int BB = DATA_WIDTH / 8;  // bytes per beat
  localparam int G = DATA_WIDTH == 256 ? 2 : 1;  // blocks per group
  localparam int GB = 16 * G;  // bytes per group
  localparam int BPG = GB / BB;  // beats per group: 2 at 64 bits, 1 at 256

  typedef logic [4:0][63:0] limbs_t;  // a number in radix 2^26, each limb in 64 bits

  // ---- key and message state ----
  logic running_reg = 1'b0, running_next;  // a key was taken; its tag not yet
  logic aead_reg = 1'b0, aead_next;
  limbs_t r_reg = '0, r_next;  // r, clamped
  limbs_t r2_reg = '0, r2_next;  // r^2 mod p (G = 2), limbs of 26 bits (limb 1: 27)
  logic sq_reg = 1'b0, sq_next;  // r^2 is computed this cycle
  logic [127:0] s_reg = '0, s_next;
  logic [LEN_WIDTH-1:0] aad_len_reg = '0, aad_len_next;
  logic [LEN_WIDTH-1:0] txt_len_reg = '0, txt_len_next;
  logic in_done_reg = 1'b0, in_done_next;  // the message's last beat was taken
  logic len_pending_reg = 1'b0, len_pending_next;  // AEAD: the length block still to go

  // ---- group assembly ----
  logic [8*GB-1:0] part_reg = '0, part_next;  // a group's first beats, wire order from the top
  logic part_n_reg = 1'b0, part_n_next;  // beats held (64 bits: 0 or 1)
  logic [G-1:0][129:0] grp_reg = '0, grp_next;  // the group's blocks with their 2^(8*len) bit
  logic [1:0] grp_k_reg = '0, grp_k_next;  // blocks used, 0: none waiting
  limbs_t h_reg = '0, h_next;

  // ---- the tag: h reduced and s added as soon as every group went through ----
  wire logic tag_valid = running_reg && in_done_reg && !len_pending_reg && grp_k_reg == '0;

  wire logic in_ready = running_reg && !in_done_reg && !sq_reg;
  wire logic fire = s_valid && in_ready;

  function automatic limbs_t to_limbs(input logic [129:0] x);
    limbs_t l;
    for (int i = 0; i < 5; i++) l[i] = 64'(x[26*i+:26]);
    return l;
  endfunction

  // The column sums of a * b mod 2^130 - 5 (5 b_i folds 2^130 back to 5): 25 limb products.
  function automatic limbs_t mul_cols(input limbs_t a, input limbs_t b);
    limbs_t d;
    logic [4:1][63:0] s5;
    for (int i = 1; i < 5; i++) s5[i] = b[i] * 64'd5;
    d[0] = a[0] * b[0] + a[1] * s5[4] + a[2] * s5[3] + a[3] * s5[2] + a[4] * s5[1];
    d[1] = a[0] * b[1] + a[1] * b[0] + a[2] * s5[4] + a[3] * s5[3] + a[4] * s5[2];
    d[2] = a[0] * b[2] + a[1] * b[1] + a[2] * b[0] + a[3] * s5[4] + a[4] * s5[3];
    d[3] = a[0] * b[3] + a[1] * b[2] + a[2] * b[1] + a[3] * b[0] + a[4] * s5[4];
    d[4] = a[0] * b[4] + a[1] * b[3] + a[2] * b[2] + a[3] * b[1] + a[4] * b[0];
    return d;
  endfunction

  // The carries, back to limbs of 26 bits (limb 1 may keep one more).
  function automatic limbs_t carry(input limbs_t d);
    logic [63:0] c;
    limbs_t t = d;
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
    return t;
  endfunction

  function automatic limbs_t add_limbs(input limbs_t a, input limbs_t b);
    limbs_t r;
    for (int i = 0; i < 5; i++) r[i] = a[i] + b[i];
    return r;
  endfunction

  // The tag: h fully reduced mod 2^130 - 5, plus s, mod 2^128; byte 0 at the top.
  function automatic logic [127:0] finish(input limbs_t h, input logic [127:0] s);
    logic [132:0] acc = '0;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [130:0] g;  // bits 129:128 are gone mod 2^128
    /* verilator lint_on UNUSEDSIGNAL */
    logic [127:0] hr;
    for (int i = 0; i < 5; i++) acc = acc + (133'(h[i][26:0]) << (26 * i));
    acc = 133'(acc[129:0]) + 133'(acc[132:130]) * 133'd5;  // < 2^130 + 35 < 2p
    g = acc[130:0] + 131'd5;  // h - p + 2^130
    hr = g[130] ? g[127:0] : acc[127:0];
    return bswap128(hr + s);
  endfunction

  always_comb begin
    logic [BYTES_WIDTH-1:0] n;
    logic [DATA_WIDTH-1:0] beat;
    logic [8*GB-1:0] whole;
    logic [6:0] total;  // the group's bytes
    logic [6:0] blen;
    logic form;
    logic [127:0] r;
    limbs_t a0, b0, a1, b1, d;

    running_next = running_reg;
    aead_next = aead_reg;
    r_next = r_reg;
    r2_next = r2_reg;
    sq_next = 1'b0;
    s_next = s_reg;
    aad_len_next = aad_len_reg;
    txt_len_next = txt_len_reg;
    in_done_next = in_done_reg;
    len_pending_next = len_pending_reg;
    part_next = part_reg;
    part_n_next = part_n_reg;
    grp_next = grp_reg;
    grp_k_next = '0;
    h_next = h_reg;

    // The multiply-accumulate: the group waiting (h + m1 against r^k), or r^2 after a key.
    a0 = add_limbs(h_reg, to_limbs(grp_reg[0]));
    b0 = (G == 2 && grp_k_reg == 2'd2) ? r2_reg : r_reg;
    a1 = (G == 2 && grp_k_reg == 2'd2) ? to_limbs(grp_reg[G-1]) : '0;
    b1 = r_reg;
    if (sq_reg) begin
      a0 = r_reg;
      b0 = r_reg;
      a1 = '0;
    end
    d = mul_cols(a0, b0);
    if (G == 2) d = add_limbs(d, mul_cols(a1, b1));
    if (sq_reg) r2_next = carry(d);
    else if (grp_k_reg != '0) h_next = carry(d);

    // A beat: its bytes after the group's earlier beats; a full group, or a segment's end, forms
    // the group (a segment's last beat pads).
    n = BYTES_WIDTH'(BB);
    if (s_last && s_bytes < BYTES_WIDTH'(BB)) n = s_bytes;
    beat = s_data;
    for (int i = 0; i < BB; i++) if (BYTES_WIDTH'(i) >= n) beat[DATA_WIDTH-1-8*i-:8] = 8'h00;
    whole = part_reg | (((8 * GB)'(beat) << (8 * GB - DATA_WIDTH)) >> (DATA_WIDTH * 32'(part_n_reg)));
    total = 7'(part_n_reg) * 7'(BB) + 7'(n);
    form = 1'b0;
    blen = '0;
    r = bswap128(key[255:128]) & 128'h0ffffffc0ffffffc0ffffffc0fffffff;
    if (fire) begin
      if (!s_last) begin
        if (32'(part_n_reg) == BPG - 1) begin
          form = 1'b1;
          part_n_next = 1'b0;
          part_next = '0;
        end else begin
          part_next = whole;
          part_n_next = 1'b1;
        end
      end else begin
        form = total != 7'd0;
        part_n_next = 1'b0;
        part_next = '0;
      end
      if (form) begin
        // Block j: a full one, or an AEAD segment's padded to 16: 2^128; a short plain one:
        // 2^(8*len).
        grp_k_next = 2'((total + 7'd15) >> 4);
        for (int j = 0; j < G; j++) begin
          blen = total > 7'(16 * j) ? total - 7'(16 * j) : 7'd0;
          if (blen > 7'd16) blen = 7'd16;
          grp_next[j] = {2'b00, bswap128(whole[8*GB-1-128*j-:128])};
          if (blen == 7'd16 || aead_reg) grp_next[j] = grp_next[j] | (130'd1 << 128);
          else grp_next[j] = grp_next[j] | (130'd1 << (8 * blen));
        end
      end
      if (aead_reg && s_aad) aad_len_next = aad_len_reg + LEN_WIDTH'(n);
      else txt_len_next = txt_len_reg + LEN_WIDTH'(n);
      if (s_last && !(aead_reg && s_aad)) begin
        in_done_next = 1'b1;
        len_pending_next = aead_reg;
      end
    end

    // The AEAD's length block, the cycle after the last data group formed.
    if (len_pending_reg) begin
      grp_next = '0;
      grp_next[0] = {2'b01, 64'(txt_len_reg), 64'(aad_len_reg)};
      grp_k_next = 2'd1;
      len_pending_next = 1'b0;
    end

    // The tag taken: the message is done.
    if (tag_valid && m_tag_ready) running_next = 1'b0;

    // A new key starts a message (and r^2, the next cycle).
    if (key_valid && !running_reg) begin
      r_next = to_limbs({2'b00, r});
      sq_next = G == 2;
      s_next = bswap128(key[127:0]);
      aead_next = key_aead;
      running_next = 1'b1;
      aad_len_next = '0;
      txt_len_next = '0;
      in_done_next = 1'b0;
      len_pending_next = 1'b0;
      part_n_next = 1'b0;
      part_next = '0;
      h_next = '0;
    end
  end

  always_ff @(posedge clk) begin
    running_reg <= running_next;
    aead_reg <= aead_next;
    r_reg <= r_next;
    r2_reg <= r2_next;
    sq_reg <= sq_next;
    s_reg <= s_next;
    aad_len_reg <= aad_len_next;
    txt_len_reg <= txt_len_next;
    in_done_reg <= in_done_next;
    len_pending_reg <= len_pending_next;
    part_reg <= part_next;
    part_n_reg <= part_n_next;
    grp_reg <= grp_next;
    grp_k_reg <= grp_k_next;
    h_reg <= h_next;
    if (rst) begin
      running_reg <= 1'b0;
      sq_reg <= 1'b0;
      grp_k_reg <= '0;
      in_done_reg <= 1'b0;
      len_pending_reg <= 1'b0;
      part_n_reg <= 1'b0;
      part_reg <= '0;
    end
  end

  assign key_ready = !running_reg;
  assign s_ready = in_ready;
  assign m_tag = finish(h_reg, s_reg);
  assign m_tag_valid = tag_valid;

endmodule

`resetall
