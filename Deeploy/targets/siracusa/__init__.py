"""The Siracusa platform: PULP cluster on the QEMU virtual platform."""
