// join_handler.p4 (TNA): the rendezvous. Rust twin: p4/model/src/join_handler.rs
// (JoinHandler). The model's 64-bit `joined` cell per job is two 32-bit registers here
// (`joined_lo`: ranks 0-31, `joined_hi`: ranks 32-63); each returns its word before the
// Join, from which COMPLETE and "this Join completes" follow. With `status` set it is the
// read a Status needs (JoinHandler::status): the same RegisterAction with an empty mask,
// which returns the word and leaves it unchanged.
#ifndef _SWITCHML_JOIN_HANDLER_P4_
#define _SWITCHML_JOIN_HANDLER_P4_

control JoinedWord(in bit<16> job_index, in bit<32> mask, out bit<32> before) {
    Register<bit<32>, bit<16>>(MAX_JOBS) joined;

    RegisterAction<bit<32>, bit<16>, bit<32>>(joined) join = {
        void apply(inout bit<32> value, out bit<32> old) {
            old = value;
            value = value | mask;
        }
    };

    apply {
        before = join.execute(job_index);
    }
}

control JoinHandler(inout headers_t hdr, inout metadata_t meta, in bit<1> status) {
    JoinedWord() joined_lo;
    JoinedWord() joined_hi;

    apply {
        if (status == 1) {
            // status_handler.p4 found the job: nothing to check.
        } else if (meta.job_hit == 0) {
            meta.abort_reason = ABORT_UNKNOWN_JOB;
            meta.abort_detail = 0;
        } else if (meta.rank_known == 0) {
            meta.abort_reason = ABORT_UNKNOWN_RANK;
            meta.abort_detail = meta.world;
        } else if (hdr.join.world != meta.world) {
            meta.abort_reason = ABORT_WORLD_MISMATCH;
            meta.abort_detail = meta.world;
        } else if (hdr.join.slot_count == 0 || (bit<32>)hdr.join.slot_lo
                + (bit<32>)hdr.join.slot_count > (bit<32>)meta.slot_count) {
            meta.abort_reason = ABORT_SLOT_RANGE;
            meta.abort_detail = meta.slot_count;
        } else if (hdr.join.count > meta.max_count) {
            meta.abort_reason = ABORT_COUNT_TOO_LARGE;
            meta.abort_detail = meta.max_count;
        }
        if (meta.abort_reason == 0) {
            bit<64> mask = (status == 1) ? 64w0 : meta.rank_bit;
            bit<32> lo;
            bit<32> hi;
            joined_lo.apply(meta.job_index, mask[31:0], lo);
            joined_hi.apply(meta.job_index, mask[63:32], hi);
            bit<64> old = hi ++ lo;
            meta.joined = old | mask;
            meta.join_complete = (meta.joined == meta.full_mask) ? 1w1 : 1w0;
            if (status == 0 && (old & mask) == 0 && meta.join_complete == 1) {
                meta.join_completes = 1;
            }
        }
    }
}

#endif
