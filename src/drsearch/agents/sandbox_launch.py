"""The python tool's sandbox launcher: a standalone script (standard library only, no drsearch
import) that :class:`drsearch.agents.pytool.LocalPython` runs as
``python -I -S sandbox_launch.py key=value ...`` for each call.

It uses the kernel's own isolation, nothing installed (util-linux is not even needed):

1. The launcher (L) unshares a new **user, mount, network, pid, IPC and UTS namespace**; a
   short-lived helper left in the caller's namespaces writes L's uid/gid maps (a process
   cannot map uids other than its own from inside). As root: namespace uid 0 is root (for the
   mount set-up only) and namespace uid 65534 is the real ``nobody`` the program runs as;
   otherwise the caller's uid is namespace uid 0 and the program keeps it without capabilities.
2. L forks the namespace's init (I, pid 1). I builds a new root on a tmpfs: read-only
   bind mounts of the interpreter's prefixes (the venv and its base install) and the shared
   libraries (``/lib*``, ``/usr/lib*``), ``/dev/{null,zero,random,urandom}``, a size-capped
   writable tmpfs at ``/tmp`` holding ``/tmp/work/main.py``; it ``pivot_root``\\ s into it,
   detaches the old root and makes the new root read-only. There is no ``/proc``, no
   ``/sys``, no ``/etc`` and no network interface (the new namespace's loopback is down).
3. I forks the program (U): it drops every capability (bounding set, ambient, effective,
   permitted; ``no_new_privs``), takes the rlimits (CPU, address space, file size, core 0 and
   ``RLIMIT_NPROC``, counted per call because the user namespace is new) and execs
   ``python -I main.py`` in ``/tmp/work``.
4. I reaps everything until U ends, then reports U's wait status and exits; the kernel kills
   every process left in a pid namespace whose init ends, so nothing outlives the call. L
   waits for I (a pidfd) at most the wall-clock limit, kills I at that limit, and writes one
   line to the report descriptor: ``exited N``, ``signalled N``, ``timeout 1`` or
   ``error MESSAGE`` (the sandbox could not be built). L and I get a parent-death SIGKILL, so
   a killed drsearch (even ``kill -9``) takes the whole call with it.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}
NOBODY = 65534
# statvfs flags a bind remount must keep (the kernel refuses to clear a locked one)
_KEPT = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
         (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
LIBRARIES = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32")
WORK = "/tmp/work"

_libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(Exception):
    """The sandbox could not be built (reported to the caller, never run unsandboxed)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or ''} {target}")


def _bind_read_only(source: str, target: str, devices: bool = False) -> None:
    _mount(source, target, None, MS_BIND)
    kept = sum(ms for st, ms in _KEPT if os.statvfs(target).f_flag & st)
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | kept | (0 if devices else MS_NODEV)
    _mount(None, target, None, flags)


def _prefixes() -> list[str]:
    """The interpreter's own install: the venv (if any; found as site.py finds it, since the
    launcher runs without site) and the install it was made from."""
    prefixes = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    for venv in (bin_dir, os.path.dirname(bin_dir)):
        if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            prefixes.append(venv)
    paths = {os.path.realpath(p) for p in prefixes} | set(prefixes)
    return sorted(p for p in paths if os.path.isdir(p) and p != "/")


