// validator.p4 (both targets): the field checks a parser cannot make, and the message class.
// Rust twin: p4/model/src/validator.rs (Validator). protocol.md §2-4: a message is
// Malformed if its version is not 1, its length is not exactly what its header declares, a
// reserved field is not zero, `ver` is above 1, or a Join's nonce or lanes is zero;
// ProbeReply and StatusReply are UnexpectedType, unknown types UnknownType. A Cookie is
// MSG_COOKIE, a parent's for the controller (protocol.md §4.2). A Result or
// JoinReply is checked as a child switch takes it from its parent (protocol.md §7) and
// marked meta.from_parent: tier_selector.p4 drops it as UnexpectedType, before these
// checks count, unless its job is a child's parent's. It also picks the message's session
// for the run tracker (a Join's nonce, the session of the run it would open).
#ifndef _SWITCHML_VALIDATOR_P4_
#define _SWITCHML_VALIDATOR_P4_

control Validator(inout headers_t hdr, inout metadata_t meta) {
    apply {
        bit<32> udp_len = (bit<32>)hdr.udp.length;
        meta.message = MSG_NONE;
        meta.from_parent = 0;
        if (hdr.prefix.isValid() && hdr.prefix.version == PROTOCOL_VERSION
                && (hdr.prefix.msg_type == TYPE_RESULT
                    || hdr.prefix.msg_type == TYPE_JOIN_REPLY)) {
            meta.from_parent = 1;
        }
        // Flags of one comparison each, then a chain of `==` tests: bf-p4c merges an
        // else-if chain, and the ifs nested in it, into one gateway, which cannot negate a
        // `!=` inside a conjunction ahead of more rows ("gateway condition too complex").
        bit<1> right_version = 0;
        if (hdr.prefix.version == PROTOCOL_VERSION) {
            right_version = 1;
        }
        if (meta.parser_failed == 1) {
            meta.drop_reason = DROP_MALFORMED;
        } else if (right_version == 0) {
            meta.drop_reason = DROP_MALFORMED;
        } else if (hdr.data.isValid()) {
            if (udp_len == 32 + ((bit<32>)hdr.data.count << 2) && hdr.data.ver <= 1
                    && hdr.data.reserved == 0) {
                meta.message = (meta.from_parent == 1) ? MSG_RESULT : MSG_CONTRIBUTION;
                meta.p_session = hdr.data.session;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.join_reply.isValid()) {
            if (udp_len == 40 + (bit<32>)hdr.join_reply.bitmap_len
                    && hdr.join_reply.bitmap_len <= MAX_BITMAP) {
                meta.message = MSG_JOIN_REPLY;
                meta.p_session = hdr.join_reply.session;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.join.isValid()) {
            bit<1> join_ok = 0;
            if (udp_len == 52) {
                join_ok = 1;
            }
            if (hdr.join.lanes == 0) {
                join_ok = 0;
            }
            if (hdr.join.nonce == 0) {
                join_ok = 0;
            }
            if (join_ok == 1) {
                meta.message = MSG_JOIN;
                meta.p_session = hdr.join.nonce;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.probe.isValid()) {
            if (udp_len == 28 && hdr.probe.ver <= 1 && hdr.probe.reserved == 0) {
                meta.message = MSG_PROBE;
                meta.p_session = hdr.probe.session;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.abort.isValid()) {
            if (udp_len == 28 && hdr.abort.reserved_a == 0 && hdr.abort.reserved_b == 0) {
                meta.message = MSG_ABORT;
                meta.p_session = hdr.abort.session;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.leave.isValid()) {
            if (udp_len == 20 && hdr.leave.reserved == 0) {
                meta.message = MSG_LEAVE;
                meta.p_session = hdr.leave.session;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.status.isValid()) {
            // Checked here, answered by the controller (its tag and cookie, §4.2).
            bit<1> status_ok = 0;
            if (udp_len == 44 && hdr.status.reserved == 0) {
                status_ok = 1;
            }
            if (hdr.status.nonce == 0) {
                status_ok = 0;
            }
            if (status_ok == 1) {
                meta.message = MSG_STATUS;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (hdr.prefix.msg_type == TYPE_COOKIE) {
            meta.message = MSG_COOKIE;             // the controller's (a parent's, §4.2)
        } else if (meta.from_parent == 1) {
            meta.drop_reason = DROP_MALFORMED;     // shorter than its header
        } else if (hdr.prefix.msg_type == TYPE_PROBE_REPLY
                || hdr.prefix.msg_type == TYPE_STATUS_REPLY
                || hdr.prefix.msg_type == TYPE_COOKIE) {
            meta.drop_reason = DROP_UNEXPECTED_TYPE;
        } else {
            meta.drop_reason = DROP_UNKNOWN_TYPE;
        }
    }
}

#endif
