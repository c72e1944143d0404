//! The jobs a switch serves, as an operator writes them: `--job ID:WORLD[:SLOTS[:KEY]]`
//! ([`JobSpec`]) and the key a job without one takes from the environment.

use std::str::FromStr;

use switchml_core::auth::parse_key;

/// A job to set up at start: `ID:WORLD[:SLOTS[:KEY]]` on the command line (KEY in hex, or
/// `none` for a job anyone who reaches the switch may join).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSpec {
    /// The job id.
    pub id: u16,
    /// The number of ranks.
    pub world: u16,
    /// The number of slots (every rank's `lanes × window` must fit).
    pub slots: u16,
    /// The job's credential (protocol.md §4.1); `None`: take `SWITCHML_JOB_KEY`, and
    /// without it the job is refused; `Some(0)` (`none`): no key, said explicitly.
    pub key: Option<u64>,
}

/// Slots a job gets when `--job` does not say.
pub const DEFAULT_JOB_SLOTS: u16 = 256;

impl FromStr for JobSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<JobSpec, String> {
        let fields: Vec<&str> = s.split(':').collect();
        let num = |i: usize, what: &str| -> Result<u16, String> {
            fields[i]
                .trim()
                .parse()
                .map_err(|_| format!("job {s:?}: {what} {:?} is not a number", fields[i]))
        };
        match fields.len() {
            2..=4 => Ok(JobSpec {
                id: num(0, "id")?,
                world: num(1, "world size")?,
                slots: if fields.len() >= 3 {
                    num(2, "slot count")?
                } else {
                    DEFAULT_JOB_SLOTS
                },
                key: match fields.get(3) {
                    Some(k) if k.trim() == "none" => Some(0),
                    Some(k) => match parse_key(k) {
                        // On the wire 0 means no key; an operator says that as `none`,
                        // never with a key that looks like one.
                        Ok(0) => {
                            return Err(format!(
                                "job {s:?}: a key of 0 is no key: write `none` to serve the \
                                 job without one"
                            ))
                        }
                        Ok(k) => Some(k),
                        Err(e) => return Err(format!("job {s:?}: key {k:?}: {e}")),
                    },
                    None => None,
                },
            }),
            _ => Err(format!("job {s:?}: expected ID:WORLD[:SLOTS[:KEY]]")),
        }
    }
}

/// The error for a job that has no key and was not said to need none.
pub(crate) fn keyless_refused(id: u16) -> String {
    format!(
        "job {id} has no key: anyone who reaches the switch could join it. Give it one \
         (ID:WORLD:SLOTS:KEY, or SWITCHML_JOB_KEY), or say so explicitly: key `none` \
         (ID:WORLD:SLOTS:none) or `switchml switch --allow-keyless`"
    )
}

/// The key of a job that `--job` gives none for: `SWITCHML_JOB_KEY` (hex), else 0 (no key,
/// which the daemon refuses unless told `--allow-keyless`).
pub fn key_from_env() -> Result<u64, String> {
    match std::env::var("SWITCHML_JOB_KEY") {
        Ok(k) => parse_key(&k).map_err(|e| format!("SWITCHML_JOB_KEY: {e}")),
        Err(_) => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_specs_parse_with_and_without_keys() {
        let j: JobSpec = "3:4".parse().unwrap();
        assert_eq!(
            (j.id, j.world, j.slots, j.key),
            (3, 4, DEFAULT_JOB_SLOTS, None)
        );
        let j: JobSpec = "3:4:64:0xBEEF".parse().unwrap();
        assert_eq!((j.slots, j.key), (64, Some(0xBEEF)));
        assert!("3:4:64:xyz".parse::<JobSpec>().is_err());
        assert!("3:4:64:12345678901234567".parse::<JobSpec>().is_err());
        assert!("3".parse::<JobSpec>().is_err());
        // No key is said as `none`, never as a key of 0.
        let j: JobSpec = "3:4:64:none".parse().unwrap();
        assert_eq!(j.key, Some(0));
        let e = "3:4:64:0".parse::<JobSpec>().unwrap_err();
        assert!(e.contains("write `none`"), "{e}");
    }
}
