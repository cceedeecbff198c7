"""Files in a run's folders, opened by descriptor and never through a link.

An agent run writes in its folders while the gateway works in them with its own rights (often root). Checking a
path and then using it by name later is a race the run can win: it swaps a folder for a symlink to the state dir
between the check and the read (``renameat2(RENAME_EXCHANGE)`` in a loop), or plants ``AGENTS.md`` as a link to
``~/.bashrc`` for the gateway to write through. So every path inside a run's folder is resolved here, once, from a
descriptor of the folder: with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` where the kernel has it (5.6+),
else component by component with ``O_NOFOLLOW | O_DIRECTORY`` from the folder's descriptor. A symlink anywhere
below the folder is refused (``LinkRefused``), never followed. What the gateway then does (read the bytes,
write a temp file and rename it into place, unlink) happens on that descriptor, and the bytes travel on
(``FileBytes``), never the path.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["MAX_READ_BYTES", "FileBytes", "LinkRefused", "dir_beneath", "fd_path", "link_beneath", "open_beneath",
           "read_beneath", "read_fd", "read_if_file", "readlink_beneath", "remove_beneath", "remove_tree_beneath",
           "write_beneath"]

MAX_READ_BYTES = 50 * 1024 * 1024
"""What is read whole into memory (an attachment): a huge file must not take the gateway down."""
_SYS_OPENAT2 = 437  # the same number on every architecture (added to the common table in 5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A path below a run's folder that goes through a symlink, or out of the folder (``..``)."""


