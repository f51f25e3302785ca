"""The idx file format of MNIST and Fashion-MNIST: reading (plain or gzip) and writing.

An idx file is a 4-byte magic number (two zero bytes, a data type code, the number of
dimensions), one big-endian 4-byte size per dimension, then the array in C order and
big-endian byte order.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

__all__ = ["read_idx", "parse_idx", "idx_bytes"]

# idx type code -> big-endian numpy dtype
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_IDX_CODES = {dt.newbyteorder("="): code for code, dt in _IDX_DTYPES.items()}
_GZIP_MAGIC = b"\x1f\x8b"


def _file_bytes(path: Path) -> bytes:
    """The contents of ``path``, decompressed if they start with the gzip magic bytes."""
    raw = path.read_bytes()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, ValueError, zlib.error) as e:  # BadGzipFile is an OSError
            raise ValueError(f"{path}: corrupt gzip data ({e})") from None
    return raw


def _parse_header(raw: bytes, name: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """``(big-endian dtype, shape, header length)`` from the header of an idx file."""
    if len(raw) < 4:
        raise ValueError(f"{name}: not an idx file (only {len(raw)} bytes)")
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(
            f"{name}: not an idx file (bad magic number 0x{raw[:4].hex()}; "
            "the first two bytes must be zero)"
        )
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{name}: unknown idx data type code 0x{code:02x}")
    if ndim == 0:
        raise ValueError(f"{name}: idx header declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(
            f"{name}: truncated idx header ({len(raw)} bytes, need {header} "
            f"for {ndim} dimensions)"
        )
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    return _IDX_DTYPES[code], dims, header


def parse_idx(raw: bytes, name: str) -> np.ndarray:
    """Parse the (decompressed) bytes of an idx file.

    Args:
        raw: the whole file.
        name: what to call the file in error messages (e.g. its path).

    Returns:
        A writable array in native byte order, of the dtype and shape the header declares.

    Raises:
        ValueError: naming ``name`` if the header is malformed or the payload size does
            not match it.
    """
    dtype, dims, header = _parse_header(raw, name)
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    payload = len(raw) - header
    if payload != expected:
        raise ValueError(
            f"{name}: idx payload is {payload} bytes but the header "
            f"(type 0x{raw[2]:02x}, shape {dims}) requires {expected}"
        )
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an idx file (gzip-compressed or plain) into a numpy array.

    The gzip compression is detected from the file's magic bytes. The idx magic number,
    data type, number of dimensions and payload size are validated.

    Args:
        path: the file.

    Returns:
        A writable, native-byte-order array.

    Raises:
        ValueError: naming the file if it is not valid (gzip-compressed) idx data.
    """
    path = Path(path)
    return parse_idx(_file_bytes(path), str(path))


def idx_bytes(arr: np.ndarray) -> bytes:
    """Serialize an array to idx bytes (the inverse of :func:`parse_idx`).

    Args:
        arr: an array of dtype uint8, int8, int16, int32, float32 or float64 with 1 to
            255 dimensions.

    Returns:
        The header followed by the big-endian payload.

    Raises:
        ValueError: if the dtype has no idx type code or the number of dimensions is
            out of range.
    """
    arr = np.asarray(arr)
    code = _IDX_CODES.get(arr.dtype.newbyteorder("="))
    if code is None:
        raise ValueError(f"dtype {arr.dtype} has no idx type code")
    if not 1 <= arr.ndim <= 255:
        raise ValueError(f"idx needs 1..255 dimensions, got {arr.ndim}")
    header = bytes([0, 0, code, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    return header + np.ascontiguousarray(arr, dtype=_IDX_DTYPES[code]).tobytes()
