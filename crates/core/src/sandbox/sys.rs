//! The raw system calls the container's processes (and the overlay's holder) share: checked results, `fork`, waiting and
//! reaping, exiting as the command did, closing descriptors, writing a `/proc` file, and
//! bringing up the loopback interface. No allocation here either.

use std::io;

pub(super) fn check(result: libc::c_int) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

pub(super) fn check_long(result: libc::c_long) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

#[allow(unsafe_code)]
pub(super) fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone(2) with only SIGCHLD is a plain fork without the C library's fork
    // handlers (which may take locks another thread of the parent held).
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        pid => Ok(libc::pid_t::try_from(pid).unwrap_or(-1)),
    }
}

/// Waits for `pid`; its wait status.
#[allow(unsafe_code)]
pub(super) fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid(2) writes the status into our local.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return status;
        }
        if got < 0 && errno() != libc::EINTR {
            return 127 << 8;
        }
    }
}

/// As PID 1: reaps every child (orphans are re-parented here) until `command` ends.
#[allow(unsafe_code)]
pub(super) fn reap_until(command: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid(2) writes the status into our local.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got == command {
            return status;
        }
        if got < 0 && errno() != libc::EINTR {
            return 127 << 8;
        }
    }
}

/// Ends this process as the wait status `status` says: the same exit code, or the same
/// signal (without a core dump).
#[allow(unsafe_code)]
pub(super) fn mirror(status: libc::c_int) -> ! {
    // SAFETY: plain system calls on this process; `_exit` never returns.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every descriptor but `keep` (at most four).
#[allow(unsafe_code)]
pub(super) fn close_all_but(keep: &[libc::c_int]) {
    let mut sorted = [-1; 4];
    for (slot, fd) in sorted.iter_mut().zip(keep) {
        *slot = *fd;
    }
    sorted.sort_unstable();
    let mut from: libc::c_uint = 0;
    for fd in sorted
        .iter()
        .filter_map(|fd| libc::c_uint::try_from(*fd).ok())
    {
        if fd > from {
            // SAFETY: close_range(2) closes descriptors of this process only.
            unsafe {
                libc::syscall(libc::SYS_close_range, from, fd - 1, 0);
            }
        }
        from = fd + 1;
    }
    // SAFETY: as above, the rest of the table.
    unsafe {
        libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0);
    }
}

pub(super) fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[allow(unsafe_code)]
pub(super) unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY (caller): `path` is NUL-terminated; `data` is a live slice.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = match usize::try_from(written) {
            Ok(n) if n == data.len() => Ok(()),
            _ => Err(io::Error::last_os_error()),
        };
        libc::close(fd);
        result
    }
}

#[allow(unsafe_code)]
pub(super) unsafe fn loopback_up() {
    // SAFETY (caller): runs in the child; the ifreq lives on this stack frame.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
        libc::close(sock);
    }
}
