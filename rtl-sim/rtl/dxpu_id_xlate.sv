// dxpu_id_xlate - the bridge's device table and its ID lookups (docs/rtl.md): for each device
// behind the bridge its Bus/Device/Function on the box's PCIe (box RID), the BDF its owner's
// host sees (host RID) and its owner (a host slot, NO_HOST when in the pool). The table is
// written through the data path's register interface; the lookups are combinational and serve
// one header per cycle:
//
//   host lookup: the device host `host` holds at host RID `rid` (configuration targets, the
//                requester of a host's completion), the lowest-numbered first
//   peer lookup: the device at box RID `rid` other than `self` (a peer's completion), the
//                lowest-numbered first
//
// Only devices below `ndev` (the configured count) exist for the lookups. Entries reset to
// box RID 0, host RID 0, NO_HOST, as the golden model's.
`resetall
`default_nettype none

module dxpu_id_xlate
  import dxpu_tlp_pkg::*;
#(
    parameter int DEVICES = 8,
    parameter int DEV_W = $clog2(DEVICES)
) (
    input wire logic clk,
    input wire logic rst,
    input wire logic clear,  // every entry back to its reset value

    input wire logic [DEV_W:0] ndev,  // devices configured, 1..DEVICES

    // Write one entry (SetDevice).
    input wire logic             wr_en,
    input wire logic [DEV_W-1:0] wr_dev,
    input wire logic [     15:0] wr_box_rid,
    input wire logic [     15:0] wr_host_rid,
    input wire logic [     15:0] wr_owner,

    // Give devices back to the pool: one (release_dev) or all of a host's (release_host).
    input wire logic             release_dev_en,
    input wire logic [DEV_W-1:0] release_dev,
    input wire logic             release_host_en,
    input wire logic [     15:0] release_host,

    // The table, for the decisions that read an entry by index.
    output logic [15:0] box_rid [DEVICES],
    output logic [15:0] host_rid[DEVICES],
    output logic [15:0] owner   [DEVICES],

    input  wire logic [     15:0] host_lookup_host,
    input  wire logic [     15:0] host_lookup_rid,
    output logic                  host_lookup_hit,
    output logic      [DEV_W-1:0] host_lookup_dev,

    input  wire logic [     15:0] peer_lookup_rid,
    input  wire logic [DEV_W-1:0] peer_lookup_self,
    output logic                  peer_lookup_hit,
    output logic      [DEV_W-1:0] peer_lookup_dev
);

  if (DEVICES < 2 || DEVICES > 240) begin : g_bad_devices
    $error("dxpu_id_xlate: DEVICES %0d must be 2..240", DEVICES);
  end
  if (DEV_W != $clog2(DEVICES)) begin : g_bad_dev_w
    $error("dxpu_id_xlate: DEV_W must be $clog2(DEVICES)");
  end

  logic [15:0] box_rid_reg[DEVICES], host_rid_reg[DEVICES], owner_reg[DEVICES];

  always_ff @(posedge clk) begin
    for (int d = 0; d < DEVICES; d++) begin
      if (rst || clear) begin
        box_rid_reg[d]  <= 16'h0;
        host_rid_reg[d] <= 16'h0;
        owner_reg[d]    <= NO_HOST;
      end else begin
        if (release_host_en && owner_reg[d] == release_host) owner_reg[d] <= NO_HOST;
        if (release_dev_en && release_dev == DEV_W'(d)) owner_reg[d] <= NO_HOST;
        if (wr_en && wr_dev == DEV_W'(d)) begin
          box_rid_reg[d]  <= wr_box_rid;
          host_rid_reg[d] <= wr_host_rid;
          owner_reg[d]    <= wr_owner;
        end
      end
    end
  end

  always_comb begin
    host_lookup_hit = 1'b0;
    host_lookup_dev = '0;
    peer_lookup_hit = 1'b0;
    peer_lookup_dev = '0;
    // Highest index first, so the lowest match is the one left.
    for (int d = DEVICES - 1; d >= 0; d--) begin
      box_rid[d]  = box_rid_reg[d];
      host_rid[d] = host_rid_reg[d];
      owner[d]    = owner_reg[d];
      if ((DEV_W + 1)'(d) < ndev) begin
        // A device in the pool (NO_HOST) is nobody's: a NO_HOST lookup finds none.
        if (owner_reg[d] == host_lookup_host && host_lookup_host != NO_HOST &&
            host_rid_reg[d] == host_lookup_rid) begin
          host_lookup_hit = 1'b1;
          host_lookup_dev = DEV_W'(d);
        end
        if (box_rid_reg[d] == peer_lookup_rid && DEV_W'(d) != peer_lookup_self) begin
          peer_lookup_hit = 1'b1;
          peer_lookup_dev = DEV_W'(d);
        end
      end
    end
  end

endmodule

`resetall
