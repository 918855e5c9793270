// dxpu_tag_remap - tag remapping with the pending-request table (docs/rtl.md). A host's
// non-posted request goes to a device under a tag of the bridge's (a box tag), so that
// requests of many hosts never collide; the entry the box tag indexes remembers whose it was
// (host, device, the host's requester ID and tag) and what its completions still owe (Byte
// Count and Lower Address of the next one), until its deadline.
//
//   alloc    takes the free tag on top of the free stack (lowest tags first, a freed tag is
//            the next one taken, as the golden model's free list): alloc_ok says whether one
//            may be taken now: a tag is free and the host is below its quota. The data path
//            answers a request that cannot have one with a retry, which stops that host's
//            queue (back-pressure per host, so one host cannot stall the others).
//   free     the last completion came: the tag is free at once.
//   partial  a completion came and more will: the entry owes less.
//   abandon  the request ended without its last completion (timeout, release): the tag rests
//            in quarantine until `until`, so that a late completion finds it idle.
//   qrel     the oldest quarantined tag goes back to the free stack.
//
// At most one of alloc, free, abandon and qrel per cycle (the data path issues one operation
// per header or per sweep step); partial may come with none of them. Lookups, the quota check
// and the earliest deadline are combinational.
module dxpu_tag_remap #(
    parameter int TAGS = 256,
    parameter int HOSTS = 64,
    parameter int DEVICES = 8,
    parameter int TAG_W = $clog2(TAGS),
    parameter int HOST_W = $clog2(HOSTS),
    parameter int DEV_W = $clog2(DEVICES)
) (
    input wire logic clk,
    input wire logic rst,

    // Start over with box_tags tags free (1..TAGS), nothing pending or quarantined.
    input wire logic         init,
    input wire logic [TAG_W:0] box_tags,
    input wire logic [  15:0] max_per_host,

    input  wire logic [HOST_W-1:0] alloc_host,  // the host the quota check is for
    output logic                   alloc_ok,
    output logic      [ TAG_W-1:0] alloc_tag,
    input  wire logic              alloc_en,
    input  wire logic [ DEV_W-1:0] alloc_dev,
    input  wire logic [      15:0] alloc_requester,
    input  wire logic [       9:0] alloc_host_tag,
    input  wire logic [      12:0] alloc_remaining,
    input  wire logic [       6:0] alloc_lower_addr,
    input  wire logic [      63:0] alloc_deadline,

    input  wire logic [ TAG_W-1:0] lk_tag,
    output logic                   lk_in_use,
    output logic      [HOST_W-1:0] lk_host,
    output logic      [ DEV_W-1:0] lk_dev,
    output logic      [      15:0] lk_requester,
    output logic      [       9:0] lk_host_tag,
    output logic      [      12:0] lk_remaining,
    output logic      [       6:0] lk_lower_addr,
    output logic      [      63:0] lk_deadline,

    input wire logic             free_en,
    input wire logic [TAG_W-1:0] free_tag,

    input wire logic             partial_en,
    input wire logic [TAG_W-1:0] partial_tag,
    input wire logic [     12:0] partial_remaining,
    input wire logic [      6:0] partial_lower_addr,

    input wire logic             abandon_en,
    input wire logic [TAG_W-1:0] abandon_tag,
    input wire logic [     63:0] abandon_until,

    input  wire logic        qrel_en,
    output logic             q_nonempty,
    output logic      [63:0] q_front_until,

    output logic [TAG_W:0] tags_free,
    output logic [TAG_W:0] pending,
    output logic [   63:0] next_deadline  // earliest deadline or quarantine end; all ones: none
);

  if (TAGS < 2 || TAGS > 1024) begin : g_bad_tags
    $error("dxpu_tag_remap: TAGS %0d must be 2..1024 (10-bit tags)", TAGS);
  end
  if (HOSTS < 2 || DEVICES < 2) begin : g_bad_sizes
    $error("dxpu_tag_remap: HOSTS and DEVICES must be at least 2");
  end
  if (TAG_W != $clog2(TAGS) || HOST_W != $clog2(HOSTS) || DEV_W != $clog2(DEVICES)) begin : g_bad_w
    $error("dxpu_tag_remap: TAG_W, HOST_W, DEV_W must be the $clog2 of their counts");
  end

  typedef struct packed {
    logic              in_use;
    logic [HOST_W-1:0] host;
    logic [DEV_W-1:0]  dev;
    logic [15:0]       requester;
    logic [9:0]        host_tag;
    logic [12:0]       remaining;
    logic [6:0]        lower_addr;
    logic [63:0]       deadline;
  } entry_t;

  entry_t entry_reg[TAGS];
  logic [TAG_W-1:0] stack_reg[TAGS];  // free tags; the top is stack_reg[free_count_reg - 1]
  logic [TAG_W:0] free_count_reg;
  logic [TAG_W-1:0] q_tag_reg[TAGS];  // quarantine, a ring in order of until
  logic [63:0] q_until_reg[TAGS];
  logic [TAG_W-1:0] q_head_reg, q_tail_reg;
  logic [TAG_W:0] q_count_reg;
  logic [TAG_W:0] held_reg[HOSTS];  // requests each host has pending
  logic [TAG_W:0] pending_reg;

  // Index arithmetic on rings of TAGS entries (TAGS need not be a power of two).
  function automatic logic [TAG_W-1:0] ring_next(input logic [TAG_W-1:0] i);
    return i == TAG_W'(TAGS - 1) ? '0 : i + 1'b1;
  endfunction

  assign alloc_ok  = free_count_reg != '0 && 16'(held_reg[alloc_host]) < max_per_host;
  assign alloc_tag = free_count_reg != '0 ? stack_reg[TAG_W'(free_count_reg - 1'b1)] : '0;

  always_comb begin
    entry_t e;
    e = entry_reg[lk_tag];
    lk_in_use     = e.in_use;
    lk_host       = e.host;
    lk_dev        = e.dev;
    lk_requester  = e.requester;
    lk_host_tag   = e.host_tag;
    lk_remaining  = e.remaining;
    lk_lower_addr = e.lower_addr;
    lk_deadline   = e.deadline;
  end

  assign q_nonempty    = q_count_reg != '0;
  assign q_front_until = q_until_reg[q_head_reg];
  assign tags_free     = free_count_reg;
  assign pending       = pending_reg;

  always_comb begin
    next_deadline = q_nonempty ? q_front_until : '1;
    for (int t = 0; t < TAGS; t++)
      if (entry_reg[t].in_use && entry_reg[t].deadline < next_deadline)
        next_deadline = entry_reg[t].deadline;
  end

  // The entry a free or an abandon ends, and its host.
  wire [TAG_W-1:0] end_tag = free_en ? free_tag : abandon_tag;
  wire [HOST_W-1:0] end_host = entry_reg[end_tag].host;
  wire do_alloc = alloc_en && alloc_ok;
  wire do_end = free_en || abandon_en;
  wire do_qrel = qrel_en && q_nonempty;
  // A tag goes onto the free stack (freed, or out of quarantine).
  wire push = free_en || do_qrel;
  wire [TAG_W-1:0] push_tag = free_en ? free_tag : q_tag_reg[q_head_reg];

  // One always block per table entry: the tables are too large for a loop of delayed
  // assignments.
  for (genvar t = 0; t < TAGS; t++) begin : g_tag
    always_ff @(posedge clk) begin
      if (rst || init) begin
        entry_reg[t] <= '0;
        // Lowest tags on top: box_tags-1 at the bottom ... 0 on top.
        stack_reg[t] <= TAG_W'(32'(box_tags) - 1 - t);
      end else begin
        if (do_alloc && alloc_tag == TAG_W'(t))
          entry_reg[t] <= '{
              in_use: 1'b1,
              host: alloc_host,
              dev: alloc_dev,
              requester: alloc_requester,
              host_tag: alloc_host_tag,
              remaining: alloc_remaining,
              lower_addr: alloc_lower_addr,
              deadline: alloc_deadline
          };
        if (partial_en && partial_tag == TAG_W'(t)) begin
          entry_reg[t].remaining  <= partial_remaining;
          entry_reg[t].lower_addr <= partial_lower_addr;
        end
        if (do_end && end_tag == TAG_W'(t)) entry_reg[t].in_use <= 1'b0;
        if (push && free_count_reg == (TAG_W + 1)'(t)) stack_reg[t] <= push_tag;
      end
    end
    always_ff @(posedge clk) begin
      if (rst) begin
        q_tag_reg[t]   <= '0;
        q_until_reg[t] <= '0;
      end else if (abandon_en && q_tail_reg == TAG_W'(t)) begin
        q_tag_reg[t]   <= abandon_tag;
        q_until_reg[t] <= abandon_until;
      end
    end
  end

  for (genvar h = 0; h < HOSTS; h++) begin : g_host
    always_ff @(posedge clk) begin
      if (rst || init) held_reg[h] <= '0;
      else if (do_alloc && alloc_host == HOST_W'(h)) held_reg[h] <= held_reg[h] + 1'b1;
      else if (do_end && end_host == HOST_W'(h)) held_reg[h] <= held_reg[h] - 1'b1;
    end
  end

  always_ff @(posedge clk) begin
    if (rst || init) begin
      free_count_reg <= rst ? '0 : box_tags;
      q_head_reg <= '0;
      q_tail_reg <= '0;
      q_count_reg <= '0;
      pending_reg <= '0;
    end else begin
      if (do_alloc) begin
        free_count_reg <= free_count_reg - 1'b1;
        pending_reg <= pending_reg + 1'b1;
      end
      if (do_end) pending_reg <= pending_reg - 1'b1;
      if (push) free_count_reg <= free_count_reg + 1'b1;
      if (abandon_en) q_tail_reg <= ring_next(q_tail_reg);
      if (do_qrel) q_head_reg <= ring_next(q_head_reg);
      if (abandon_en && !do_qrel) q_count_reg <= q_count_reg + 1'b1;
      else if (do_qrel && !abandon_en) q_count_reg <= q_count_reg - 1'b1;
    end
  end

endmodule
