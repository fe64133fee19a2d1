"""Reading and writing safetensors files with numpy only.

Uses the `safetensors` package when it is importable, else this small implementation of
the format: an 8-byte little-endian header length N, N bytes of JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}
(padded with spaces to a multiple of 8), then the raw little-endian tensor bytes, the
offsets counting from the end of the header.
"""

import json
import struct
from collections import OrderedDict

import numpy as np

DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}


def _dtype_name(array):
    for name, dt in DTYPES.items():
        if array.dtype.newbyteorder("<") == dt or array.dtype == dt:
            return name
    raise ValueError("safetensors: unsupported dtype %s" % array.dtype)


def _save_file(tensors, path, metadata=None):
    """Writes {name: numpy array} to `path`."""
    header = OrderedDict()
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    # Wider elements first (stable), so every tensor starts aligned to its element size.
    order = sorted(tensors, key=lambda n: -np.asarray(tensors[n]).dtype.itemsize)
    for name in order:
        array = tensors[name]
        array = np.ascontiguousarray(array)
        dtype = _dtype_name(array)
        data = array.astype(DTYPES[dtype], copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def _load_file(path):
    """{name: numpy array} from `path` (BF16 tensors are widened to float32)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: not a safetensors file (shorter than 8 bytes)" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError("%s: header length %d runs past the end of the file" % (path, n))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    out = OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if end > len(data) or begin > end:
            raise ValueError("%s: tensor %s: data_offsets %s outside the data" %
                             (path, name, info["data_offsets"]))
        shape = tuple(info["shape"])
        if info["dtype"] == "BF16":
            bits = np.frombuffer(data[begin:end], dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32).reshape(shape)
        else:
            array = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(shape)
        out[name] = array.copy()
    return out


def load_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    return header.get("__metadata__", {})


try:  # prefer the real package where it exists
    from safetensors.numpy import load_file as _package_load, save_file as _package_save
except ImportError:
    _package_load = _package_save = None


def save_file(tensors, path, metadata=None):
    """Writes {name: numpy array} to `path`."""
    tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    if _package_save is not None:
        return _package_save(tensors, path, metadata=metadata)
    return _save_file(tensors, path, metadata)


def load_file(path):
    """{name: numpy array} from `path`."""
    if _package_load is not None:
        return _package_load(path)
    return _load_file(path)
