// bitmap_checker.p4 (TNA): the seen bitmaps. Rust twin: p4/model/src/bitmap_checker.rs
// (BitmapChecker). A Tofino register cell is at most a pair of 32-bit words, so the
// model's cell {seen[0], seen[1]} of 64 ranks each is two registers here: `seen_lo` (ranks
// 0-31) and `seen_hi` (ranks 32-63), each cell the pair {version 0 word, version 1 word},
// as the original's bitmap pair. Both run once per pass: the word holding the rank sets
// its bit in version v, the other word only resets on a new use; version 1-v is left alone
// (protocol.md §4, "Why seen[1−v] is not cleared").
//
// The countdown comes after these registers, so the bit is set whenever it was clear and
// the count matched, before the pipeline knows whether the use is complete. That is safe:
// in a complete use every rank's bit is set (only a new use's reset clears one), so the
// check writes nothing there, as the reference leaves the bitmap when it answers.
#ifndef _SWITCHML_BITMAP_CHECKER_P4_
#define _SWITCHML_BITMAP_CHECKER_P4_

struct seen_pair_t {
    bit<32> v0;
    bit<32> v1;
}

// One word register: ranks 32·half .. 32·half+31 of both versions. A check returns the
// word of version v before this packet (0 on a new use, which resets it) and sets the
// rank's bit (`set_bit`: the rank's bit if the count matched, else 0): one comparison and
// no mask in the stateful ALU, which compares at most twice and masks only with constants;
// the control tests the returned word against the rank's bit.
control SeenWord(inout metadata_t meta, in bit<32> set_bit, in bit<1> probe,
                 out bit<32> word) {
    Register<seen_pair_t, bit<32>>(POOL_SLOTS) seen;

    RegisterAction<seen_pair_t, bit<32>, bit<32>>(seen) check_v0 = {
        void apply(inout seen_pair_t w, out bit<32> before) {
            before = 0;
            if (meta.begin == 1) {
                w.v0 = set_bit;
            } else {
                before = w.v0;
                w.v0 = w.v0 | set_bit;
            }
        }
    };

    RegisterAction<seen_pair_t, bit<32>, bit<32>>(seen) check_v1 = {
        void apply(inout seen_pair_t w, out bit<32> before) {
            before = 0;
            if (meta.begin == 1) {
                w.v1 = set_bit;
            } else {
                before = w.v1;
                w.v1 = w.v1 | set_bit;
            }
        }
    };

    RegisterAction<seen_pair_t, bit<32>, bit<32>>(seen) read_v0 = {
        void apply(inout seen_pair_t w, out bit<32> r) {
            r = w.v0;
        }
    };

    RegisterAction<seen_pair_t, bit<32>, bit<32>>(seen) read_v1 = {
        void apply(inout seen_pair_t w, out bit<32> r) {
            r = w.v1;
        }
    };

    apply {
        if (probe == 1) {
            if (meta.p_ver == 0) {
                word = read_v0.execute(meta.pool_slot);
            } else {
                word = read_v1.execute(meta.pool_slot);
            }
        } else if (meta.p_ver == 0) {
            word = check_v0.execute(meta.pool_slot);
        } else {
            word = check_v1.execute(meta.pool_slot);
        }
    }
}

control BitmapChecker(inout metadata_t meta, in bit<1> probe) {
    SeenWord() seen_lo;
    SeenWord() seen_hi;

    apply {
        // Whole fields as the register actions' operands (a slice would be a copy, which
        // p4test reads as uninitialised there).
        meta.seen_set_lo = 0;
        meta.seen_set_hi = 0;
        if (meta.count_ok == 1) {
            meta.seen_set_lo = meta.rank_bit[31:0];
            meta.seen_set_hi = meta.rank_bit[63:32];
        }
        bit<32> lo_word;
        bit<32> hi_word;
        seen_lo.apply(meta, meta.seen_set_lo, probe, lo_word);
        seen_hi.apply(meta, meta.seen_set_hi, probe, hi_word);
        if (probe == 1) {
            meta.seen_word = hi_word ++ lo_word;
        } else {
            bit<32> hit = (lo_word & meta.rank_bit[31:0]) | (hi_word & meta.rank_bit[63:32]);
            meta.seen = 0;
            if (hit != 0) {
                meta.seen = 1;
            }
        }
    }
}

#endif
