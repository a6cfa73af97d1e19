"""Where specx's own programs are: the dispatcher (SPECX_EXE) and its components
(SPECX_LIBEXEC_PATH), both exported by `specx` before it runs `specx-bench`."""
import os
import shutil


def search_dirs():
    """The component search directories, in the dispatcher's order."""
    return [d for d in os.environ.get("SPECX_LIBEXEC_PATH", "").split(":") if d]


def find(name):
    """Absolute path of component NAME (e.g. "specx-slowfs", "xds"), or None."""
    for d in search_dirs():
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return None


def require(name, why):
    """Path of component NAME; raises SystemExit with a one-line reason when it is missing."""
    path = find(name)
    if path is None:
        dirs = ":".join(search_dirs()) or "nothing (run specx-bench through `specx bench`)"
        raise SystemExit(f"specx bench: {why} needs {name}, which is not built or installed "
                         f"(searched {dirs})")
    return path


def specx_exe():
    """The `specx` dispatcher that started us (falls back to `specx` on PATH)."""
    exe = os.environ.get("SPECX_EXE") or shutil.which("specx")
    if not exe:
        raise SystemExit("specx bench: cannot find the specx command; run `specx bench`")
    return exe
