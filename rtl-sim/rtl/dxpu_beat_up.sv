// dxpu_beat_up - a frame stream of 64-bit beats gathered into DATA_WIDTH-bit beats (docs/rtl.md,
// "The sealed port"): what follows the 64-bit frame AEAD in a wider port. In: 64-bit beats, every
// one full but the frame's last (s_bytes 0..8), s_user beside the last. Out: beats as the framing
// modules' (bytes from the top, every beat full but the m_last one, whose m_bytes may be 0 only
// when the frame's last 64-bit beat came alone with 0 bytes), m_user with m_last. DATA_WIDTH 64 is
// a wire.
//
// Timing: a 64-bit beat is taken every cycle the output register is free or being read; a wide
// beat goes out the cycle after its last piece came in.
`resetall
`default_nettype none

module dxpu_beat_up
  import dxpu_dxfp_pkg::*;
#(
    parameter int DATA_WIDTH  = 256,
    parameter int BYTES_WIDTH = $clog2(DATA_WIDTH / 8) + 1,
    parameter int USER_WIDTH  = 1
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input wire logic clk,  // DATA_WIDTH 64: a wire
    input wire logic rst,
    /* verilator lint_on UNUSEDSIGNAL */

    input  wire logic [          63:0] s_data,
    input  wire logic [           3:0] s_bytes,
    input  wire logic                  s_last,
    input  wire logic [USER_WIDTH-1:0] s_user,
    input  wire logic                  s_valid,
    output wire logic                  s_ready,

    output wire logic [ DATA_WIDTH-1:0] m_data,
    output wire logic [BYTES_WIDTH-1:0] m_bytes,
    output wire logic                   m_last,
    output wire logic [ USER_WIDTH-1:0] m_user,
    output wire logic                   m_valid,
    input  wire logic                   m_ready
);

  localparam int BEAT_BYTES = DATA_WIDTH / 8;

  // Parameters checked at elaboration.
  if (!width_ok(DATA_WIDTH)) begin : g_bad_width
    $error("dxpu_beat_up: DATA_WIDTH %0d must be a power of two, 64..512", DATA_WIDTH);
  end
  if (BYTES_WIDTH != $clog2(DATA_WIDTH / 8) + 1) begin : g_bad_bytes
    $error("dxpu_beat_up: BYTES_WIDTH must be $clog2(DATA_WIDTH/8)+1");
  end
  if (USER_WIDTH < 1 || USER_WIDTH > 64) begin : g_bad_user
    $error("dxpu_beat_up: USER_WIDTH %0d must be 1..64", USER_WIDTH);
  end

  if (DATA_WIDTH == 64) begin : g_wire
    assign m_data = s_data;
    assign m_bytes = BYTES_WIDTH'(s_bytes);
    assign m_last = s_last;
    assign m_user = s_user;
    assign m_valid = s_valid;
    assign s_ready = m_ready;
  end else begin : g_gather
    logic [DATA_WIDTH-1:0] acc_reg = '0, acc_next;  // pieces gathered, from the top
    logic [BYTES_WIDTH-1:0] fill_reg = '0, fill_next;  // their bytes (a multiple of 8)
    logic [DATA_WIDTH-1:0] o_data_reg = '0, o_data_next;
    logic [BYTES_WIDTH-1:0] o_bytes_reg = '0, o_bytes_next;
    logic o_last_reg = 1'b0, o_last_next;
    logic [USER_WIDTH-1:0] o_user_reg = '0, o_user_next;
    logic o_valid_reg = 1'b0, o_valid_next;

    assign s_ready = !o_valid_reg || m_ready;
    assign m_data = o_data_reg;
    assign m_bytes = o_bytes_reg;
    assign m_last = o_last_reg;
    assign m_user = o_user_reg;
    assign m_valid = o_valid_reg;

    always_comb begin
      logic [DATA_WIDTH-1:0] with_beat;
      logic [BYTES_WIDTH-1:0] filled;
      acc_next = acc_reg;
      fill_next = fill_reg;
      o_data_next = o_data_reg;
      o_bytes_next = o_bytes_reg;
      o_last_next = o_last_reg;
      o_user_next = o_user_reg;
      o_valid_next = o_valid_reg && !m_ready;
      with_beat = acc_reg | ({s_data, (DATA_WIDTH - 64)'(0)} >> (8 * 32'(fill_reg)));
      filled = fill_reg + BYTES_WIDTH'(s_bytes);
      if (s_valid && s_ready) begin
        if (s_last || filled == BYTES_WIDTH'(BEAT_BYTES)) begin
          o_data_next = with_beat;
          o_bytes_next = filled;
          o_last_next = s_last;
          o_user_next = s_user;
          o_valid_next = 1'b1;
          acc_next = '0;
          fill_next = '0;
        end else begin
          acc_next = with_beat;
          fill_next = filled;
        end
      end
    end

    always_ff @(posedge clk) begin
      acc_reg <= acc_next;
      fill_reg <= fill_next;
      o_data_reg <= o_data_next;
      o_bytes_reg <= o_bytes_next;
      o_last_reg <= o_last_next;
      o_user_reg <= o_user_next;
      o_valid_reg <= o_valid_next;
      if (rst) begin
        acc_reg <= '0;
        fill_reg <= '0;
        o_valid_reg <= 1'b0;
      end
    end
  end

endmodule

`resetall
