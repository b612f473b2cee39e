"""Start this ACP connector with the host's Python, from the folder it was unzipped into.

Copied into each zip by build/acpzip.py, with the constants below filled in. The folder carries
every dependency in lib/: there is no install step and no network access at run time.
"""

import os
import site
import sys

# build/acpzip.py rewrites these six lines for each zip.
CONNECTOR_ID = "databases"
PYTHON = (3, 11)  # the vendored compiled wheels are built for this CPython minor version
PLATFORM = "manylinux_2_28_x86_64"
SYS_PLATFORM = "linux"
MACHINES = ("x86_64", "amd64")
GLIBC = (2, 28)  # the oldest glibc the manylinux wheels load on; None off Linux


def _refuse(problem: str) -> None:
    zip_name = f"{CONNECTOR_ID}-<version>-cp{sys.version_info[0]}{sys.version_info[1]}-<platform>.zip"
    sys.stderr.write(
        f"{CONNECTOR_ID}: {problem}\n"
        f"This folder was built for CPython {PYTHON[0]}.{PYTHON[1]} on {PLATFORM}; it was started by "
        f"{sys.executable} (Python {sys.version.split()[0]}, {sys.platform}).\n"
        f"Install the zip built for this Python and platform (e.g. {zip_name}), "
        f"or make the host run Python {PYTHON[0]}.{PYTHON[1]}.\n"
    )
    raise SystemExit(2)


def main() -> None:
    import platform

    if sys.implementation.name != "cpython" or sys.version_info[:2] != PYTHON:
        _refuse("this Python cannot load the connector's compiled dependencies.")
    machine = platform.machine().lower()  # empty when the OS does not say: then only the OS is checked
    if sys.platform != SYS_PLATFORM or (machine and machine not in MACHINES):
        _refuse(f"this machine ({sys.platform}, {machine or 'unknown CPU'}) is not the one the zip was built for.")
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

    sys.argv[0] = os.path.join(here, "launch.py")
    runpy.run_module(f"connectors.{CONNECTOR_ID}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
