"""The QEMU guest backend."""
