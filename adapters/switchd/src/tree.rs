//! Two levels of software switches (protocol.md §7): which job of a daemon is a parent's
//! (its ranks are child switches) and which a child's (its sums go up to a parent), as the
//! command line says, and the watch that names a parent that never answers.
//!
//! The daemon only configures the core's endpoint ([`Endpoint::add_parent_job`],
//! [`Endpoint::add_child_job`]) and sends where it says: the tree's rules are the core's.
//! Sharded (`--threads N`, protocol.md §1.1), every shard is a tree of its own: shard `i`
//! of a child serves the lanes `l mod N = i` and goes up from its own socket to shard `i`
//! of the parent (the parent's port plus `i`), which serves the same lanes and answers it
//! there. So a sharded child needs a parent of as many shards.
//!
//! [`Endpoint::add_parent_job`]: switchml_core::switch::Endpoint::add_parent_job
//! [`Endpoint::add_child_job`]: switchml_core::switch::Endpoint::add_child_job

use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::time::{Duration, Instant};

use switchml_core::shard::Shard;
use switchml_core::switch::ParentLink;

/// A child's job: `--child-of job=ID,parent=ADDR,parent-job=ID,member=I,members=C,
/// rank-lo=LO,world=P[,parent-key=HEX]` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildSpec {
    /// The child's job (a `--job` of this switch): its world is the child's own ranks.
    pub job: u16,
    /// The parent switch's address.
    pub parent: SocketAddr,
    /// The parent's job id.
    pub parent_job: u16,
    /// This child's rank in the parent's job.
    pub member: u16,
    /// The parent job's world: the number of children.
    pub members: u16,
    /// The first global rank this child serves.
    pub rank_lo: u16,
    /// Ranks in the whole job, the world the workers state.
    pub world: u16,
    /// The parent job's key; `None`: `SWITCHML_JOB_KEY`, else 0.
    pub parent_key: Option<u64>,
}

impl ChildSpec {
    /// Return the address of the parent's shard that shard `shard` of this child goes up
    /// to: the one of the same index (`None` if its port would pass 65535).
    pub fn parent_of_shard(&self, shard: Shard) -> Option<SocketAddr> {
        let port = switchml_core::shard::shard_port(self.parent.port(), shard.index())?;
        Some(SocketAddr::new(self.parent.ip(), port))
    }

    /// Return the core's parent link, with the parent's key `key`.
    pub fn link(&self, key: u64) -> ParentLink {
        ParentLink {
            world: self.world,
            rank_lo: self.rank_lo,
            job: self.parent_job,
            member: self.member,
            members: self.members,
            key,
        }
    }
}

/// The fields of a `--child-of` value, in the order the help names them.
const FIELDS: [&str; 8] = [
    "job",
    "parent",
    "parent-job",
    "member",
    "members",
    "rank-lo",
    "world",
    "parent-key",
];

impl FromStr for ChildSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<ChildSpec, String> {
        let mut values: [Option<&str>; FIELDS.len()] = [None; FIELDS.len()];
        for field in s.split(',') {
            let (name, value) = field
                .split_once('=')
                .ok_or_else(|| format!("child {s:?}: {field:?} is not NAME=VALUE"))?;
            let i = FIELDS
                .iter()
                .position(|f| *f == name.trim())
                .ok_or_else(|| {
                    format!("child {s:?}: unknown field {name:?} (known: {FIELDS:?})")
                })?;
            values[i] = Some(value.trim());
        }
        let get = |i: usize| values[i].ok_or_else(|| format!("child {s:?}: {} missing", FIELDS[i]));
        let num = |i: usize| -> Result<u16, String> {
            let v = get(i)?;
            v.parse()
                .map_err(|_| format!("child {s:?}: {} {v:?} is not a number", FIELDS[i]))
        };
        let addr = get(1)?;
        let parent = addr
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| format!("child {s:?}: parent {addr:?} is not HOST:PORT"))?;
        let spec = ChildSpec {
            job: num(0)?,
            parent,
            parent_job: num(2)?,
            member: num(3)?,
            members: num(4)?,
            rank_lo: num(5)?,
            world: num(6)?,
            parent_key: match values[7] {
                Some(k) => Some(
                    switchml_core::auth::parse_key(k)
                        .map_err(|e| format!("child {s:?}: parent-key {k:?}: {e}"))?,
                ),
                None => None,
            },
        };
        if spec.member >= spec.members {
            return Err(format!(
                "child {s:?}: member {} is not below members {}",
                spec.member, spec.members
            ));
        }
        Ok(spec)
    }
}

