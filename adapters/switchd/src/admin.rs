//! The switch daemon's admin socket: add, remove and list jobs on a running daemon.
//!
//! A Unix stream socket on the switch's host (`switchml switch --admin PATH`), mode 0600
//! from the moment it appears at PATH (`bind_private`): the file system's permissions are
//! the credential. Why not a network message:
//! it would need a second secret to distribute and would let anyone who reaches the switch
//! try it (protocol.md §4.1); an operator elsewhere runs `switchml job` over ssh.
//!
//! One request per connection, one line of text each way:
//!
//! ```text
//! add ID:WORLD[:SLOTS[:KEY]]   →  ok job ID: WORLD ranks, slots LO..HI   | error: …
//! remove ID                    →  ok job ID removed                      | error: …
//! share ID PERCENT             →  ok job ID: PERCENT% of the pool of N, slots LO..HI | error: …
//! list                         →  ok N jobs; then one line per job
//! stats                        →  ok; then every counter, as the metrics endpoint shows them
//! ```
//!
//! `share` gives an idle job (no run open) PERCENT of the slot pool: its range becomes that
//! many slots, at the lowest free range (the core's `switch::place_share`). Jobs never share
//! slots, so the share is also the job's bound on data in flight, and so its part of links it
//! shares with other jobs; it keeps one job from holding the whole pool.
//!
//! The daemon checks for requests between batches of datagrams (at most every 100 ms); a
//! client gets 200 ms to send its line, so a stuck client delays the data path that long.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use switchml_core::switch::PoolShare;

use crate::job::JobSpec;

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminRequest {
    /// Register a job.
    Add(JobSpec),
    /// End a job's run (Abort `JobRemoved`) and unregister it.
    Remove(u16),
    /// Give an idle job a share of the slot pool.
    Share(u16, PoolShare),
    /// Describe the jobs.
    List,
    /// Every counter the daemon keeps, in the metrics endpoint's text format.
    Stats,
}

impl std::str::FromStr for AdminRequest {
    type Err = String;

    fn from_str(line: &str) -> Result<AdminRequest, String> {
        let mut words = line.split_whitespace();
        let request = match (words.next(), words.next()) {
            (Some("add"), Some(spec)) => AdminRequest::Add(spec.parse()?),
            (Some("remove"), Some(id)) => AdminRequest::Remove(
                id.parse()
                    .map_err(|_| format!("remove: {id:?} is not a job id"))?,
            ),
            (Some("share"), Some(id)) => {
                let id = id
                    .parse()
                    .map_err(|_| format!("share: {id:?} is not a job id"))?;
                let pct = words.next().unwrap_or("");
                let share = pct
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .and_then(PoolShare::new)
                    .ok_or_else(|| format!("share: {pct:?} is not a percentage from 1 to 100"))?;
                AdminRequest::Share(id, share)
            }
            (Some("list"), None) => return Ok(AdminRequest::List),
            (Some("stats"), None) => return Ok(AdminRequest::Stats),
            _ => {
                return Err(format!(
                    "unknown request {line:?}: expected `add ID:WORLD[:SLOTS[:KEY]]`, `remove ID`, `share ID PERCENT`, `list` or `stats`"
                ))
            }
        };
        match words.next() {
            None => Ok(request),
            Some(extra) => Err(format!("unexpected {extra:?} after the request")),
        }
    }
}

/// The daemon's end: a listening socket that removes its file when dropped.
pub struct AdminSocket {
    listener: UnixListener,
    path: PathBuf,
}

/// How long a client may take to send its request.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(200);

impl AdminSocket {
    /// Listen at `path` (mode 0600). A stale socket file left by a dead daemon is replaced;
    /// any other file there is an error.
    pub fn bind(path: &Path) -> io::Result<AdminSocket> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("another daemon serves {}", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = bind_private(path, |_| {})?;
        listener.set_nonblocking(true)?;
        Ok(AdminSocket {
            listener,
            path: path.to_owned(),
        })
    }

    /// Serve every waiting client with `answer`; never blocks for long (see the module doc).
    pub fn serve(&self, mut answer: impl FnMut(Result<AdminRequest, String>) -> String) {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    log::warn!("admin socket {}: {e}", self.path.display());
                    return;
                }
            };
            if let Err(e) = serve_client(stream, &mut answer) {
                log::warn!("admin client on {}: {e}", self.path.display());
            }
        }
    }
}

