"""``cluster.zarr_rows.read_rows`` against zarr's own read, on real stores of both formats."""

from __future__ import annotations

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from cluster.zarr_rows import raw_chunk_layout, read_rows  # noqa: E402

SHAPE = (23, 5, 7)  # 23 rows: the last chunk of 4 rows is partial


def _store(tmp_path, name, data=None, **kw):
    kw.setdefault("chunks", (4, 5, 7))
    kw.setdefault("compressors", None)
    z = zarr.create_array(str(tmp_path / name), shape=SHAPE, dtype=kw.pop("dtype", "f8"), **kw)
    if data is not None:
        z[:] = data
    return z


def _data(dtype="f8"):
    return np.random.default_rng(0).standard_normal(SHAPE).astype(dtype)


# every block a chunked fit cuts, and unaligned ones: within one chunk, across chunks, the partial last
RANGES = [(0, 23), (0, 4), (4, 8), (1, 3), (3, 13), (20, 23), (21, 22), (5, 5), (19, 40)]


@pytest.mark.parametrize("fmt", [2, 3])
def test_raw_read_equals_zarr_on_both_formats(tmp_path, fmt):
    kw = {"zarr_format": fmt} if fmt == 2 else {}
    z = _store(tmp_path, "a.zarr", _data(), **kw)
    assert raw_chunk_layout(z) is not None  # the direct path is the one tested
    for a, b in RANGES:
        got = read_rows(str(tmp_path / "a.zarr"), a, b)
        want = z[a:b]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable and got.flags.c_contiguous


def test_dot_separated_keys_and_integer_dtype(tmp_path):
    from zarr.core.chunk_key_encodings import DefaultChunkKeyEncoding

    data = (_data() * 100).astype("i4")
    z = _store(tmp_path, "b.zarr", data, dtype="i4", chunk_key_encoding=DefaultChunkKeyEncoding(separator="."))
    assert raw_chunk_layout(z) is not None
    for a, b in RANGES:
        np.testing.assert_array_equal(read_rows(z, a, b), z[a:b])


def test_missing_chunks_read_as_the_fill_value(tmp_path):
    z = _store(tmp_path, "c.zarr", fill_value=-2.5)
    z[4:8] = _data()[4:8]  # chunks 0 and 2..5 are never written: no files
    for a, b in RANGES:
        got = read_rows(z, a, b)
        np.testing.assert_array_equal(got, z[a:b])
    assert np.all(read_rows(z, 0, 4) == -2.5)


def test_an_array_inside_a_group(tmp_path):
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    z = g.create_array("preds/lp", shape=SHAPE, chunks=(4, 5, 7), dtype="f8", compressors=None)
    z[:] = _data()
    assert raw_chunk_layout(z) is not None
    np.testing.assert_array_equal(read_rows(z, 3, 17), z[3:17])


@pytest.mark.parametrize(
    "kw",
    [
        {"compressors": zarr.codecs.ZstdCodec(level=1)},  # compressed chunk files
        {"chunks": (4, 5, 3)},  # chunks split the last axis: rows are not contiguous in a file
        {"serializer": zarr.codecs.BytesCodec(endian="big" if np.little_endian else "little")},
        {"shards": (8, 5, 7)},
        {"filters": [zarr.codecs.TransposeCodec(order=(0, 2, 1))]},
    ],
    ids=["compressed", "split-trailing-axis", "foreign-endian", "sharded", "transposed"],
)
def test_other_layouts_go_through_zarr_and_read_the_same(tmp_path, kw):
    z = _store(tmp_path, "d.zarr", _data(), **kw)
    assert raw_chunk_layout(z) is None
    for a, b in RANGES:
        np.testing.assert_array_equal(read_rows(z, a, b), z[a:b])


def test_a_chunk_file_of_the_wrong_size_falls_back_to_zarr(tmp_path):
    """A file that is not one whole raw chunk (here: truncated by hand) is never read as one: zarr
    then reads the array, and says what is wrong with the file."""
    z = _store(tmp_path, "e.zarr", _data())
    path = tmp_path / "e.zarr" / "c" / "1" / "0" / "0"
    path.write_bytes(path.read_bytes()[:-8])
    np.testing.assert_array_equal(read_rows(z, 0, 4), z[0:4])  # chunk 0 intact: direct
    with pytest.raises(Exception):  # noqa: B017 - zarr's own error for a short chunk, whatever its type
        z[4:8]
    with pytest.raises(Exception):  # noqa: B017 - and the same from read_rows: it fell back to zarr
        read_rows(z, 4, 8)
