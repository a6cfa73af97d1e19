"""`specx idle --isolate` isolates everything the command writes, and its commit reproduces
what the command did. The command starts inside the overlay wherever its working directory
lies; a descriptor through which it could write around the overlay is refused; `--commit ask`
validates after the answer. The commit is proved differentially: each command of a corpus runs
plainly on one copy of a tree and isolated (committed) on another, and the two must be equal in
content, type, mode, owner, extended attributes, hard links and link targets."""
import contextlib
import hashlib
import json
import os
import pty
import select
import shlex
import signal
import struct
import subprocess
import sys
import time

import pytest

from conftest import SPECX, run_specx
from test_idle import clean  # noqa: F401 (a fixture)

PY = sys.executable
OTHER = 61234  # a numeric user with no passwd entry, for owners


def stat_of(path):
    st = os.lstat(path)
    xattrs = {} if os.path.islink(path) else {
        name: os.getxattr(path, name, follow_symlinks=False)
        for name in sorted(os.listxattr(path, follow_symlinks=False))}
    return st, xattrs


def describe(tree, times=False, exact=False):
    """What the tree holds, path by path (the tree itself as "."): type and permission bits,
    owner, extended attributes, content or link target, link count. TIMES: the data's mtime
    of files too; EXACT: every time and inode number (for a tree that must not change at all)."""
    entries = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in [".", *dirnames, *filenames] if dirpath == str(tree) else [*dirnames,
                                                                              *filenames]:
            path = os.path.join(dirpath, name)
            st, xattrs = stat_of(path)
            rel = os.path.normpath(os.path.relpath(path, tree))
            entry = [st.st_mode, st.st_uid, st.st_gid, xattrs, st.st_nlink]
            if os.path.islink(path):
                entry.append(os.readlink(path))
            elif os.path.isfile(path):
                entry.append(hashlib.sha256(open(path, "rb").read()).hexdigest())
                if times:
                    entry.append(st.st_mtime_ns)
            if exact:
                entry += [st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
            entries[rel] = entry
    return entries


def link_groups(tree):
    """The names of each file with more than one link, as sets."""
    by_inode = {}
    for dirpath, _, filenames in os.walk(tree):
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if st.st_nlink > 1 and not os.path.islink(path):
                by_inode.setdefault(st.st_ino, set()).add(os.path.relpath(path, tree))
    return sorted(sorted(names) for names in by_inode.values())


def acl(*entries):
    """A system.posix_acl_access value: (tag, permissions, id) entries, sorted as the kernel
    wants them (user owner 1, user 2, group owner 4, group 8, mask 0x10, other 0x20)."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


ANY = 0xFFFFFFFF
ACL = acl((1, 6, ANY), (2, 4, OTHER), (4, 4, ANY), (0x10, 4, ANY), (0x20, 4, ANY))
# CAP_NET_BIND_SERVICE, permitted and effective (vfs_cap_data revision 2)
CAPABILITY = struct.pack("<IIIII", 0x02000001, 1 << 10, 0, 0, 0)


def make_tree(d):
    """Files, directories, links, owners and attributes for the corpus to change."""
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "sub" / "deep").mkdir(mode=0o755, parents=True)
    (d / "empty").mkdir()
    (d / "dir2").mkdir()
    for name, text in [("a", "a\n"), ("exe", "#!/bin/sh\n"), ("withx", "x\n"), ("sub/b", "b\n"),
                       ("sub/h1", "linked\n"), ("sub/deep/d", "d\n"), ("sub/owned", "o\n"),
                       ("dir2/c", "c\n")]:
        (d / name).write_text(text)
    os.chmod(d / "exe", 0o755)
    os.link(d / "sub" / "h1", d / "sub" / "h2")
    os.link(d / "sub" / "h1", d / "dir2" / "h3")  # in another directory
    os.chown(d / "sub" / "owned", OTHER, OTHER)
    os.setxattr(d / "withx", "user.x", b"1")
    os.setxattr(d / "dir2", "user.d", b"dir")
    os.symlink("a", d / "link")
    os.symlink("sub", d / "linkdir")


def py(code):
    return f"{PY} -c {shlex.quote(code)}"


DATE = "touch -d '2001-02-03 04:05:06'"
# (name, shell command run in the tree, whether file mtimes are compared)
CORPUS = [
    ("write", "echo new > a", False),
    ("append", "echo more >> a", False),
    ("truncate", "truncate -s 1 a && : > sub/b", False),
    ("create", "echo n > sub/new && printf '' > empty/zero", False),
    ("mkdir", "mkdir -p nd/deep && echo d > nd/deep/f", False),
    ("mkdir modes", "umask 0 && mkdir -m 777 open && mkdir -m 700 closed && mkdir -m 1777 t",
     False),
    ("rmdir", "rmdir empty", False),
    ("rm", "rm a sub/b", False),
    ("rm -r", "rm -r sub", False),
    ("mv file", "mv a sub/a2 && mv sub/b b2", False),
    ("mv dir", "mv sub sub2", False),
    ("rename(2) of a dir", py("import os; os.rename('sub', 's2')"), False),
    ("mv dir, then changes in it", "mv sub sub2 && echo x >> sub2/b && rm sub2/owned && "
     "mkdir sub2/deep/new && chmod 700 sub2/deep", False),
    ("nested renames", "mv sub sub2 && mv sub2/deep deep2 && mv dir2 sub2/dir3 && "
     "echo x >> deep2/d", False),
    ("dir renamed over an empty one", py("import os; os.rename('sub', 'empty')"), False),
    ("dir renamed and back", "mv sub x && mv x sub && echo y > sub/y", False),
    ("dir renamed, a new one at its name", "mv sub x && mkdir sub && echo n > sub/n", False),
    ("mv dir into another", "mv sub dir2/", False),
    ("hard link to an existing file", "ln a hard && ln sub/b sub/b2", False),
    ("hard links among new files", "echo x > n1 && ln n1 n2 && mkdir nd && ln n1 nd/n3", False),
    ("write one name of a hard-linked file", "echo more >> sub/h1", False),
    ("chmod one name of a hard-linked file", "chmod 600 sub/h2", False),
    ("renamed name of a hard-linked file written", "mv sub/h1 moved && echo x >> moved", False),
    ("one name of a hard-linked file removed, the other written",
     "rm sub/h1 && echo x >> sub/h2", False),
    ("symbolic links", "ln -s a sym && ln -s /nonexistent dangling && ln -s sub nd", False),
    ("symbolic link replaced", "ln -sfn sub link", False),
    ("write through a link to a directory", "echo through > linkdir/t", False),
    ("chmod file", "chmod 640 a && chmod 4755 exe", False),
    ("chmod dir", "chmod 700 sub && chmod 1777 dir2", False),
    ("chmod the isolated directory", "chmod 750 .", False),
    ("chown file", f"chown {OTHER}:{OTHER} a && chown 0:0 sub/owned", False),
    ("chown dir", f"chown {OTHER}:{OTHER} sub", False),
    ("chown the isolated directory", f"chown {OTHER} .", False),
    ("setuid after chown", f"chown {OTHER} exe && chmod 6755 exe", False),
    ("user xattr on a file", py("import os; os.setxattr('a', 'user.new', b'v'); "
                                "os.setxattr('withx', 'user.x', b'changed')"), False),
    ("user xattr on a dir", py("import os; os.setxattr('sub', 'user.s', b'v')"), False),
    ("xattr removed", py("import os; os.removexattr('withx', 'user.x'); "
                         "os.removexattr('dir2', 'user.d')"), False),
    ("acl on a file and a dir", py(f"import os; os.setxattr('a', 'system.posix_acl_access', "
                                   f"{ACL!r}); os.setxattr('sub', 'system.posix_acl_access', "
                                   f"{ACL!r}); os.setxattr('dir2', 'system.posix_acl_default',"
                                   f" {ACL!r})"), False),
    ("file capability", py(f"import os; os.setxattr('exe', 'security.capability', "
                           f"{CAPABILITY!r})"), False),
    ("touch -d", f"{DATE} a sub/b && {DATE} new", True),
    ("cp -a", "cp -a sub sub_copy", True),
    ("dir replaced by a file", "rm -r sub && echo f > sub", False),
    ("file replaced by a dir", "rm a && mkdir a && echo in > a/x", False),
    ("dir emptied and refilled", "rm -r sub && mkdir sub && echo again > sub/c", False),
]


def run_plainly(tree, script):
    subprocess.run(["sh", "-c", script], cwd=tree, check=True)


@pytest.mark.root
@pytest.mark.parametrize("script, times", [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_a_commit_leaves_the_tree_the_command_run_plainly_leaves(specx, clean, tmp_path,
                                                                 script, times):
    plain, isolated = tmp_path / "plain", tmp_path / "isolated"
    make_tree(plain)
    subprocess.run(["cp", "-a", plain, isolated], check=True)  # times too
    assert describe(plain, True) == describe(isolated, True)
    run_plainly(plain, script)
    proc = run_specx("idle", "--isolate", ".", "--commit", "auto", "--json", tmp_path / "r.json",
                     "--", "sh", "-c", script, cwd=isolated)
    assert proc.returncode == 0, proc.stderr
    # Through the overlay, and committed: not written in place.
    assert json.loads((tmp_path / "r.json").read_text())["isolation"]["outcome"] == "committed"
    assert describe(isolated, times) == describe(plain, times)
    assert link_groups(isolated) == link_groups(plain)


NEVER = ("echo here > here; echo x > {r}/new; echo y >> {r}/a; mkdir {r}/nd; rm {r}/sub/b; "
         "chmod 700 {r}/sub; mv {r}/dir2 {r}/dir3; " + py("import os, sys; os.setxattr(sys.argv[1] + '/withx', "
                                       "'user.x', b'2')") + " {r}")


@pytest.mark.root
@pytest.mark.parametrize("where, to_tree", [(".", "."), ("sub", ".."), ("..", "d")],
                         ids=["at its root", "below it", "above it"])
def test_commit_never_leaves_the_directory_unchanged_wherever_the_command_starts(
        specx, clean, tmp_path, where, to_tree):
    """Relative paths from the working directory, wherever it lies, reach the overlay (".."
    from a directory below it crosses into the overlay; "here" does not)."""
    d = tmp_path / "d"
    make_tree(d)
    before = describe(d, exact=True)
    proc = run_specx("idle", "--isolate", d, "--commit", "never", "--", "sh", "-c",
                     NEVER.format(r=to_tree), cwd=d / where)
    assert proc.returncode == 0, proc.stderr
    assert describe(d, exact=True) == before
    assert f"changed  {d}/new" in proc.stderr and f"removed  {d}/sub/b" in proc.stderr


@pytest.mark.root
def test_a_working_directory_without_a_path_is_refused(specx, clean, tmp_path):
    """A removed working directory may lie in an isolated one (its ".." still leads into the
    real tree): the command does not start."""
    d = tmp_path / "d"
    make_tree(d)
    before = describe(d)
    gone = d / "gone"
    gone.mkdir()
    proc = subprocess.run(["sh", "-c", f'cd {gone} && rmdir {gone} && exec "$@"', "sh",
                           specx, "idle", "--isolate", d, "--", "sh", "-c", "echo x > ../f"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith("specx idle: the working directory has no path")
    assert proc.stderr.count("\n") == 1
    assert describe(d) == before


WRITE_THROUGH_FD_3 = py("import os; os.close(os.open('f', os.O_CREAT | os.O_WRONLY, "
                        "dir_fd=3)); os.close(os.open('../d/g', os.O_CREAT | os.O_WRONLY, "
                        "dir_fd=3))")


@pytest.mark.root
@pytest.mark.parametrize("opened", ["d", "."], ids=["in it", "above it"])
def test_an_inherited_directory_descriptor_is_refused(specx, clean, tmp_path, opened):
    """Opened in the caller's mount namespace, a directory's descriptor reaches the real tree
    under the overlay, by a path below it or through "..", wherever it lies."""
    d = tmp_path / "d"
    make_tree(d)
    before = describe(d)
    proc = subprocess.run(["sh", "-c", 'exec 3< "$0"; exec "$@"', tmp_path / opened, specx,
                           "idle", "--isolate", d, "--", "sh", "-c", WRITE_THROUGH_FD_3],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith("specx idle: descriptor 3 is open on the directory ")
    assert proc.stderr.count("\n") == 1
    assert describe(d) == before


@pytest.mark.root
def test_an_inherited_descriptor_writing_in_an_isolated_directory_is_refused(specx, clean,
                                                                             tmp_path):
    d = tmp_path / "d"
    make_tree(d)
    log = d / "log"
    with open(log, "w") as out:
        proc = subprocess.run([specx, "idle", "--isolate", d, "--", "echo", "written"],
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == (f"specx idle: descriptor 1 is open for writing on {log}, in an "
                           "isolated directory: its writes would not be isolated (redirect it "
                           "elsewhere)\n")
    assert log.read_text() == ""


@pytest.mark.root
def test_an_inherited_descriptor_reading_in_an_isolated_directory_is_kept(specx, clean,
                                                                          tmp_path):
    d = tmp_path / "d"
    make_tree(d)
    with open(d / "a") as stdin:
        proc = subprocess.run([specx, "idle", "--isolate", d, "--", "cat"], stdin=stdin,
                              capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "a\n"), proc.stderr


def ask(tree, script, while_asked):
    """Runs SCRIPT isolated on TREE with --commit ask on a terminal; once the question is
    asked, WHILE_ASKED() runs, then the answer is yes. Returns (exit code, what was said)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(str(SPECX), [str(SPECX), "idle", "--isolate", str(tree), "--commit", "ask",
                              "--", "sh", "-c", script])
    said = b""
    try:
        while b"[y/N]" not in said:
            # A run that never asks fails the test rather than hanging it.
            assert select.select([fd], [], [], 60)[0], f"no question: {said!r}"
            said += os.read(fd, 1024)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    while_asked()
    os.write(fd, b"y\n")
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 1024):
            said += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), said.decode()


