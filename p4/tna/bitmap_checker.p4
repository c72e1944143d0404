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

// One word register: ranks 32·half .. 32·half+31 of both versions. The check actions
// output 1 when the rank was seen in v.
control SeenWord(inout metadata_t meta, in bit<32> mask, in bit<1> probe,
                 out bit<8> flags, out bit<32> word) {
    Register<seen_pair_t, bit<32>>(POOL_SLOTS) seen;

    RegisterAction<seen_pair_t, bit<32>, bit<8>>(seen) check_v0 = {
        void apply(inout seen_pair_t w, out bit<8> f) {
            if (meta.begin == 1) {
                w.v0 = 0;
            }
            f = 0;
            if ((w.v0 & mask) != 0) {
                f = 1;
            } else if (meta.count_ok == 1 && mask != 0) {
                w.v0 = w.v0 | mask;
            }
        }
    };

    RegisterAction<seen_pair_t, bit<32>, bit<8>>(seen) check_v1 = {
        void apply(inout seen_pair_t w, out bit<8> f) {
            if (meta.begin == 1) {
                w.v1 = 0;
            }
            f = 0;
            if ((w.v1 & mask) != 0) {
                f = 1;
            } else if (meta.count_ok == 1 && mask != 0) {
                w.v1 = w.v1 | mask;
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
        flags = 0;
        word = 0;
        if (probe == 1) {
            if (meta.p_ver == 0) {
                word = read_v0.execute(meta.pool_slot);
            } else {
                word = read_v1.execute(meta.pool_slot);
            }
        } else if (meta.p_ver == 0) {
            flags = check_v0.execute(meta.pool_slot);
        } else {
            flags = check_v1.execute(meta.pool_slot);
        }
    }
}

control BitmapChecker(inout metadata_t meta, in bit<1> probe) {
    SeenWord() seen_lo;
    SeenWord() seen_hi;

    apply {
        bit<8> lo_flags;
        bit<8> hi_flags;
        bit<32> lo_word;
        bit<32> hi_word;
        seen_lo.apply(meta, meta.rank_bit[31:0], probe, lo_flags, lo_word);
        seen_hi.apply(meta, meta.rank_bit[63:32], probe, hi_flags, hi_word);
        bit<8> f = lo_flags | hi_flags;
        if (probe == 1) {
            meta.seen_word = hi_word ++ lo_word;
        } else {
            meta.seen = f[0:0];
        }
    }
}

#endif
