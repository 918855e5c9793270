// dxpu_addr_window - the bridge's address windows and access check (docs/rtl.md):
//
//   BAR windows  per device and BAR: [host_base, host_base + size) in the owner's address space
//                lands at device_base on the box's PCIe (a host's MMIO, and a peer's request to a
//                BAR at the address the same host gave it). size 0: unmapped.
//   DMA windows  per device, DMA_WINDOWS of them: [device_base, device_base + size) as the
//                device addresses it lands at host_base in its owner's memory. size 0: free.
//
// Written (and read back) word by word through the data path's register interface; the
// firmware keeps a host's BAR windows and a device's DMA windows disjoint, so at most one
// window holds a request and the lookups need no order. Both lookups are combinational (one
// header per cycle): a request of `len` bytes at `addr` hits a window only when the window
// holds all of it (the golden model's Contains()).
module dxpu_addr_window
  import dxpu_tlp_pkg::*;
#(
    parameter int DEVICES = 8,
    parameter int DMA_WINDOWS = 16,
    parameter int DEV_W = $clog2(DEVICES)
) (
    input wire logic clk,
    input wire logic rst,
    input wire logic clear,  // every window unmapped

    input wire logic [DEV_W:0] ndev,  // devices configured, 1..DEVICES
    input wire logic [   15:0] owner[DEVICES],  // from dxpu_id_xlate

    // Register port: one 64-bit field of one window. wr_dma selects the DMA table; wr_idx the
    // BAR (0..5) or DMA window; wr_field 0: the window's own base (host_base of a BAR window,
    // device_base of a DMA window), 1: where it lands, 2: size.
    input  wire logic             wr_en,
    input  wire logic             wr_dma,
    input  wire logic [DEV_W-1:0] wr_dev,
    input  wire logic [      3:0] wr_idx,
    input  wire logic [      1:0] wr_field,
    input  wire logic [     63:0] wr_data,
    input  wire logic             rd_dma,
    input  wire logic [DEV_W-1:0] rd_dev,
    input  wire logic [      3:0] rd_idx,
    input  wire logic [      1:0] rd_field,
    output logic      [     63:0] rd_data,

    // Unmap a device's windows (its owner changed), or only its DMA windows.
    input wire logic             clr_dev_en,
    input wire logic             clr_dev_dma_only,
    input wire logic [DEV_W-1:0] clr_dev,
    // Unmap the windows of every device `clr_host` owns (the host's session ended); NO_HOST
    // owns nothing (a device in the pool is nobody's).
    input wire logic             clr_host_en,
    input wire logic [     15:0] clr_host,

    // A host's (or a peer's, for its owner) request to the BAR windows of host `bar_host`.
    input  wire logic [             15:0] bar_host,
    input  wire logic [             63:0] bar_addr,
    input  wire logic [TLP_LEN_WIDTH-1:0] bar_len,
    output logic                          bar_hit,
    output logic      [        DEV_W-1:0] bar_dev,
    output logic      [             63:0] bar_xlat,  // the address on the box's PCIe

    // A device's request to its DMA windows.
    input  wire logic [        DEV_W-1:0] dma_dev,
    input  wire logic [             63:0] dma_addr,
    input  wire logic [TLP_LEN_WIDTH-1:0] dma_len,
    output logic                          dma_hit,
    output logic      [             63:0] dma_xlat  // the address in the owner's memory
);

  localparam int BARS = 6;

  if (DEVICES < 2 || DEVICES > 240) begin : g_bad_devices
    $error("dxpu_addr_window: DEVICES %0d must be 2..240", DEVICES);
  end
  if (DMA_WINDOWS < 1 || DMA_WINDOWS > 16) begin : g_bad_windows
    $error("dxpu_addr_window: DMA_WINDOWS %0d must be 1..16", DMA_WINDOWS);
  end
  if (DEV_W != $clog2(DEVICES)) begin : g_bad_dev_w
    $error("dxpu_addr_window: DEV_W must be $clog2(DEVICES)");
  end

  typedef struct packed {
    logic [63:0] base;  // the side the request comes from
    logic [63:0] land;  // where it lands
    logic [63:0] size;
  } window_t;

  window_t bar_reg[DEVICES][BARS];
  window_t dma_reg[DEVICES][DMA_WINDOWS];

  // The golden model's Contains(): [addr, addr + len) inside [base, base + size).
  function automatic logic holds(input logic [63:0] base, input logic [63:0] size,
                                 input logic [63:0] addr, input logic [TLP_LEN_WIDTH-1:0] len);
    return addr >= base && 64'(len) <= size && addr - base <= size - 64'(len);
  endfunction

  function automatic window_t set_field(input window_t w, input logic [1:0] field,
                                        input logic [63:0] value);
    window_t n;
    n = w;
    case (field)
      2'd0: n.base = value;
      2'd1: n.land = value;
      default: n.size = value;
    endcase
    return n;
  endfunction

  always_ff @(posedge clk) begin
    for (int d = 0; d < DEVICES; d++) begin
      if (rst || clear ||
          (clr_dev_en && clr_dev == DEV_W'(d) && !clr_dev_dma_only) ||
          (clr_host_en && owner[d] == clr_host && clr_host != NO_HOST)) begin
        for (int b = 0; b < BARS; b++) bar_reg[d][b] <= '0;
        for (int w = 0; w < DMA_WINDOWS; w++) dma_reg[d][w] <= '0;
      end else if (clr_dev_en && clr_dev == DEV_W'(d)) begin
        for (int w = 0; w < DMA_WINDOWS; w++) dma_reg[d][w] <= '0;
      end else if (wr_en && wr_dev == DEV_W'(d)) begin
        for (int b = 0; b < BARS; b++)
          if (!wr_dma && wr_idx == 4'(b)) bar_reg[d][b] <= set_field(bar_reg[d][b], wr_field, wr_data);
        for (int w = 0; w < DMA_WINDOWS; w++)
          if (wr_dma && wr_idx == 4'(w)) dma_reg[d][w] <= set_field(dma_reg[d][w], wr_field, wr_data);
      end
    end
  end

  always_comb begin
    window_t w;
    w = '0;
    for (int d = 0; d < DEVICES; d++) begin
      if (rd_dev == DEV_W'(d)) begin
        for (int b = 0; b < BARS; b++) if (!rd_dma && rd_idx == 4'(b)) w = bar_reg[d][b];
        for (int i = 0; i < DMA_WINDOWS; i++) if (rd_dma && rd_idx == 4'(i)) w = dma_reg[d][i];
      end
    end
    case (rd_field)
      2'd0: rd_data = w.base;
      2'd1: rd_data = w.land;
      default: rd_data = w.size;
    endcase
  end

  always_comb begin
    bar_hit  = 1'b0;
    bar_dev  = '0;
    bar_xlat = '0;
    for (int d = 0; d < DEVICES; d++) begin
      if ((DEV_W + 1)'(d) < ndev && owner[d] == bar_host && bar_host != NO_HOST) begin
        for (int b = 0; b < BARS; b++) begin
          if (!bar_hit && holds(bar_reg[d][b].base, bar_reg[d][b].size, bar_addr, bar_len)) begin
            bar_hit  = 1'b1;
            bar_dev  = DEV_W'(d);
            bar_xlat = bar_addr - bar_reg[d][b].base + bar_reg[d][b].land;
          end
        end
      end
    end
  end

  always_comb begin
    dma_hit  = 1'b0;
    dma_xlat = '0;
    for (int d = 0; d < DEVICES; d++) begin
      if (dma_dev == DEV_W'(d)) begin
        for (int i = 0; i < DMA_WINDOWS; i++) begin
          if (!dma_hit && holds(dma_reg[d][i].base, dma_reg[d][i].size, dma_addr, dma_len)) begin
            dma_hit  = 1'b1;
            dma_xlat = dma_addr - dma_reg[d][i].base + dma_reg[d][i].land;
          end
        end
      end
    end
  end

endmodule
