// bitmap_checker.p4 (v1model): register `seen`, both versions of a slot in one cell
// ({v1:64, v0:64}). Only seen[v] changes; seen[1-v] is left alone (protocol.md §4, "Why
// seen[1−v] is not cleared").
// Rust twin: p4/model/src/bitmap_checker.rs (BitmapChecker).
//
// The countdown (workers_counter.p4) comes after this register, so the bit is set whenever
// it was clear and the count matched, before the pipeline knows whether the use is already
// complete. That is safe: a complete use counted every rank once since its reset, each
// setting its bit, and only a reset clears one, so in a complete use the bit is set and
// nothing is written, as the reference leaves the bitmap when it answers a completed use.
#ifndef _SWITCHML_BITMAP_CHECKER_P4_
#define _SWITCHML_BITMAP_CHECKER_P4_

control BitmapChecker(inout metadata_t meta, in bit<1> probe) {
    register<bit<128>>(POOL_SLOTS) seen;

    apply {
        bit<128> cell;
        seen.read(cell, meta.pool_slot);
        bit<64> mine = (meta.p_ver == 0) ? cell[63:0] : cell[127:64];
        bit<64> other = (meta.p_ver == 0) ? cell[127:64] : cell[63:0];
        bit<1> write = 0;
        if (probe == 1) {
            meta.seen_word = mine;
        } else {
            if (meta.begin == 1) {
                mine = 0;
                write = 1;
            }
            meta.seen = ((mine & meta.rank_bit) != 0) ? 1w1 : 1w0;
            if (meta.count_ok == 1 && meta.seen == 0) {
                mine = mine | meta.rank_bit;
                write = 1;
            }
        }
        if (write == 1) {
            seen.write(meta.pool_slot, (meta.p_ver == 0) ? (other ++ mine) : (mine ++ other));
        }
    }
}

#endif
