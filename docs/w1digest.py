#!/usr/bin/env python3
"""Recompute wharf's w1: content digest of a plugin directory.

Usage: python3 w1digest.py <plugin-dir> [<plugin-dir> ...]

Prints one digest per directory on stdout, or an error on stderr with exit
status 1.
Independent of wharf: the definition is in docs/trust.md.
"""
import base64
import hashlib
import os
import stat
import sys

SKIP_FILE = b".claude-plugin/wharf-signatures.json"
MAX_HOPS = 40


class TreeError(Exception):
    pass


def escapes(root, rel, target):
    """True if the symlink at rel (target as stored) resolves outside root.

    Follows symlinks met on the way (inside root), resolves '..' on the
    resolved path, treats absolute targets as outside and stops following
    once a component does not exist (the rest is resolved by name)."""
    if target.startswith(b"/"):
        return True
    todo = [c for c in os.path.dirname(rel).split(b"/")] + target.split(b"/")
    cur, hops, lexical = [], 0, False
    while todo:
        c = todo.pop(0)
        if c in (b"", b"."):
            continue
        if c == b"..":
            if not cur:
                return True
            cur.pop()
            continue
        cur.append(c)
        if lexical:
            continue
        p = os.path.join(root, *cur)
        try:
            st = os.lstat(p)
        except OSError:
            lexical = True
            continue
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_HOPS:
                raise TreeError("symlink loop: %r" % rel)
            t = os.readlink(p)
            if t.startswith(b"/"):
                return True
            cur.pop()
            todo = t.split(b"/") + todo
            continue
        if not stat.S_ISDIR(st.st_mode) and todo:
            lexical = True
    return False


def entries(root):
    out = []  # (path bytes, kind, hex sha256)
    stack = [b""]
    while stack:
        rel_dir = stack.pop()
        for name in os.listdir(os.path.join(root, rel_dir) if rel_dir else root):
            rel = rel_dir + b"/" + name if rel_dir else name
            full = os.path.join(root, rel)
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                if rel != b".git":
                    stack.append(rel)
                continue
            if stat.S_ISREG(st.st_mode) and rel == SKIP_FILE:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                raise TreeError("not a regular file, directory or symlink: %r" % rel)
            try:
                rel.decode("utf-8")
            except UnicodeDecodeError:
                raise TreeError("path is not valid UTF-8: %r" % rel)
            if b"\n" in rel or b"\r" in rel:
                raise TreeError("path contains a newline or carriage return: %r" % rel)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", hashlib.sha256(os.readlink(full)).hexdigest()))
                continue
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 16), b""):
                    h.update(chunk)
            out.append((rel, "x" if st.st_mode & stat.S_IXUSR else "f", h.hexdigest()))
    out.sort(key=lambda e: e[0])
    for rel, kind, _ in out:
        if kind == "l" and escapes(root, rel, os.readlink(os.path.join(root, rel))):
            raise TreeError("symlink resolves outside the plugin root: %r" % rel)
    return out


def digest(root):
    h = hashlib.sha256()
    for rel, kind, hx in entries(os.fsencode(root)):
        h.update(kind.encode() + b" " + hx.encode() + b" " + rel + b"\n")
    return "w1:" + base64.b64encode(h.digest()).decode()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: w1digest.py <plugin-dir> [<plugin-dir> ...]")
    try:
        for d in sys.argv[1:]:
            print(digest(d))
    except (TreeError, OSError) as e:
        print("w1digest: %s" % e, file=sys.stderr)
        sys.exit(1)
