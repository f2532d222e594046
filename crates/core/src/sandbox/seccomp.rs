//! The seccomp filter of a confined command: system calls a build never needs and that would
//! reach past the container or into the person's terminal are refused (`EPERM`), whatever
//! the kernel's other walls say.
//!
//! Refused: the terminal ioctls that inject input or redirect the console (`TIOCSTI`,
//! `TIOCLINUX`, `TIOCCONS`); new user namespaces (`clone`/`unshare` with `CLONE_NEWUSER`;
//! `clone3`, whose flags a filter cannot read, answers `ENOSYS` so the C library falls back
//! to `clone`); tracing and reading other processes (`ptrace`, `process_vm_*`); keyrings;
//! `bpf`, `perf_event_open`, `userfaultfd`, `io_uring` (which runs system calls past this
//! filter); changing mounts; kernel modules, `kexec`, `reboot`, swap, `acct`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Refused outright.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_chroot,
];

/// `ioctl` requests refused on any descriptor (their type differs across targets).
#[allow(clippy::unnecessary_cast)]
const TERMINAL_IOCTLS: &[u64] = &[
    libc::TIOCSTI as u64,
    libc::TIOCLINUX as u64,
    libc::TIOCCONS as u64,
];

/// The filters for this machine's architecture (installed in order), or why there are none.
/// (`c_long` is `i64` only on 64-bit targets: the conversions are not useless everywhere.)
#[allow(clippy::useless_conversion)]
pub(super) fn filters() -> Result<Vec<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for {}: {e}", std::env::consts::ARCH))?;
    let error = |e: seccompiler::BackendError| format!("the seccomp filter: {e}");
    let condition =
        |arg: u8, len, op, value| SeccompCondition::new(arg, len, op, value).map_err(error);
    let rule = |conditions| SeccompRule::new(conditions).map_err(error);
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = REFUSED
        .iter()
        .map(|n| (i64::from(*n), Vec::new()))
        .collect();
    let mut ioctl = Vec::new();
    for request in TERMINAL_IOCTLS {
        ioctl.push(rule(vec![condition(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            *request,
        )?])?);
    }
    refused.insert(i64::from(libc::SYS_ioctl), ioctl);
    let new_user = libc::CLONE_NEWUSER as u64;
    for call in [libc::SYS_clone, libc::SYS_unshare] {
        let masked = SeccompCmpOp::MaskedEq(new_user);
        refused.insert(
            i64::from(call),
            vec![rule(vec![condition(
                0,
                SeccompCmpArgLen::Qword,
                masked,
                new_user,
            )?])?],
        );
    }
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let main = SeccompFilter::new(refused, SeccompAction::Allow, eperm, arch).map_err(error)?;
    let clone3 = BTreeMap::from([(i64::from(libc::SYS_clone3), Vec::new())]);
    let enosys = SeccompAction::Errno(libc::ENOSYS as u32);
    let clone3 = SeccompFilter::new(clone3, SeccompAction::Allow, enosys, arch).map_err(error)?;
    let compile = |filter: SeccompFilter| {
        BpfProgram::try_from(filter).map_err(|e| format!("the seccomp filter: {e}"))
    };
    Ok(vec![compile(main)?, compile(clone3)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_machine() {
        let filters = filters().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(filters.len(), 2);
        assert!(filters.iter().all(|f| !f.is_empty() && f.len() < 1000));
    }
}