/// How long a child waits for any word from its parent after first sending up before it
/// warns that the parent is silent.
pub const PARENT_SILENCE: Duration = Duration::from_secs(2);

/// A child job's watch on its parent: when it first sent up, whether it ever heard back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParentWatch {
    pub(crate) job: u16,
    pub(crate) parent: SocketAddr,
    pub(crate) parent_job: u16,
    /// This switch's number of shards, which the parent's must equal.
    shards: u16,
    first_up: Option<Instant>,
    heard: bool,
    warned: bool,
    shards_warned: bool,
}

impl ParentWatch {
    pub(crate) fn new(job: u16, parent: SocketAddr, parent_job: u16, shards: u16) -> ParentWatch {
        ParentWatch {
            job,
            parent,
            parent_job,
            shards,
            first_up: None,
            heard: false,
            warned: false,
            shards_warned: false,
        }
    }

    /// The parent said it has `theirs` shards (a JoinReply's `shards`, 0 for one): return
    /// whether that is not this switch's number, the first time it is not.
    pub(crate) fn newly_mismatched(&mut self, theirs: u8) -> bool {
        let mismatched = u16::from(theirs).max(1) != self.shards && !self.shards_warned;
        self.shards_warned |= mismatched;
        mismatched
    }

    /// Something went up to the parent.
    pub(crate) fn sent_up(&mut self) {
        self.first_up.get_or_insert_with(Instant::now);
    }

    /// Something came from the parent.
    pub(crate) fn heard(&mut self) {
        self.heard = true;
    }

    /// Return whether the parent has been silent since the first send up for
    /// [`PARENT_SILENCE`], the first time it is so.
    pub(crate) fn newly_silent(&mut self) -> bool {
        let silent = !self.heard
            && !self.warned
            && self.first_up.is_some_and(|t| t.elapsed() >= PARENT_SILENCE);
        self.warned |= silent;
        silent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_of_another_number_of_shards_is_named_once() {
        let parent = "127.0.0.1:9000".parse().unwrap();
        let mut w = ParentWatch::new(1, parent, 9, 2);
        assert!(!w.newly_mismatched(2));
        assert!(w.newly_mismatched(0), "one shard");
        assert!(!w.newly_mismatched(3), "once");
        let mut single = ParentWatch::new(1, parent, 9, 1);
        assert!(!single.newly_mismatched(0) && !single.newly_mismatched(1));
    }

    #[test]
    fn child_specs_parse_and_name_what_is_wrong() {
        let s = "job=1,parent=127.0.0.1:9000,parent-job=9,member=1,members=2,rank-lo=4,world=8";
        let c: ChildSpec = s.parse().unwrap();
        assert_eq!(
            (c.job, c.parent_job, c.member, c.members, c.rank_lo, c.world),
            (1, 9, 1, 2, 4, 8)
        );
        assert_eq!(c.parent, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(c.parent_key, None);
        let keyed: ChildSpec = format!("{s},parent-key=0xBEEF").parse().unwrap();
        assert_eq!(keyed.parent_key, Some(0xBEEF));
        let missing = "job=1,parent=127.0.0.1:9000".parse::<ChildSpec>();
        assert!(missing.unwrap_err().contains("parent-job missing"));
        let shard = |i| Shard::new(i, 2).unwrap();
        assert_eq!(c.parent_of_shard(shard(1)), "127.0.0.1:9001".parse().ok());
        assert_eq!(c.parent_of_shard(shard(0)), Some(c.parent));
        let bad = s.replace("member=1", "member=2").parse::<ChildSpec>();
        assert!(bad.unwrap_err().contains("not below members"));
        assert!(s.replace("world=8", "size=8").parse::<ChildSpec>().is_err());
    }
}
