"""``numalab vm``: a real Linux kernel with a NUMA topology, booted under QEMU.

The guest is built from Debian's packages (``setup.py``): a ``linux-image-*-amd64`` kernel unpacked
without installing it, busybox-static, numactl and libnuma. Each run packs an initramfs in Python
(``cpio.py``, ``initramfs.py``), boots QEMU with one NUMA node per node of a machine preset and the
preset's SLIT (``qemu.py``), runs the command under ``numalab-agent`` in the guest and reads the
agent's JSON Lines back over a second serial port (``guest.py`` writes the guest side of that
protocol, ``protocol.py`` reads it). ``run.py`` ties them together; ``check.py`` compares the guest
kernel with the simulator. Timing inside a TCG guest is not meaningful; placement and counters are.
"""
