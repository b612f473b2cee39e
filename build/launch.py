"""Start this ACP connector, or the ACP Bridge of an MCP bundle, with the host's Python, from the
folder it was unzipped into.

Copied into each connector zip and into the bridge's bundle by build/acpzip.py, with the constants
below filled in. The folder carries every dependency in lib/: there is no install step and no
network access at run time.
"""

import os
import site
import sys

# build/acpzip.py rewrites these eight lines for each zip and bundle.
NAME = "databases"  # the connector id, or acp-bridge: what the messages and the archive's name say
MODULE = "connectors.databases"  # run as __main__, as python -m runs it
ARCHIVE_SUFFIX = ".zip"  # .mcpb for the bridge's bundle
PYTHON = (3, 11)  # the vendored compiled wheels are built for this CPython minor version
PLATFORM = "manylinux_2_28_x86_64"
SYS_PLATFORM = "linux"
MACHINES = ("x86_64", "amd64")
GLIBC = (2, 28)  # the oldest glibc the manylinux wheels load on; None off Linux


def _refuse(problem: str) -> None:
    archive = f"{NAME}-<version>-cp{sys.version_info[0]}{sys.version_info[1]}-<platform>{ARCHIVE_SUFFIX}"
    sys.stderr.write(
        f"{NAME}: {problem}\n"
        f"This folder was built for CPython {PYTHON[0]}.{PYTHON[1]} on {PLATFORM}; it was started by "
        f"{sys.executable} (Python {sys.version.split()[0]}, {sys.platform}).\n"
        f"Install the {ARCHIVE_SUFFIX[1:]} built for this Python and platform (e.g. {archive}), "
        f"or make the host run Python {PYTHON[0]}.{PYTHON[1]}.\n"
    )
    raise SystemExit(2)


def without_unset_options(args: list[str]) -> list[str]:
    """``args`` less the options whose value a host left as an unfilled ``${...}`` placeholder.

    An MCP bundle host passes ``${user_config.KEY}`` through as it is when the person left that
    setting empty (mcpb keeps a variable it has no value for), so such a value, and the
    ``--flag`` before it, are dropped: the server's own default applies instead."""
    kept: list[str] = []
    for arg in args:
        _, inline, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if value.startswith("${") and value.endswith("}"):
            if not inline and kept and kept[-1].startswith("--") and "=" not in kept[-1]:
                kept.pop()  # the flag this placeholder was the value of
            continue
        kept.append(arg)
    return kept


def main() -> None:
    import platform

    if sys.implementation.name != "cpython" or sys.version_info[:2] != PYTHON:
        _refuse("this Python cannot load the compiled dependencies in lib/.")
    machine = platform.machine().lower()  # empty when the OS does not say: then only the OS is checked
    if sys.platform != SYS_PLATFORM or (machine and machine not in MACHINES):
        _refuse(f"this machine ({sys.platform}, {machine or 'unknown CPU'}) is not the one this folder was built for.")
    if GLIBC is not None:
        libc, version = platform.libc_ver()
        if libc != "glibc":
            _refuse("this Linux does not use glibc; the vendored manylinux wheels need it (musl is not supported).")
        found = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
        if found < GLIBC:
            _refuse(f"this Linux has glibc {version}; the vendored wheels need glibc {GLIBC[0]}.{GLIBC[1]} or newer.")

    here = os.path.dirname(os.path.realpath(__file__))
    # Only the vendored folder and the standard library: packages installed in the host's Python
    # (site-packages, user site) must neither shadow nor fill in for what the zip carries.
    # (On Windows getsitepackages() also lists the installation folder itself: only *-packages folders go.)
    site_dirs = {
        os.path.realpath(p)
        for p in [*site.getsitepackages(), site.getusersitepackages()]
        if os.path.basename(os.path.normpath(p)).lower() in ("site-packages", "dist-packages")
    }
    sys.path[:] = [os.path.join(here, "lib")] + [
        p for p in sys.path if p and os.path.realpath(p) not in site_dirs and os.path.realpath(p) != here
    ]
    # Bytecode never goes into the server folder (spec 13.1): it is cached under ACP_CACHE_DIR,
    # or not written at all when the host gives no cache folder.
    cache = os.environ.get("ACP_CACHE_DIR")
    if cache:
        sys.pycache_prefix = os.path.join(os.path.realpath(cache), "pycache")
    else:
        sys.dont_write_bytecode = True

    import runpy

    sys.argv[:] = [os.path.join(here, "launch.py"), *without_unset_options(sys.argv[1:])]
    runpy.run_module(MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