def _build_root(root: str, code_path: str, tmpfs_mb: int, owner: int) -> None:
    """Mount the new root on ``root`` (see the module doc); still in the old root."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the host
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    # /tmp first: an interpreter installed under /tmp (a clone in /tmp, its .venv) is then bound
    # inside the tmpfs, read-only, instead of being hidden by it (or colliding with its mount point)
    os.makedirs(root + "/tmp")
    _mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={tmpfs_mb}m,nr_inodes=16384,mode=1777")
    for path in LIBRARIES:
        if os.path.islink(path):  # merged /usr: keep the link, bind its target
            os.makedirs(root + os.path.dirname(path), exist_ok=True)
            os.symlink(os.readlink(path), root + path)
    for path in [p for p in LIBRARIES if os.path.isdir(p) and not os.path.islink(p)] + _prefixes():
        if os.path.islink(root + path) or os.path.ismount(root + path):
            continue
        os.makedirs(root + path, exist_ok=True)
        _bind_read_only(path, root + path)
    os.makedirs(root + "/dev", exist_ok=True)
    for dev in DEVICES:
        if os.path.exists(dev):
            open(root + dev, "w").close()  # a file to mount the device on
            _bind_read_only(dev, root + dev, devices=True)
    os.makedirs(root + WORK)
    with open(code_path, "rb") as src, open(root + WORK + "/main.py", "wb") as dst:
        dst.write(src.read())
    for path in (root + WORK, root + WORK + "/main.py"):
        os.chown(path, owner, owner)
    _pivot(root)


def _pivot(root: str) -> None:
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SandboxError(f"pivot_root: no syscall number known for {os.uname().machine}")
    os.chdir(root)
    _check(_libc.syscall(number, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")  # the old root is gone
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _drop_privileges(sandbox_uid: int) -> None:
    """No capability can be regained: bounding set emptied, uid changed where it can be,
    effective/permitted/inheritable cleared, ambient cleared, no_new_privs."""
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if sandbox_uid != 0:
        os.setgroups([])
        os.setresgid(sandbox_uid, sandbox_uid, sandbox_uid)
        os.setresuid(sandbox_uid, sandbox_uid, sandbox_uid)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    _check(_libc.capset(header, bytes(24)), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _limit(cfg: dict[str, str]) -> None:
    cpu = int(cfg["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU first (see pytool)
    for which, value in ((resource.RLIMIT_AS, cfg["memory"]), (resource.RLIMIT_FSIZE, cfg["fsize"]),
                         (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, cfg["nproc"])):
        resource.setrlimit(which, (int(value), int(value)))


def _program(cfg: dict[str, str], sandbox_uid: int) -> None:
    """U: never returns."""
    try:
        os.chdir(WORK)
        _drop_privileges(sandbox_uid)
        _limit(cfg)
        os.closerange(3, 1 << 16)
        env = {"HOME": WORK, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"}
        os.execve(sys.executable, [sys.executable, "-I", "main.py"], env)
    except BaseException as e:  # a child must never return into the launcher
        os.write(2, f"drsearch sandbox: {e}\n".encode())
    os._exit(127)


def _init(cfg: dict[str, str], sandbox_uid: int, status_w: int) -> None:
    """I, pid 1 of the new pid namespace: never returns."""
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # L killed: the namespace goes
        _build_root(cfg["root"], cfg["code"], int(cfg["tmpfs_mb"]), sandbox_uid)
        child = os.fork()
        if child == 0:
            os.close(status_w)
            _program(cfg, sandbox_uid)
        while True:  # reap orphans too, until the program itself ends
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                os.write(status_w, f"status {status}".encode())
                break
    except BaseException as e:
        os.write(status_w, f"error {' '.join(str(e).split())}".encode())
    os._exit(0)  # the kernel now kills whatever the program left behind


def _map_ids(pid: int, ready_r: int, done_w: int) -> None:
    """The helper in the caller's namespaces: writes L's uid/gid maps; never returns."""
    code = 1
    try:
        os.read(ready_r, 1)
        uid, gid = os.geteuid(), os.getegid()
        if uid == 0:  # root: 0 stays root for the set-up, the program runs as nobody
            uid_map, gid_map = f"0 0 1\n{NOBODY} {NOBODY} 1\n", f"0 0 1\n{NOBODY} {NOBODY} 1\n"
        else:
            uid_map, gid_map = f"0 {uid} 1\n", f"0 {gid} 1\n"
            with open(f"/proc/{pid}/setgroups", "w") as f:
                f.write("deny")
        with open(f"/proc/{pid}/uid_map", "w") as f:
            f.write(uid_map)
        with open(f"/proc/{pid}/gid_map", "w") as f:
            f.write(gid_map)
        code = 0
    except BaseException:
        pass
    os.write(done_w, bytes([code]))
    os._exit(code)


def _enter_namespaces() -> int:
    """Unshare; returns the uid the program runs as inside."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    me, root = os.getpid(), os.geteuid() == 0
    helper = os.fork()
    if helper == 0:
        _map_ids(me, ready_r, done_w)
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    failed = _libc.unshare(flags)
    err = ctypes.get_errno()
    os.write(ready_w, b"x")
    ok = os.read(done_r, 1) == b"\x00"
    os.waitpid(helper, 0)
    if failed:
        raise SandboxError(f"unshare: {os.strerror(err)}")
    if not ok:
        raise SandboxError("cannot write the namespace's uid/gid maps")
    return NOBODY if root else 0


def _report(fd: int, kind: str, value: object) -> None:
    os.write(fd, f"{kind} {value}\n".encode())


def _config(argv: list[str]) -> dict[str, str]:
    """``key=value`` arguments (no json: its import is a good part of the launcher's start-up)."""
    return dict(arg.split("=", 1) for arg in argv)


def main() -> None:
    cfg = _config(sys.argv[1:])
    report = int(cfg["report_fd"])
    os.set_inheritable(report, False)
    # drsearch killed: end at once (init follows L, the namespace follows init), not at the wall clock
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(cfg["parent"]):
        return
    try:
        sandbox_uid = _enter_namespaces()
        status_r, status_w = os.pipe()
        init = os.fork()
        if init == 0:
            os.close(status_r)
            _init(cfg, sandbox_uid, status_w)
        os.close(status_w)
        pidfd = os.pidfd_open(init)
        if not select.select([pidfd], [], [], float(cfg["wall_s"]))[0]:
            os.kill(init, signal.SIGKILL)  # the whole namespace dies with its init
            os.waitpid(init, 0)
            _report(report, "timeout", 1)
            return
        os.waitpid(init, 0)  # returns once every process of the namespace is gone
        kind, _, value = (os.read(status_r, 65536).decode() or "error the sandbox init died").partition(" ")
    except (OSError, SandboxError) as e:
        kind, value = "error", " ".join(str(e).split())
    if kind != "status":
        _report(report, "error", value)
    elif os.WIFSIGNALED(int(value)):
        _report(report, "signalled", os.WTERMSIG(int(value)))
    else:
        _report(report, "exited", os.WEXITSTATUS(int(value)))


if __name__ == "__main__":
    main()
