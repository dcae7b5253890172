"""A stand-in for Debian's python3-guestfs (libguestfs), which make
lava-run does not install: lava_dispatcher/utils/filesystem.py imports it
when it loads, but a QEMU job deployed to tmpfs never calls it. A job that
does (an image it must edit) fails on first use, saying why."""


class GuestFS:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("guestfs is not installed: make lava-run runs QEMU jobs that "
                           "deploy to tmpfs only (lab/lava/shim/guestfs.py)")
