// dxpu_datapath - the bridge's data plane (bridge-fw/datapath.h, docs/rtl.md): what happens to
// one TLP between a host's DxFP session and the box's PCIe, decided in hardware as the C++
// golden model (bridge-fw/golden_datapath.cc) decides it, bit for bit.
//
//   s_tlp ──> dxpu_tlp_classify ──> decide ──> m_tlp (+ route, port, refusal)
//                                     │
//               dxpu_id_xlate (device table), dxpu_addr_window (BAR and DMA windows),
//               dxpu_tag_remap (box tags, pending requests, quarantine), counters
//               ▲
//   registers ──┘ (tables, configuration, commands: INIT, EXPIRE, RELEASE_DEVICE, ...)
//
// Every TLP that comes in comes out once, on its first beat its decision: the translated TLP's
// header (route DEVICE: onto the box's PCIe to device `port`; HOST: into host `port`'s
// session), the Unsupported Request completion answering a refused non-posted request (HOST or
// DEVICE, `refusal` set), RETRY with the TLP unchanged (no box tag for it now: the firmware
// offers it again later, that host's queue waits), or DROP (`refusal` says why). A refused or
// dropped TLP's payload beats come out with keep 0; a translated TLP's payload is untouched (a
// header may grow or shrink by a DW when an address crosses 4 GiB: the record length says so).
// A TLP the classifier rejects is dropped as MALFORMED.
//
// Commands run between TLPs (the input waits while `busy`): EXPIRE and RELEASE_DEVICE emit the
// UR completions of the requests they end on the same output, one per cycle.
//
// Timing: two register stages (classify, decide), one header per cycle unstalled; a command
// takes one cycle per box tag it scans.
`resetall
`default_nettype none

module dxpu_datapath
  import dxpu_tlp_pkg::*;
