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
// header per cycle; a DMA lookup reads only the requesting device's row): a request of `len`
// bytes at `addr` hits a window only when the window holds all of it (the golden model's
// Contains()).
`resetall
`default_nettype none

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
  localparam int DMA_W = DMA_WINDOWS > 1 ? $clog2(DMA_WINDOWS) : 1;  // a DMA window's index

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

  // The windows: RAMs with one write port (a register write sets one field of one window).
  // Nothing in them is reset or cleared: a window whose live bit is clear reads as all zeros
  // (unmapped), and a write to it starts from zeros. Clearing a device's windows clears a row
  // of live bits.
  window_t bar_mem[DEVICES][BARS];
  window_t dma_mem[DEVICES][DMA_WINDOWS];
  logic [DEVICES-1:0][BARS-1:0] bar_live_reg;
  logic [DEVICES-1:0][DMA_WINDOWS-1:0] dma_live_reg;

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

  function automatic window_t bar_window(input logic [DEV_W-1:0] d, input logic [3:0] b);
    if (32'(d) >= DEVICES || 32'(b) >= BARS || !bar_live_reg[d][b[2:0]]) return '0;
    return bar_mem[d][b[2:0]];
  endfunction

  function automatic window_t dma_window(input logic [DEV_W-1:0] d, input logic [3:0] i);
    if (32'(d) >= DEVICES || 32'(i) >= DMA_WINDOWS || !dma_live_reg[d][DMA_W'(i)]) return '0;
    return dma_mem[d][DMA_W'(i)];
  endfunction

  wire wr_ok = wr_en && 32'(wr_dev) < DEVICES && 32'(wr_idx) < (wr_dma ? DMA_WINDOWS : BARS);

  // The write port.
  always_ff @(posedge clk) begin
    if (wr_ok && !wr_dma)
      bar_mem[wr_dev][wr_idx[2:0]] <= set_field(bar_window(wr_dev, wr_idx), wr_field, wr_data);
    if (wr_ok && wr_dma)
      dma_mem[wr_dev][DMA_W'(wr_idx)] <= set_field(dma_window(wr_dev, wr_idx), wr_field, wr_data);
  end

  // The live bits. A clear wins over a write to the same device in the same cycle.
  always_ff @(posedge clk) begin
    if (rst || clear) begin
      bar_live_reg <= '0;
      dma_live_reg <= '0;
    end else begin
      if (wr_ok && !wr_dma) bar_live_reg[wr_dev][wr_idx[2:0]] <= 1'b1;
      if (wr_ok && wr_dma) dma_live_reg[wr_dev][DMA_W'(wr_idx)] <= 1'b1;
      if (clr_dev_en && 32'(clr_dev) < DEVICES) begin
        dma_live_reg[clr_dev] <= '0;
        if (!clr_dev_dma_only) bar_live_reg[clr_dev] <= '0;
      end
      if (clr_host_en && clr_host != NO_HOST) begin
        for (int d = 0; d < DEVICES; d++) begin
          if (owner[d] == clr_host) begin
            bar_live_reg[d] <= '0;
            dma_live_reg[d] <= '0;
          end
        end
      end
    end
  end

  always_comb begin
    window_t w;
    w = rd_dma ? dma_window(rd_dev, rd_idx) : bar_window(rd_dev, rd_idx);
    case (rd_field)
      2'd0: rd_data = w.base;
      2'd1: rd_data = w.land;
      default: rd_data = w.size;
    endcase
  end

  // BAR lookup: every window of every device the host owns (a CAM of DEVICES x 6 entries).
  always_comb begin
    bar_hit  = 1'b0;
    bar_dev  = '0;
    bar_xlat = '0;
    for (int d = 0; d < DEVICES; d++) begin
      if ((DEV_W + 1)'(d) < ndev && owner[d] == bar_host && bar_host != NO_HOST) begin
        for (int b = 0; b < BARS; b++) begin
          if (!bar_hit && bar_live_reg[d][b] &&
              holds(bar_mem[d][b].base, bar_mem[d][b].size, bar_addr, bar_len)) begin
            bar_hit  = 1'b1;
            bar_dev  = DEV_W'(d);
            bar_xlat = bar_addr - bar_mem[d][b].base + bar_mem[d][b].land;
          end
        end
      end
    end
  end

  // DMA lookup: the requesting device's windows only (its row of the table).
  always_comb begin
    dma_hit  = 1'b0;
    dma_xlat = '0;
    if (32'(dma_dev) < DEVICES) begin
      for (int i = 0; i < DMA_WINDOWS; i++) begin
        if (!dma_hit && dma_live_reg[dma_dev][i] &&
            holds(dma_mem[dma_dev][i].base, dma_mem[dma_dev][i].size, dma_addr, dma_len)) begin
          dma_hit  = 1'b1;
          dma_xlat = dma_addr - dma_mem[dma_dev][i].base + dma_mem[dma_dev][i].land;
        end
      end
    end
  end

endmodule

`resetall