@dataclass(frozen=True, slots=True)
class FileBytes:
    """A local file's content, read once from its descriptor: what travels to a channel instead of a path."""

    name: str
    data: bytes
    where: str = ""
    """The path the kernel had for the descriptor when it was read (``/proc/self/fd``): for checks and logs."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_openat2_works: bool | None = None
"""None: not tried yet; False: the kernel (or a seccomp filter) has no ``openat2``, walk instead."""


def _openat2(dir_fd: int, rel: str, flags: int, mode: int) -> int | None:
    """``openat2`` beneath ``dir_fd`` with no symlink followed; None where the kernel does not have it."""
    global _openat2_works
    if _openat2_works is False:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0,
                   _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = libc.syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(rel)),
                      ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _openat2_works is None:  # EPERM: a seccomp filter that refuses it
        _openat2_works = False
        return None
    if err in (errno.ELOOP, errno.EXDEV):
        raise LinkRefused(err, "goes through a symlink or out of the folder", rel)
    raise OSError(err, os.strerror(err), rel)


def _parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if rel.startswith("/") or ".." in parts:
        raise LinkRefused(errno.EXDEV, "goes out of the folder", rel)
    return parts


def _walk(dir_fd: int, parts: list[str], *, create: bool) -> int:
    """A new descriptor of the folder ``parts`` below ``dir_fd``, each step ``O_NOFOLLOW`` (made 0700 if missing
    and ``create``)."""
    fd = os.dup(dir_fd)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise LinkRefused(errno.ELOOP, "is a symlink", part) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def _root(root: Path | str | int) -> Iterator[int]:
    """A descriptor of the folder everything is beneath (the gateway's own path to it: links there are its own)."""
    if isinstance(root, int):
        yield root
        return
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def open_beneath(root: Path | str | int, rel: str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A descriptor of ``rel`` below ``root`` (a path or a folder descriptor), no symlink followed on the way or at
    the end; raises ``LinkRefused`` for one, ``OSError`` as ``open`` does otherwise."""
    parts = _parts(rel)
    with _root(root) as top:
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, dir_fd=top)
        fd = _openat2(top, "/".join(parts), flags, mode)
        if fd is not None:
            return fd
        parent = _walk(top, parts[:-1], create=False)
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(parent, parts[-1])):
                raise LinkRefused(errno.ELOOP, "is a symlink", rel) from None
            raise
        finally:
            os.close(parent)


def dir_beneath(root: Path | str | int, rel: str, *, create: bool = True) -> int:
    """A descriptor of the folder ``rel`` below ``root``, each missing component made 0700 (``create``), none
    followed if it is a link."""
    with _root(root) as top:
        return _walk(top, _parts(rel), create=create)


def fd_path(fd: int) -> str:
    """Where the kernel says an open descriptor is (what was opened, whatever the name was when it was)."""
    return os.readlink(f"/proc/self/fd/{fd}")


def read_fd(fd: int, name: str, *, max_bytes: int) -> FileBytes:
    """The content of the regular file open at ``fd`` (closed after), at most ``max_bytes``."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", name)
        if st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes // (1024 * 1024)} MB", name)
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise OSError(errno.EFBIG, f"larger than {max_bytes // (1024 * 1024)} MB", name)
        return FileBytes(name=name, data=b"".join(chunks), where=fd_path(fd))
    finally:
        os.close(fd)


def read_beneath(root: Path | str | int, rel: str, *, max_bytes: int) -> FileBytes:
    """``rel`` below ``root`` read once by descriptor (``O_NONBLOCK``: a FIFO planted there cannot hang us)."""
    fd = open_beneath(root, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    return read_fd(fd, PurePosixPath(rel).name or "file", max_bytes=max_bytes)


def read_if_file(root: Path | str | int, rel: str, *, max_bytes: int = 16 << 20) -> bytes | None:
    """The bytes of ``rel`` below ``root`` if it is a regular file there; None when missing or not a file.
    ``LinkRefused`` when a link is on the way: the caller decides (the gateway's writes refuse it)."""
    try:
        return read_beneath(root, rel, max_bytes=max_bytes).data
    except LinkRefused:
        raise
    except OSError:
        return None


def write_beneath(root: Path | str | int, rel: str, data: bytes, *, mode: int = 0o600) -> None:
    """Put ``data`` at ``rel`` below ``root``: written to a fresh temp file (``O_EXCL | O_NOFOLLOW``) in the folder
    opened without following links, then renamed over the name (which replaces a link there, not its target)."""
    parts = _parts(rel)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "no file name", rel)
    parent = dir_beneath(root, "/".join(parts[:-1]), create=True)
    tmp = f".{parts[-1]}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                fh.write(data)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    finally:
        os.close(parent)


def remove_beneath(root: Path | str | int, rel: str) -> bool:
    """Unlink the name ``rel`` below ``root`` (a link there is removed itself; its folders are never followed);
    whether something went."""
    parts = _parts(rel)
    if not parts:
        return False
    try:
        parent = dir_beneath(root, "/".join(parts[:-1]), create=False)
    except FileNotFoundError:
        return False
    try:
        os.unlink(parts[-1], dir_fd=parent)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(parent)


@contextlib.contextmanager
def _parent(root: Path | str | int, rel: str, *, create: bool) -> Iterator[tuple[int, str]]:
    """The folder of ``rel`` (opened through no link) and the last name in it."""
    parts = _parts(rel)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "no file name", rel)
    fd = dir_beneath(root, "/".join(parts[:-1]), create=create)
    try:
        yield fd, parts[-1]
    finally:
        os.close(fd)


def readlink_beneath(root: Path | str | int, rel: str) -> str | None:
    """Where the symlink at ``rel`` points (None: no link there); its folders are never followed."""
    try:
        with _parent(root, rel, create=False) as (fd, name):
            return os.readlink(name, dir_fd=fd)
    except LinkRefused:
        raise
    except OSError:  # missing, or not a link
        return None


def link_beneath(root: Path | str | int, rel: str, target: str) -> None:
    """Make ``rel`` a symlink to ``target`` (what was at the name goes); the gateway never follows it itself."""
    with _parent(root, rel, create=True) as (fd, name):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
        os.symlink(target, name, dir_fd=fd)


def remove_tree_beneath(root: Path | str | int, rel: str) -> bool:
    """Remove the name ``rel`` below ``root`` and, if it is a folder, all in it (``shutil.rmtree`` on a descriptor:
    no link inside is followed; a link at ``rel`` is removed itself); whether something went."""
    try:
        with _parent(root, rel, create=False) as (fd, name):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            return True
    except FileNotFoundError:
        return False