/// Bind a listener at `path` that nobody but its owner could ever connect to. Binding at
/// `path` and chmod-ing after left a window in which the socket had the process umask's
/// mode (0755 or 0777 under a lax umask), and anyone who connected then kept the connection.
/// So bind inside a fresh directory only the owner can enter (a directory's search
/// permission guards what is in it), set the socket's mode there, then rename it into
/// place: `path` appears already 0600. No `umask(2)` (process-wide, racing other threads'
/// file creation), no `unsafe`. `bound` runs between the bind and the rename (tests).
fn bind_private(path: &Path, bound: impl FnOnce(&Path)) -> io::Result<UnixListener> {
    use std::os::unix::fs::DirBuilderExt;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        )
    })?;
    // Beside the target, so that the rename stays on one file system.
    let private = parent.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&private)?;
    let staged = private.join("admin.sock");
    let bound_there = (|| {
        // The umask can only have narrowed 0700; make it exactly that before using it.
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700))?;
        let listener = UnixListener::bind(&staged)?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
        bound(&staged);
        std::fs::rename(&staged, path)?;
        Ok(listener)
    })();
    let _ = std::fs::remove_file(&staged);
    let _ = std::fs::remove_dir(&private);
    bound_there
}

fn serve_client(
    stream: UnixStream,
    answer: &mut impl FnMut(Result<AdminRequest, String>) -> String,
) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = String::new();
    // At most one short line: a client cannot make the daemon buffer more.
    BufReader::new(io::Read::take(&stream, 4096)).read_line(&mut line)?;
    let reply = answer(line.trim().parse());
    log::info!(
        "admin: {} -> {}",
        line.trim(),
        reply.lines().next().unwrap_or("")
    );
    (&stream).write_all(reply.as_bytes())?;
    (&stream).write_all(b"\n")
}

impl Drop for AdminSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The client's end: send `request` to the daemon at `path` and return its answer; an
/// answer that starts with `error:` becomes an `Err`.
pub fn request(path: &Path, request: &str, timeout: Duration) -> Result<String, String> {
    let stream = UnixStream::connect(path).map_err(|e| {
        format!(
            "admin socket {}: {e} (is the switch running with --admin?)",
            path.display()
        )
    })?;
    let io = |e: io::Error| format!("admin socket {}: {e}", path.display());
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    (&stream)
        .write_all(format!("{request}\n").as_bytes())
        .map_err(io)?;
    let mut reply = String::new();
    io::Read::read_to_string(&mut &stream, &mut reply).map_err(io)?;
    let reply = reply.trim_end().to_string();
    match reply.strip_prefix("error: ") {
        Some(e) => Err(e.to_string()),
        None if reply.is_empty() => Err(format!("admin socket {}: no answer", path.display())),
        None => Ok(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_private_before_it_is_at_its_path() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("switchml-admin-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("admin.sock");
        let mut seen = None;
        let listener = bind_private(&path, |staged| {
            // Bound, not yet published: nothing at `path`, and the socket sits, mode 0600,
            // in a directory only its owner may enter.
            let dir = std::fs::metadata(staged.parent().unwrap()).unwrap();
            let sock = std::fs::symlink_metadata(staged).unwrap();
            seen = Some((path.exists(), dir.mode() & 0o777, sock.mode() & 0o777));
        })
        .unwrap();
        assert_eq!(seen, Some((false, 0o700, 0o600)));
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // The renamed socket still takes connections, and the staging directory is gone.
        assert!(UnixStream::connect(&path).is_ok());
        drop(listener);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "only the socket: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn requests_parse_or_say_what_is_wrong() {
        let add: AdminRequest = "add 5:4:64:beef".parse().unwrap();
        let AdminRequest::Add(spec) = add else {
            panic!()
        };
        assert_eq!(
            (spec.id, spec.world, spec.slots, spec.key),
            (5, 4, 64, Some(0xBEEF))
        );
        assert_eq!("remove 5".parse(), Ok(AdminRequest::Remove(5)));
        let half = PoolShare::new(50).unwrap();
        assert_eq!("share 5 50".parse(), Ok(AdminRequest::Share(5, half)));
        assert_eq!("share 5 50%".parse(), Ok(AdminRequest::Share(5, half)));
        assert_eq!(" list ".parse(), Ok(AdminRequest::List));
        for bad in [
            "",
            "add",
            "remove x",
            "list 3",
            "add 5:4 extra",
            "drop 5",
            "share 5",
            "share 5 0",
            "share 5 101",
            "share x 50",
            "share 5 50 7",
        ] {
            assert!(bad.parse::<AdminRequest>().is_err(), "{bad:?}");
        }
    }
}
