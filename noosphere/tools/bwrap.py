"""The bubblewrap command line that confines model-written code.

The sandbox sees a read-only root made of /usr (with /bin, /lib... as on the host), the interpreter's
prefix, the dynamic loader's cache and the time zone: nothing else of the host, no /etc/passwd, no
home folders, no /work. /tmp and the working folder are private size-limited tmpfs, the only places it
can write; the files it is given are bound read-only into the working folder. Every namespace is new
(no network: only a loopback that is down), the session is new (no terminal to inject keys into), and
the sandbox dies with its parent.

The code runs as uid 65534 (nobody). An unprivileged caller gets it through a user namespace (which
the code may not nest). A root caller gets it for real: bwrap runs without a user namespace, keeps
only CAP_SETUID and CAP_SETGID for the launcher, which drops to 65534 before running anything, so the
process limit (counted per real uid, and never for root) applies.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

NOBODY = 65534
WORKDIR = "/sandbox"
_ETC = ("/etc/ld.so.cache", "/etc/localtime")
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)), None)


@functools.cache
def _supports(bwrap: str, option: str) -> bool:
    shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
    return option in shown.stdout + shown.stderr


def interpreter_roots() -> list[str]:
    """The folders the running interpreter needs (its prefix, a virtualenv's base), outside /usr."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  str(Path(os.path.realpath(sys.executable)).parent.parent)}
    roots: list[str] = []
    for path in sorted(os.path.realpath(c) for c in candidates):
        if path in ("/", "/usr") or path.startswith("/usr/") or any(path.startswith(r + "/") for r in roots):
            continue
        roots.append(path)
    return roots


def _ancestors(path: str) -> list[str]:
    """The folders above `path`, outermost first: bwrap would create them 0700, unreadable for nobody."""
    parents = list(Path(path).parents)[::-1][1:]  # without "/"
    return [str(p) for p in parents]


def _system_layout() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in _TOP_LEVEL:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--perms", "0755", "--dir", "/etc"]
    for path in _ETC:
        args += ["--ro-bind-try", path, path]
    made: set[str] = {"/etc"}
    for root in interpreter_roots():
        for folder in _ancestors(root):
            if folder not in made:
                made.add(folder)
                args += ["--perms", "0755", "--dir", folder]
        args += ["--ro-bind", root, root]
    return args


def bwrap_command(bwrap: str, files: dict[str, Path], *, tmpfs_bytes: int, info_fd: int | None = None) -> list[str]:
    """bwrap's arguments up to the command: `files` (name -> host path) appear read-only in the working folder;
    on `info_fd` bwrap writes JSON whose `child-pid` is the sandbox's first process."""
    if os.geteuid() == 0:
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                      "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        namespaces = ["--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        if _supports(bwrap, "--disable-userns"):
            namespaces.append("--disable-userns")
    size = ["--size", str(tmpfs_bytes)] if _supports(bwrap, "--size") else []
    info = ["--info-fd", str(info_fd)] if info_fd is not None else []
    # the private folders first: an interpreter that lives under /tmp is then bound on top of them, not hidden
    args = [bwrap, *namespaces, *info, "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc",
            "--perms", "1777", *size, "--tmpfs", "/tmp", "--perms", "1777", *size, "--tmpfs", WORKDIR,
            *_system_layout()]
    for name, host in files.items():
        args += ["--ro-bind", str(host), f"{WORKDIR}/{name}"]
    return [*args, "--remount-ro", "/", "--chdir", WORKDIR, "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", WORKDIR, "--setenv", "LANG", "C.UTF-8", "--"]
