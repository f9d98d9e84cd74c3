//! systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram of
//! `KEY=VALUE` lines to the unix socket named by `$NOTIFY_SOCKET` (a path, or an
//! abstract name starting with `@`). Without the variable (not started by systemd with
//! `Type=notify`) every call does nothing.
//!
//! `electd run` sends `READY=1` once its UDP socket and HTTP listener are bound and its
//! state file is read (so `systemctl start` returns when the node answers, and a file
//! it refuses fails the start), `RELOADING=1` … `READY=1` around a `SIGHUP` key
//! reload, and `STOPPING=1` when it starts to resign on SIGTERM.

use std::io;

/// Send `state` (e.g. `"READY=1"`) to `$NOTIFY_SOCKET`. `Ok(false)`: no socket is set.
pub fn notify(state: &str) -> io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    send(&path, state)?;
    Ok(true)
}

/// [`notify`], logging a failure instead of returning it (systemd then times the start
/// out, which says more than a failed daemon would).
pub fn notify_logged(state: &str) {
    if let Err(e) = notify(state) {
        tracing::warn!("cannot notify systemd ({state}) on $NOTIFY_SOCKET: {e}");
    }
}

#[cfg(target_os = "linux")]
fn send(path: &std::ffi::OsStr, state: &str) -> io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let bytes = path.as_bytes();
    let addr = match bytes.first() {
        Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..])?,
        Some(b'/') => SocketAddr::from_pathname(path)?,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "NOTIFY_SOCKET is neither an absolute path nor an @abstract name",
            ))
        }
    };
    let sock = UnixDatagram::unbound()?;
    let sent = sock.send_to_addr(state.as_bytes(), &addr)?;
    if sent != state.len() {
        return Err(io::Error::other("short write to NOTIFY_SOCKET"));
    }
    Ok(())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn send(path: &std::ffi::OsStr, state: &str) -> io::Result<()> {
    let sock = std::os::unix::net::UnixDatagram::unbound()?;
    sock.send_to(state.as_bytes(), path).map(|_| ())
}

#[cfg(not(unix))]
fn send(_path: &std::ffi::OsStr, _state: &str) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn sends_one_datagram_to_a_path_and_to_an_abstract_name() {
        let dir = std::env::temp_dir().join(format!("electd-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("electd-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx2 = UnixDatagram::bind_addr(&addr).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let n = rx2.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_relative_socket_name_is_an_error() {
        let e = send(std::ffi::OsStr::new("notify.sock"), "READY=1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