@pytest.mark.root
def test_commit_ask_validates_after_the_answer(specx, clean, tmp_path):
    """A file the command read, changed by someone else while the question is open, is a
    conflict: the yes commits nothing."""
    d = tmp_path / "d"
    make_tree(d)
    code, said = ask(d, f"cat {d}/a > {d}/copy", lambda: (d / "a").write_text("theirs\n"))
    assert code == 3, said
    assert f"  {d}/a" in said.split("[y/N]")[1]
    assert not (d / "copy").exists() and (d / "a").read_text() == "theirs\n"


@pytest.mark.root
def test_commit_ask_commits_on_a_yes_when_nothing_changed(specx, clean, tmp_path):
    d = tmp_path / "d"
    make_tree(d)
    code, said = ask(d, f"cat {d}/a > {d}/copy",
                     lambda: (d / "sub" / "b").write_text("unrelated\n"))
    assert code == 0, said
    assert (d / "copy").read_text() == "a\n"


def isolated_while_others_act(specx, d, tmp_path, script, others):
    """Runs SCRIPT isolated in D; once it has run, and before the command ends, OTHERS() acts
    on the real tree. The exit code and what specx idle said."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    idle = subprocess.Popen([specx, "idle", "--isolate", d, "--", "sh", "-c",
                             f"{script} && touch {ready} && "
                             f"while [ ! -e {go} ]; do sleep 0.05; done"],
                            stderr=subprocess.PIPE, text=True)
    try:
        while not ready.exists():
            assert idle.poll() is None, idle.stderr.read()
            time.sleep(0.05)
        others()
        go.touch()
        _, err = idle.communicate(timeout=60)
    finally:
        if idle.poll() is None:
            idle.kill()
            idle.wait()
    return idle.returncode, err


@pytest.mark.root
def test_a_change_by_others_below_a_directory_it_renamed_is_a_conflict(specx, clean, tmp_path):
    """The command reads a file through the new name of a directory it renamed; someone else
    changes that file (at its old name) before the command ends. The commit fills the renamed
    directory in from the real tree, so what it copies counts as read: a conflict."""
    d = tmp_path / "d"
    make_tree(d)
    code, err = isolated_while_others_act(
        specx, d, tmp_path, f"mv {d}/sub {d}/sub2 && cat {d}/sub2/b > {d}/copy",
        lambda: (d / "sub" / "b").write_text("theirs\n"))
    assert code == 3, err
    assert f"  {d}/sub/b\n" in err
    assert (d / "sub" / "b").read_text() == "theirs\n" and not (d / "sub2").exists()


@pytest.mark.root
def test_a_link_swapped_in_below_a_renamed_directory_does_not_lead_the_fill_in_out(
        specx, clean, tmp_path):
    """The command renames a directory; someone who can write in the isolated directory swaps
    the directory's old name, in the real tree, for a link to a directory of root's before the
    command ends. Filling the renamed directory in from the real tree reads nothing through the
    link: the run ends in a conflict that names nothing of root's, and nothing changes."""
    d, secret = tmp_path / "d", tmp_path / "secret"
    make_tree(d)
    secret.mkdir(mode=0o700)
    (secret / "roots-key").write_text("root's\n")
    before = describe(secret, exact=True)

    def swap():
        os.rename(d / "sub", tmp_path / "old-sub")
        os.symlink(secret, d / "sub")

    code, err = isolated_while_others_act(specx, d, tmp_path, f"mv {d}/sub {d}/sub2", swap)
    assert code == 3, err
    assert "cannot read the changes" in err and "roots-key" not in err, err
    assert os.readlink(d / "sub") == str(secret) and not (d / "sub2").exists()
    assert describe(secret, exact=True) == before