#(
    parameter int DATA_WIDTH = 64,
    parameter int KEEP_WIDTH = DATA_WIDTH / 32,
    parameter int DEVICES = 8,
    parameter int HOSTS = 64,
    parameter int TAGS = 256,
    parameter int DMA_WINDOWS = 16
) (
    input wire logic        clk,
    input wire logic        rst,
    input wire logic [63:0] now,  // nanoseconds, as the golden model's `now`

    input  wire logic [             127:0] s_tlp_hdr,
    input  wire logic [TLP_LEN_WIDTH-1:0]  s_tlp_len,
    input  wire logic [  DATA_WIDTH-1:0]   s_tlp_data,
    input  wire logic [  KEEP_WIDTH-1:0]   s_tlp_keep,
    input  wire logic                      s_tlp_from_device,  // else from a host's session
    input  wire logic [              15:0] s_tlp_port,  // host slot or device index
    input  wire logic                      s_tlp_sop,
    input  wire logic                      s_tlp_eop,
    input  wire logic                      s_tlp_valid,
    output wire logic                      s_tlp_ready,

    output wire logic     [             127:0] m_tlp_hdr,
    output wire logic     [TLP_LEN_WIDTH-1:0]  m_tlp_len,
    output wire logic     [  DATA_WIDTH-1:0]   m_tlp_data,
    output wire logic     [  KEEP_WIDTH-1:0]   m_tlp_keep,
    output wire route_t                        m_tlp_route,
    output wire logic     [              15:0] m_tlp_port,
    output wire refusal_t                      m_tlp_refusal,
    output wire logic                          m_tlp_sop,
    output wire logic                          m_tlp_eop,
    output wire logic                          m_tlp_valid,
    input  wire logic                          m_tlp_ready,

    // Register interface (docs/rtl.md, register map): 64-bit words.
    input  wire logic        reg_wr_en,
    input  wire logic [15:0] reg_wr_addr,
    input  wire logic [63:0] reg_wr_data,
    input  wire logic [15:0] reg_rd_addr,
    output logic      [63:0] reg_rd_data,
    output wire logic        busy  // a command runs or waits for the end of a TLP
);

  localparam int DEV_W = $clog2(DEVICES);
  localparam int HOST_W = $clog2(HOSTS);
  localparam int TAG_W = $clog2(TAGS);
  localparam int USER_WIDTH = 17;

  if (DEVICES < 2 || DEVICES > 240) begin : g_bad_devices
    $error("dxpu_datapath: DEVICES %0d must be 2..240", DEVICES);
  end
  if (HOSTS < 2 || HOSTS > 65534) begin : g_bad_hosts
    $error("dxpu_datapath: HOSTS %0d must be 2..65534", HOSTS);
  end

  // ---- register map ----
  localparam logic [15:0] REG_ID = 16'h0000, REG_PARAMS = 16'h0001, REG_BRIDGE_RID = 16'h0002,
      REG_DEVICES = 16'h0003, REG_HOST_SLOTS = 16'h0004, REG_BOX_TAGS = 16'h0005,
      REG_MAX_PER_HOST = 16'h0006, REG_CPL_TIMEOUT = 16'h0007, REG_QUARANTINE = 16'h0008,
      REG_COMMAND = 16'h0010, REG_NEXT_DEADLINE = 16'h0011, REG_NOW = 16'h0012,
      REG_COUNTERS = 16'h0100, REG_DEVICE_BASE = 16'h1000;
  localparam logic [63:0] ID_VALUE = 64'h4458_4450_0000_0001;  // "DXDP", version 1
  // Counter words: to_device, to_host, peer, retries, ur_sent, dropped, pending, tags_free,
  // then refused[0..REFUSAL_COUNT-1].
  localparam int COUNTERS = 8 + REFUSAL_COUNT;

  typedef enum logic [2:0] {
    OP_NONE = 3'd0,
    OP_INIT = 3'd1,
    OP_EXPIRE = 3'd2,
    OP_RELEASE_DEVICE = 3'd3,
    OP_RELEASE_HOST = 3'd4,
    OP_CLEAR_DMA = 3'd5,
    OP_ABANDON_DEVICE = 3'd6  // internal: a device changed owner (SetDevice)
  } op_t;

  typedef enum logic [1:0] {
    CMD_IDLE,
    CMD_QREL,  // EXPIRE: quarantined tags whose time is up back to the free stack
    CMD_SCAN,  // one box tag per cycle
    CMD_FINISH
  } cmd_state_t;

  // ---- configuration ----
  logic [15:0] bridge_rid_reg, devices_reg, host_slots_reg, box_tags_reg, max_per_host_reg;
  logic [63:0] cpl_timeout_reg, quarantine_reg;
  logic [63:0] now_reg;  // the latest `now` any TLP or command brought (the golden's now_)

  wire [DEV_W:0] ndev = devices_reg > 16'(DEVICES) ? (DEV_W + 1)'(DEVICES) : devices_reg[DEV_W:0];
  wire [TAG_W:0] ntags = box_tags_reg > 16'(TAGS) ? (TAG_W + 1)'(TAGS) : box_tags_reg[TAG_W:0];

  // ---- stage 1: classify ----
  logic [127:0] c_hdr;
  logic [TLP_LEN_WIDTH-1:0] c_len;
  logic [DATA_WIDTH-1:0] c_data;
  logic [KEEP_WIDTH-1:0] c_keep;
  logic [USER_WIDTH-1:0] c_user;
  logic c_sop, c_eop, c_valid, c_ready;
  kind_t c_kind;
  // The decisions classify a request by its kind (kind_class), as the golden model does.
  // verilator lint_off UNUSEDSIGNAL
  class_t c_class;
  // verilator lint_on UNUSEDSIGNAL
  err_t c_err;
  logic c_hdr4;

  dxpu_tlp_classify #(
      .DATA_WIDTH(DATA_WIDTH),
      .USER_WIDTH(USER_WIDTH)
  ) u_classify (
      .clk(clk),
      .rst(rst),
      .s_tlp_hdr(s_tlp_hdr),
      .s_tlp_len(s_tlp_len),
      .s_tlp_data(s_tlp_data),
      .s_tlp_keep(s_tlp_keep),
      .s_tlp_user({s_tlp_from_device, s_tlp_port}),
      .s_tlp_sop(s_tlp_sop),
      .s_tlp_eop(s_tlp_eop),
      .s_tlp_valid(s_tlp_valid),
      .s_tlp_ready(s_tlp_ready),
      .m_tlp_hdr(c_hdr),
      .m_tlp_len(c_len),
      .m_tlp_data(c_data),
      .m_tlp_keep(c_keep),
      .m_tlp_user(c_user),
      .m_tlp_sop(c_sop),
      .m_tlp_eop(c_eop),
      .m_tlp_valid(c_valid),
      .m_tlp_ready(c_ready),
      .m_tlp_kind(c_kind),
      .m_tlp_class(c_class),
      .m_tlp_err(c_err),
      .m_tlp_hdr4(c_hdr4)
  );

  wire c_from_device = c_user[16];
  wire [15:0] c_port = c_user[15:0];

  // ---- tables ----
  logic [15:0] box_rid[DEVICES], host_rid[DEVICES], owner[DEVICES];
  logic host_hit, peer_hit, bar_hit, dma_hit;
  logic [DEV_W-1:0] host_dev, peer_dev, bar_dev;
  logic [63:0] bar_xlat, dma_xlat, win_rd_data;
  logic [15:0] host_lookup_rid, bar_host;

  // Table writes decoded from the register interface.
  wire wr_device = reg_wr_en && reg_wr_addr >= REG_DEVICE_BASE &&
                   reg_wr_addr[15:8] - 8'h10 < 8'(DEVICES);
  wire [DEV_W-1:0] wr_dev = DEV_W'(reg_wr_addr[15:8] - 8'h10);
  wire [7:0] wr_off = reg_wr_addr[7:0];
  wire wr_entry = wr_device && wr_off == 8'h00;
  wire wr_bar = wr_device && wr_off >= 8'h10 && wr_off < 8'h28;
  wire wr_dma = wr_device && wr_off >= 8'h40 && wr_off < 8'h40 + 8'(4 * DMA_WINDOWS);
  wire [5:0] wr_win_off = 6'(wr_dma ? wr_off - 8'h40 : wr_off - 8'h10);

  wire rd_device = reg_rd_addr >= REG_DEVICE_BASE && reg_rd_addr[15:8] - 8'h10 < 8'(DEVICES);
  wire [DEV_W-1:0] rd_dev = DEV_W'(reg_rd_addr[15:8] - 8'h10);
  wire [7:0] rd_off = reg_rd_addr[7:0];
  wire rd_dma = rd_off >= 8'h40;
  wire [5:0] rd_win_off = 6'(rd_dma ? rd_off - 8'h40 : rd_off - 8'h10);

  // Command engine state and its table operations (below).
  cmd_state_t cmd_state_reg;
  op_t cmd_op_reg;
  logic cmd_pending_reg, overrun_reg;
  logic [15:0] cmd_arg_reg;
  logic [31:0] cmd_limit_reg, emitted_reg;
  logic [63:0] cmd_now_reg;
  logic [TAG_W:0] scan_reg;
  logic init_now;
  logic release_dev_en, release_host_en, clr_dev_en, clr_dev_dma_only, clr_host_en;
  logic [DEV_W-1:0] release_dev, clr_dev;
  logic [15:0] release_host;

  // An entry write that changes the owner: windows go, pending requests are abandoned.
  wire owner_change = wr_entry && reg_wr_data[47:32] != owner[wr_dev];
  wire entry_refused = wr_entry && busy;

  dxpu_id_xlate #(
      .DEVICES(DEVICES)
  ) u_id_xlate (
      .clk(clk),
      .rst(rst),
      .clear(init_now),
      .ndev(ndev),
      .wr_en(wr_entry && !busy),
      .wr_dev(wr_dev),
      .wr_box_rid(reg_wr_data[15:0]),
      .wr_host_rid(reg_wr_data[31:16]),
      .wr_owner(reg_wr_data[47:32]),
      .release_dev_en(release_dev_en),
      .release_dev(release_dev),
      .release_host_en(release_host_en),
      .release_host(release_host),
      .box_rid(box_rid),
      .host_rid(host_rid),
      .owner(owner),
      .host_lookup_host(c_port),
      .host_lookup_rid(host_lookup_rid),
      .host_lookup_hit(host_hit),
      .host_lookup_dev(host_dev),
      .peer_lookup_rid(host_lookup_rid),
      .peer_lookup_self(c_port[DEV_W-1:0]),
      .peer_lookup_hit(peer_hit),
      .peer_lookup_dev(peer_dev)
  );

  tlp_t t;  // the TLP at the decision, parsed
  logic [12:0] req_bytes;
  assign t = tlp_parse(c_hdr, c_kind, c_hdr4);
  assign req_bytes = {t.length_dw[10:0], 2'b00};
  // Configuration targets and a host's completions are looked up by host RID; a device's
  // completion by its requester, the peer that asked.
  assign host_lookup_rid = is_cfg(t.kind) ? t.cfg_target : t.requester;
  assign bar_host = c_from_device ? owner[c_port[DEV_W-1:0]] : c_port;

  dxpu_addr_window #(
      .DEVICES(DEVICES),
      .DMA_WINDOWS(DMA_WINDOWS)
  ) u_addr_window (
      .clk(clk),
      .rst(rst),
      .clear(init_now),
      .ndev(ndev),
      .owner(owner),
      .wr_en((wr_bar || wr_dma) && wr_win_off[1:0] != 2'd3),
      .wr_dma(wr_dma),
      .wr_dev(wr_dev),
      .wr_idx(wr_win_off[5:2]),
      .wr_field(wr_win_off[1:0]),
      .wr_data(reg_wr_data),
      .rd_dma(rd_dma),
      .rd_dev(rd_dev),
      .rd_idx(rd_win_off[5:2]),
      .rd_field(rd_win_off[1:0]),
      .rd_data(win_rd_data),
      .clr_dev_en(clr_dev_en),
      .clr_dev_dma_only(clr_dev_dma_only),
      .clr_dev(clr_dev),
      .clr_host_en(clr_host_en),
      .clr_host(release_host),
      .bar_host(bar_host),
      .bar_addr(t.addr),
      .bar_len(req_bytes),
      .bar_hit(bar_hit),
      .bar_dev(bar_dev),
      .bar_xlat(bar_xlat),
      .dma_dev(c_port[DEV_W-1:0]),
      .dma_addr(t.addr),
      .dma_len(req_bytes),
      .dma_hit(dma_hit),
      .dma_xlat(dma_xlat)
  );

  // Pending requests.
  logic alloc_ok, alloc_en, free_en, partial_en, abandon_en, qrel_en, q_nonempty;
  logic [TAG_W-1:0] alloc_tag, lk_tag, free_tag, partial_tag, abandon_tag;
  logic lk_in_use;
  logic [HOST_W-1:0] lk_host;
  logic [DEV_W-1:0] lk_dev, alloc_dev;
  logic [15:0] lk_requester;
  logic [9:0] lk_host_tag;
  logic [12:0] lk_remaining, alloc_remaining, partial_remaining;
  logic [6:0] lk_lower_addr, alloc_lower_addr, partial_lower_addr;
  logic [63:0] lk_deadline, q_front_until, next_deadline;
  logic [TAG_W:0] tags_free, pending;

  dxpu_tag_remap #(
      .TAGS(TAGS),
      .HOSTS(HOSTS),
      .DEVICES(DEVICES)
  ) u_tag_remap (
      .clk(clk),
      .rst(rst),
      .init(init_now),
      .box_tags(ntags),
      .max_per_host(max_per_host_reg),
      .alloc_host(c_port[HOST_W-1:0]),
      .alloc_ok(alloc_ok),
      .alloc_tag(alloc_tag),
      .alloc_en(alloc_en),
      .alloc_dev(alloc_dev),
      .alloc_requester(t.requester),
      .alloc_host_tag(t.tag),
      .alloc_remaining(alloc_remaining),
      .alloc_lower_addr(alloc_lower_addr),
      .alloc_deadline(now + cpl_timeout_reg),
      .lk_tag(lk_tag),
      .lk_in_use(lk_in_use),
      .lk_host(lk_host),
      .lk_dev(lk_dev),
      .lk_requester(lk_requester),
      .lk_host_tag(lk_host_tag),
      .lk_remaining(lk_remaining),
      .lk_lower_addr(lk_lower_addr),
      .lk_deadline(lk_deadline),
      .free_en(free_en),
      .free_tag(free_tag),
      .partial_en(partial_en),
      .partial_tag(partial_tag),
      .partial_remaining(partial_remaining),
      .partial_lower_addr(partial_lower_addr),
      .abandon_en(abandon_en),
      .abandon_tag(abandon_tag),
      .abandon_until(now_reg + quarantine_reg),
      .qrel_en(qrel_en),
      .q_nonempty(q_nonempty),
      .q_front_until(q_front_until),
      .tags_free(tags_free),
      .pending(pending),
      .next_deadline(next_deadline)
  );

  // ---- stage 2: decide ----

  // The Unsupported Request completion a completer returns for `req` (the golden model's
  // UnsupportedRequest()). Functions over a whole TLP read only the fields their rule needs.
  // verilator lint_off UNUSEDSIGNAL
  function automatic tlp_t ur_completion(input tlp_t req, input logic [15:0] completer);
    tlp_t c;
    c = '0;
    c.kind = KIND_CPL;
    c.requester = req.requester;
    c.tag = req.tag;
    c.completer = completer;
    c.status = 3'd1;
    c.tc = req.tc;
    c.attr = req.attr;
    if (req.kind == KIND_MRD) begin
      c.byte_count = read_byte_count(req.length_dw, req.first_be, req.last_be[3:1]);
      c.lower_addr = read_lower_addr(req.addr[6:2], req.first_be);
    end else begin
      c.byte_count = 13'd4;
    end
    return c;
  endfunction

  typedef struct packed {
    route_t   route;
    logic [15:0] port;
    refusal_t refusal;
    logic     answer;  // the TLP out is a completion the bridge made (payload beats dropped)
    tlp_t     tlp;
  } decision_t;

  function automatic decision_t make(input route_t route, input logic [15:0] port,
                                     input refusal_t refusal, input tlp_t tlp);
    decision_t d;
    d.route = route;
    d.port = port;
    d.refusal = refusal;
    d.answer = 1'b0;
    d.tlp = tlp;
    return d;
  endfunction

  // A refused request: a non-posted one is answered with UR (to `port` on `route`), anything
  // else is dropped.
  function automatic decision_t refuse(input tlp_t req, input refusal_t why,
                                       input route_t route, input logic [15:0] port,
                                       input logic [15:0] completer);
    decision_t d;
    if (kind_class(req.kind) != CLASS_NON_POSTED) return make(ROUTE_DROP, 16'h0, why, '0);
    d = make(route, port, why, ur_completion(req, completer));
    d.answer = 1'b1;
    return d;
  endfunction
  // verilator lint_on UNUSEDSIGNAL

  decision_t dec;  // the decision for the TLP at stage 2's input (valid with c_sop)
  logic dec_alloc, dec_free, dec_partial, dec_peer;
  logic [12:0] carried;

  always_comb begin
    tlp_t o;
    logic [DEV_W-1:0] d;
    o = t;
    d = c_port[DEV_W-1:0];
    dec = make(ROUTE_DROP, 16'h0, REF_MALFORMED, '0);
    dec_alloc = 1'b0;
    dec_free = 1'b0;
    dec_peer = 1'b0;
    dec_partial = 1'b0;
    alloc_dev = host_dev;
    // What the request's completions will owe: as its UR completion would say.
    alloc_remaining = t.kind == KIND_MRD ? read_byte_count(t.length_dw, t.first_be, t.last_be[3:1])
                                         : 13'd4;
    alloc_lower_addr = t.kind == KIND_MRD ? read_lower_addr(t.addr[6:2], t.first_be) : 7'd0;
    carried = {t.length_dw[10:0], 2'b00} - 13'(t.lower_addr[1:0]);
    if (c_err != ERR_OK) begin
      dec = make(ROUTE_DROP, 16'h0, REF_MALFORMED, '0);
    end else if (!c_from_device) begin
      if (c_port >= host_slots_reg || 32'(c_port) >= HOSTS) begin
        dec = make(ROUTE_DROP, 16'h0, REF_MALFORMED, '0);
      end else if (t.kind == KIND_CFGRD0 || t.kind == KIND_CFGWR0) begin
        if (!host_hit) begin
          dec = refuse(t, REF_NOT_OWNER, ROUTE_HOST, c_port, t.cfg_target);
        end else if (!alloc_ok) begin
          dec = make(ROUTE_RETRY, c_port, REF_NONE, t);
        end else begin
          o.cfg_target = box_rid[host_dev];
          o.requester = bridge_rid_reg;
          o.tag = 10'(alloc_tag);
          dec = make(ROUTE_DEVICE, 16'(host_dev), REF_NONE, o);
          dec_alloc = 1'b1;
        end
      end else if (is_mem(t.kind)) begin
        alloc_dev = bar_dev;
        if (!bar_hit) begin
          dec = refuse(t, REF_NO_BAR_WINDOW, ROUTE_HOST, c_port, 16'h0);
        end else if (t.kind == KIND_MRD && !alloc_ok) begin
          dec = make(ROUTE_RETRY, c_port, REF_NONE, t);
        end else begin
          o.addr = bar_xlat;
          o.requester = bridge_rid_reg;
          if (t.kind == KIND_MRD) begin
            o.tag = 10'(alloc_tag);
            dec_alloc = 1'b1;
          end
          dec = make(ROUTE_DEVICE, 16'(bar_dev), REF_NONE, o);
        end
      end else if (is_cpl(t.kind)) begin
        // The host answers a device's DMA read: it went out under the device's host RID.
        if (!host_hit) begin
          dec = make(ROUTE_DROP, 16'h0, REF_UNEXPECTED_CPL, '0);
        end else begin
          o.requester = box_rid[host_dev];
          o.completer = bridge_rid_reg;
          dec = make(ROUTE_DEVICE, 16'(host_dev), REF_NONE, o);
        end
      end else begin
        // Type 1 configuration and messages.
        dec = refuse(t, REF_UNSUPPORTED, ROUTE_HOST, c_port, t.cfg_target);
      end
    end else if (32'(c_port) >= 32'(ndev)) begin
      dec = make(ROUTE_DROP, 16'h0, REF_MALFORMED, '0);
    end else if (is_cpl(t.kind)) begin
      if (t.requester != bridge_rid_reg) begin
        // A peer's read answered: routed by Requester ID to a device of the same owner.
        if (!peer_hit || owner[d] == NO_HOST || owner[peer_dev] != owner[d]) begin
          dec = make(ROUTE_DROP, 16'h0, REF_UNEXPECTED_CPL, '0);
        end else begin
          dec = make(ROUTE_DEVICE, 16'(peer_dev), REF_NONE, t);
          dec_peer = 1'b1;
        end
      end else if (32'(t.tag) >= 32'(ntags) || !lk_in_use || lk_dev != d ||
                   t.completer != box_rid[d]) begin
        dec = make(ROUTE_DROP, 16'h0, REF_UNEXPECTED_CPL, '0);  // late, stray or not its own
      end else begin
        o.requester = lk_requester;
        o.tag = lk_host_tag;
        o.completer = host_rid[d];
        dec = make(ROUTE_HOST, 16'(lk_host), REF_NONE, o);
        if (t.kind != KIND_CPLD || t.status != 3'd0 || t.byte_count <= carried) dec_free = 1'b1;
        else dec_partial = 1'b1;
      end
    end else if (is_mem(t.kind)) begin
      if (t.requester != box_rid[d]) begin  // a device may only speak for itself
        dec = refuse(t, REF_MALFORMED, ROUTE_DEVICE, c_port, bridge_rid_reg);
      end else if (owner[d] == NO_HOST) begin
        dec = refuse(t, REF_UNOWNED, ROUTE_DEVICE, c_port, bridge_rid_reg);
      end else if (bar_hit) begin  // peer to peer: stays in the box
        o.addr = bar_xlat;
        dec = make(ROUTE_DEVICE, 16'(bar_dev), REF_NONE, o);
        dec_peer = 1'b1;
      end else if (!dma_hit) begin
        dec = refuse(t, REF_NO_DMA_WINDOW, ROUTE_DEVICE, c_port, bridge_rid_reg);
      end else begin
        o.addr = dma_xlat;
        o.requester = host_rid[d];
        dec = make(ROUTE_HOST, owner[d], REF_NONE, o);
      end
    end else begin
      dec = refuse(t, REF_UNSUPPORTED, ROUTE_DEVICE, c_port, bridge_rid_reg);
    end
  end

  // The pending entry looked at: a device completion's tag, or the sweep's.
  assign lk_tag = cmd_state_reg == CMD_SCAN ? scan_reg[TAG_W-1:0] : t.tag[TAG_W-1:0];

  // ---- output stage and command engine ----
  logic out_free;
  logic in_pkt_reg;  // stage 2 is inside a TLP (after its first beat, before its last)
  route_t pkt_route_reg;
  logic [15:0] pkt_port_reg;
  refusal_t pkt_refusal_reg;
  logic pkt_pass_reg;  // its payload goes through
  logic [127:0] pkt_hdr_reg;
  logic [TLP_LEN_WIDTH-1:0] pkt_len_reg;

  logic m_valid_reg, m_sop_reg, m_eop_reg;
  logic [127:0] m_hdr_reg;
  logic [TLP_LEN_WIDTH-1:0] m_len_reg;
  logic [DATA_WIDTH-1:0] m_data_reg;
  logic [KEEP_WIDTH-1:0] m_keep_reg;
  route_t m_route_reg;
  logic [15:0] m_port_reg;
  refusal_t m_refusal_reg;

  logic [63:0] counter_reg[COUNTERS];

  assign out_free = !m_valid_reg || m_tlp_ready;
  assign busy = cmd_pending_reg || cmd_state_reg != CMD_IDLE;
  // Beats flow while no command waits, and always to the end of a TLP already started.
  assign c_ready = out_free && (in_pkt_reg || !busy);

  wire take = c_valid && c_ready;
  wire take_sop = take && c_sop;

  // The sweep's view of the entry at scan_reg (lk_tag follows scan_reg while scanning).
  wire scan_done = scan_reg >= ntags;
  wire scan_match = lk_in_use &&
      (cmd_op_reg == OP_EXPIRE ? lk_deadline <= cmd_now_reg :
       cmd_op_reg == OP_RELEASE_HOST ? 16'(lk_host) == cmd_arg_reg :
       32'(lk_dev) == 32'(cmd_arg_reg));
  wire scan_emits = cmd_op_reg == OP_EXPIRE || cmd_op_reg == OP_RELEASE_DEVICE;
  wire limit_reached = emitted_reg >= cmd_limit_reg;
  // EXPIRE stops at its limit; RELEASE_DEVICE abandons past it without emitting.
  wire scan_emit = cmd_state_reg == CMD_SCAN && !scan_done && scan_match && scan_emits &&
                   !limit_reached;
  wire scan_step = cmd_state_reg == CMD_SCAN && !scan_done &&
                   !(cmd_op_reg == OP_EXPIRE && limit_reached) && (!scan_emit || out_free);
  wire scan_abandon = scan_step && scan_match;

  // The completion a sweep emits for the entry it ends (the golden's TimeoutCompletion()).
  tlp_t timeout_cpl;
  always_comb begin
    timeout_cpl = '0;
    timeout_cpl.kind = KIND_CPL;
    timeout_cpl.requester = lk_requester;
    timeout_cpl.tag = lk_host_tag;
    timeout_cpl.completer = host_rid[lk_dev];
    timeout_cpl.status = 3'd1;
    timeout_cpl.byte_count = lk_remaining;
    timeout_cpl.lower_addr = lk_lower_addr;
  end

  // Table operations this cycle.
  always_comb begin
    alloc_en = take_sop && dec_alloc;
    free_en = take_sop && dec_free;
    free_tag = t.tag[TAG_W-1:0];
    partial_en = take_sop && dec_partial;
    partial_tag = t.tag[TAG_W-1:0];
    partial_remaining = t.byte_count - carried;
    partial_lower_addr = 7'(t.lower_addr + carried[6:0]);
    abandon_en = scan_abandon;
    abandon_tag = scan_reg[TAG_W-1:0];
    qrel_en = cmd_state_reg == CMD_QREL && q_nonempty && q_front_until <= cmd_now_reg;
    init_now = cmd_state_reg == CMD_FINISH && cmd_op_reg == OP_INIT;
    release_dev_en = 1'b0;
    release_dev = cmd_arg_reg[DEV_W-1:0];
    release_host_en = 1'b0;
    release_host = cmd_arg_reg;
    clr_dev_en = 1'b0;
    clr_dev_dma_only = 1'b0;
    clr_dev = cmd_arg_reg[DEV_W-1:0];
    clr_host_en = 1'b0;
    if (wr_entry && !busy && owner_change) begin
      clr_dev_en = 1'b1;  // a new owner starts with no windows
      clr_dev = wr_dev;
    end else if (cmd_state_reg == CMD_FINISH) begin
      case (cmd_op_reg)
        OP_RELEASE_DEVICE: begin
          // Owner gone: as SetDevice with NO_HOST, windows only go if there was one.
          release_dev_en = owner[cmd_arg_reg[DEV_W-1:0]] != NO_HOST;
          clr_dev_en = release_dev_en;
        end
        OP_RELEASE_HOST: begin
          release_host_en = 1'b1;
          clr_host_en = 1'b1;
        end
        OP_CLEAR_DMA: begin
          clr_dev_en = 1'b1;
          clr_dev_dma_only = 1'b1;
        end
        default: ;
      endcase
    end
  end

  // One decision (a TLP's, or a sweep's completion) per cycle is counted.
  logic count_en, count_peer;
  route_t count_route;
  refusal_t count_refusal;
  always_comb begin
    count_en = 1'b0;
    count_peer = 1'b0;
    count_route = dec.route;
    count_refusal = dec.refusal;
    if (take_sop) begin
      count_en = 1'b1;
      count_peer = dec_peer;
    end else if (scan_emit && scan_step) begin
      count_en = 1'b1;
      count_route = ROUTE_HOST;
      count_refusal = REF_COMPLETION_TIMEOUT;
    end
  end

  wire [63:0] now_max = now > now_reg ? now : now_reg;

  always_ff @(posedge clk) begin
    // Output register.
    if (out_free) m_valid_reg <= 1'b0;
    if (take) begin
      m_valid_reg <= 1'b1;
      m_data_reg <= c_data;
      m_sop_reg <= c_sop;
      m_eop_reg <= c_eop;
      if (c_sop) begin
        m_route_reg <= dec.route;
        m_port_reg <= dec.port;
        m_refusal_reg <= dec.refusal;
        pkt_route_reg <= dec.route;
        pkt_port_reg <= dec.port;
        pkt_refusal_reg <= dec.refusal;
        if (dec.route == ROUTE_RETRY) begin  // back unchanged, to be offered again
          m_hdr_reg <= c_hdr;
          m_len_reg <= c_len;
          m_keep_reg <= c_keep;
          pkt_hdr_reg <= c_hdr;
          pkt_len_reg <= c_len;
          pkt_pass_reg <= 1'b1;
        end else if (dec.route == ROUTE_DROP || dec.answer) begin
          m_hdr_reg <= dec.answer ? tlp_build(dec.tlp) : '0;
          m_len_reg <= dec.answer ? TLP_LEN_WIDTH'(12) : '0;
          m_keep_reg <= '0;
          pkt_hdr_reg <= dec.answer ? tlp_build(dec.tlp) : '0;
          pkt_len_reg <= dec.answer ? TLP_LEN_WIDTH'(12) : '0;
          pkt_pass_reg <= 1'b0;
        end else begin
          m_hdr_reg <= tlp_build(dec.tlp);
          m_len_reg <= c_len - (c_hdr4 ? TLP_LEN_WIDTH'(16) : TLP_LEN_WIDTH'(12)) +
                       (tlp_hdr4(dec.tlp.kind, dec.tlp.addr[63:32]) ? TLP_LEN_WIDTH'(16)
                                                                     : TLP_LEN_WIDTH'(12));
          m_keep_reg <= c_keep;
          pkt_hdr_reg <= tlp_build(dec.tlp);
          pkt_len_reg <= c_len - (c_hdr4 ? TLP_LEN_WIDTH'(16) : TLP_LEN_WIDTH'(12)) +
                         (tlp_hdr4(dec.tlp.kind, dec.tlp.addr[63:32]) ? TLP_LEN_WIDTH'(16)
                                                                       : TLP_LEN_WIDTH'(12));
          pkt_pass_reg <= 1'b1;
        end
        in_pkt_reg <= !c_eop;
        now_reg <= now_max;
      end else begin
        m_route_reg <= pkt_route_reg;
        m_port_reg <= pkt_port_reg;
        m_refusal_reg <= pkt_refusal_reg;
        m_hdr_reg <= pkt_hdr_reg;
        m_len_reg <= pkt_len_reg;
        m_keep_reg <= pkt_pass_reg ? c_keep : '0;
        in_pkt_reg <= !c_eop;
      end
    end else if (scan_emit && scan_step) begin
      m_valid_reg <= 1'b1;
      m_hdr_reg <= tlp_build(timeout_cpl);
      m_len_reg <= TLP_LEN_WIDTH'(12);
      m_data_reg <= '0;
      m_keep_reg <= '0;
      m_sop_reg <= 1'b1;
      m_eop_reg <= 1'b1;
      m_route_reg <= ROUTE_HOST;
      m_port_reg <= 16'(lk_host);
      m_refusal_reg <= REF_COMPLETION_TIMEOUT;
    end

    // Counters.
    if (count_en) begin
      case (count_route)
        ROUTE_DEVICE: counter_reg[0] <= counter_reg[0] + 1;
        ROUTE_HOST: counter_reg[1] <= counter_reg[1] + 1;
        ROUTE_DROP: counter_reg[5] <= counter_reg[5] + 1;
        default: counter_reg[3] <= counter_reg[3] + 1;
      endcase
      if (count_peer) counter_reg[2] <= counter_reg[2] + 1;
      if (count_refusal != REF_NONE) begin
        counter_reg[8+int'(count_refusal)] <= counter_reg[8+int'(count_refusal)] + 1;
        if (count_route != ROUTE_DROP) counter_reg[4] <= counter_reg[4] + 1;
      end
    end

    // Configuration and commands from the register interface.
    if (reg_wr_en) begin
      case (reg_wr_addr)
        REG_BRIDGE_RID: bridge_rid_reg <= reg_wr_data[15:0];
        REG_DEVICES: devices_reg <= reg_wr_data[15:0];
        REG_HOST_SLOTS: host_slots_reg <= reg_wr_data[15:0];
        REG_BOX_TAGS: box_tags_reg <= reg_wr_data[15:0];
        REG_MAX_PER_HOST: max_per_host_reg <= reg_wr_data[15:0];
        REG_CPL_TIMEOUT: cpl_timeout_reg <= reg_wr_data;
        REG_QUARANTINE: quarantine_reg <= reg_wr_data;
        REG_COMMAND: begin
          if (busy) begin
            overrun_reg <= 1'b1;
          end else if (reg_wr_data[2:0] != 3'(OP_NONE) && reg_wr_data[2:0] != 3'(OP_ABANDON_DEVICE)) begin
            cmd_pending_reg <= 1'b1;
            cmd_op_reg <= op_t'(reg_wr_data[2:0]);
            cmd_arg_reg <= reg_wr_data[31:16];
            cmd_limit_reg <= reg_wr_data[63:32];
          end
        end
        default: ;
      endcase
    end
    if (entry_refused) overrun_reg <= 1'b1;
    if (wr_entry && !busy && owner_change) begin
      cmd_pending_reg <= 1'b1;
      cmd_op_reg <= OP_ABANDON_DEVICE;
      cmd_arg_reg <= 16'(wr_dev);
      cmd_limit_reg <= '0;
    end

    // The command engine: starts between TLPs.
    case (cmd_state_reg)
      CMD_IDLE:
      if (cmd_pending_reg && !in_pkt_reg) begin
        cmd_pending_reg <= 1'b0;
        cmd_now_reg <= now;
        scan_reg <= '0;
        emitted_reg <= '0;
        case (cmd_op_reg)
          OP_EXPIRE: begin
            now_reg <= now_max;
            cmd_state_reg <= CMD_QREL;
          end
          OP_RELEASE_DEVICE: begin
            now_reg <= now_max;
            cmd_state_reg <= CMD_SCAN;
          end
          OP_RELEASE_HOST, OP_ABANDON_DEVICE: cmd_state_reg <= CMD_SCAN;
          default: cmd_state_reg <= CMD_FINISH;
        endcase
      end
      // Quarantine released up to now, so an earliest deadline after now is a pending one:
      // nothing is due and the sweep is skipped (the firmware polls EXPIRE often).
      CMD_QREL: if (!qrel_en) cmd_state_reg <= next_deadline > cmd_now_reg ? CMD_FINISH : CMD_SCAN;
      CMD_SCAN: begin
        if (scan_step) begin
          scan_reg <= scan_reg + 1'b1;
          if (scan_emit) emitted_reg <= emitted_reg + 1'b1;
        end
        if (scan_done || (cmd_op_reg == OP_EXPIRE && limit_reached)) cmd_state_reg <= CMD_FINISH;
      end
      default: cmd_state_reg <= CMD_IDLE;  // CMD_FINISH: its table operations happen now
    endcase

    if (init_now) begin
      for (int i = 0; i < COUNTERS; i++) counter_reg[i] <= '0;
      now_reg <= '0;
      overrun_reg <= 1'b0;
      in_pkt_reg <= 1'b0;
    end
    if (rst) begin
      m_valid_reg <= 1'b0;
      in_pkt_reg <= 1'b0;
      cmd_state_reg <= CMD_IDLE;
      cmd_pending_reg <= 1'b0;
      cmd_op_reg <= OP_NONE;
      overrun_reg <= 1'b0;
      now_reg <= '0;
      bridge_rid_reg <= 16'h0008;
      devices_reg <= 16'(DEVICES);
      host_slots_reg <= 16'(HOSTS);
      box_tags_reg <= 16'(TAGS);
      max_per_host_reg <= 16'd64;
      cpl_timeout_reg <= 64'd50_000_000;
      quarantine_reg <= 64'd100_000_000;
      for (int i = 0; i < COUNTERS; i++) counter_reg[i] <= '0;
    end
  end

  // Register reads (combinational).
  always_comb begin
    reg_rd_data = '0;
    if (rd_device) begin
      if (rd_off == 8'h00) reg_rd_data = {16'h0, owner[rd_dev], host_rid[rd_dev], box_rid[rd_dev]};
      else if ((rd_off >= 8'h10 && rd_off < 8'h28) ||
               (rd_off >= 8'h40 && rd_off < 8'h40 + 8'(4 * DMA_WINDOWS)))
        reg_rd_data = rd_win_off[1:0] == 2'd3 ? '0 : win_rd_data;
    end else if (reg_rd_addr >= REG_COUNTERS && reg_rd_addr < REG_COUNTERS + 16'(COUNTERS)) begin
      case (reg_rd_addr - REG_COUNTERS)
        16'd6: reg_rd_data = 64'(pending);
        16'd7: reg_rd_data = 64'(tags_free);
        default: reg_rd_data = counter_reg[reg_rd_addr[4:0]];
      endcase
    end else begin
      case (reg_rd_addr)
        REG_ID: reg_rd_data = ID_VALUE;
        REG_PARAMS: reg_rd_data = {16'(DMA_WINDOWS), 16'(TAGS), 16'(HOSTS), 16'(DEVICES)};
        REG_BRIDGE_RID: reg_rd_data = 64'(bridge_rid_reg);
        REG_DEVICES: reg_rd_data = 64'(devices_reg);
        REG_HOST_SLOTS: reg_rd_data = 64'(host_slots_reg);
        REG_BOX_TAGS: reg_rd_data = 64'(box_tags_reg);
        REG_MAX_PER_HOST: reg_rd_data = 64'(max_per_host_reg);
        REG_CPL_TIMEOUT: reg_rd_data = cpl_timeout_reg;
        REG_QUARANTINE: reg_rd_data = quarantine_reg;
        REG_COMMAND: reg_rd_data = {62'h0, overrun_reg, busy};
        REG_NEXT_DEADLINE: reg_rd_data = next_deadline;
        REG_NOW: reg_rd_data = now_reg;
        default: ;
      endcase
    end
  end

  assign m_tlp_hdr = m_hdr_reg;
  assign m_tlp_len = m_len_reg;
  assign m_tlp_data = m_data_reg;
  assign m_tlp_keep = m_keep_reg;
  assign m_tlp_route = m_route_reg;
  assign m_tlp_port = m_port_reg;
  assign m_tlp_refusal = m_refusal_reg;
  assign m_tlp_sop = m_sop_reg;
  assign m_tlp_eop = m_eop_reg;
  assign m_tlp_valid = m_valid_reg;

endmodule

`resetall
