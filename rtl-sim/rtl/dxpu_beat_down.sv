// dxpu_beat_down - a frame stream of DATA_WIDTH-bit beats cut into 64-bit beats (docs/rtl.md, "The
// sealed port"): what the 64-bit frame AEAD (dxpu_aead_chacha20poly1305) needs in front of it in a
// wider port. Beats as the framing modules' (bytes from the top, s_bytes bytes, every beat full but
// the s_last one; a last beat of 0 bytes gives one 64-bit beat of 0 bytes). Out: 64-bit beats,
// every one full but the frame's last. DATA_WIDTH 64 is a wire.
//
// Timing: the wide beat is held in a register and goes out a 64-bit beat per cycle; the next wide
// beat is taken in the cycle its predecessor's last piece leaves, so the output never waits for
// the input: DATA_WIDTH/64 cycles per full beat, one output beat every cycle.
`resetall
`default_nettype none

module dxpu_beat_down
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH  = 256,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input wire logic clk,  // DATA_WIDTH 64: a wire
    input wire logic rst,
    /* verilator lint_on UNUSEDSIGNAL */

    input  wire logic [ DATA_WIDTH-1:0] s_data,
    input  wire logic [BYTES_WIDTH-1:0] s_bytes,
    input  wire logic                   s_last,
    input  wire logic                   s_valid,
    output wire logic                   s_ready,

    output wire logic [63:0] m_data,
    output wire logic [ 3:0] m_bytes,
    output wire logic        m_last,
    output wire logic        m_valid,
    input  wire logic        m_ready
);

  // Parameters checked at elaboration.
  if (!width_ok(DATA_WIDTH)) begin : g_bad_width
    $error("dxpu_beat_down: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_beat_down: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end

  if (DATA_WIDTH == 64) begin : g_wire
    assign m_data = s_data;
    assign m_bytes = 4'(s_bytes);
    assign m_last = s_last;
    assign m_valid = s_valid;
    assign s_ready = m_ready;
  end else begin : g_cut
    logic [DATA_WIDTH-1:0] hold_reg = '0, hold_next;
    logic [BYTES_WIDTH-1:0] left_reg = '0, left_next;  // bytes of the held beat not yet out
    logic last_reg = 1'b0, last_next;
    logic valid_reg = 1'b0, valid_next;

    wire logic final_piece = left_reg <= BYTES_WIDTH'(8);
    assign s_ready = !valid_reg || (m_ready && final_piece);
    assign m_data = hold_reg[DATA_WIDTH-1-:64];
    assign m_bytes = final_piece ? 4'(left_reg) : 4'd8;
    assign m_last = last_reg && final_piece;
    assign m_valid = valid_reg;

    always_comb begin
      hold_next = hold_reg;
      left_next = left_reg;
      last_next = last_reg;
      valid_next = valid_reg;
      if (valid_reg && m_ready) begin
        hold_next = hold_reg << 64;
        left_next = final_piece ? '0 : left_reg - BYTES_WIDTH'(8);
        valid_next = !final_piece;
      end
      if (s_valid && s_ready) begin
        hold_next = s_data;
        left_next = s_bytes;
        last_next = s_last;
        valid_next = 1'b1;
      end
    end

    always_ff @(posedge clk) begin
      hold_reg <= hold_next;
      left_reg <= left_next;
      last_reg <= last_next;
      valid_reg <= valid_next;
      if (rst) valid_reg <= 1'b0;
    end
  end

endmodule

`resetall
