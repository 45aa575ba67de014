"""Downloads of the paper's data sets from OpenML into the data directory (`rbx data download`).

The NeuralUCB/NeuralTS reference implementations take their data from OpenML (scikit-learn's
`fetch_openml`); `DATASETS` maps our names to the same OpenML names and versions. A download

  1. looks the data set up by name and version (`/api/v1/json/data/list/...`), then reads its
     description (`/api/v1/json/data/{id}`): the ARFF file's id, its MD5 checksum and the
     default target attribute;
  2. streams the ARFF file (`/data/v1/download/{file_id}`) into a temporary file in the data
     directory, checking the length the server announced and the MD5 checksum OpenML publishes;
  3. converts it (dense ARFF) to the gzip CSV format `rbx.data.loader` reads — the target becomes
     the column `label`, missing values stay `?` — written atomically onto
     `<data_dir>/<name>.csv.gz` (`rbx._io.atomic_write`: a temporary file, fsynced and renamed).

Any failure (no network, a server error, a short transfer, a wrong checksum, a malformed file)
raises `DownloadError` and removes the temporary files, so the data directory never holds a
partial data set. Only the standard library is used.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import http.client
import json
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path

from rbx import _checks
from rbx._io import atomic_write
from rbx.data.base import DATASETS, ENV_VAR, data_home, write_csv

OPENML_URL = "https://api.openml.org/"
URL_ENV_VAR = "RBX_OPENML_URL"

_CHUNK = 1 << 20


class DownloadError(RuntimeError):
  """A download that failed; nothing was left in the data directory."""


def download(name: str, data_dir: str | os.PathLike | None = None, *,
             base_url: str | None = None, timeout: float = 30.0,
             opener: Callable[..., http.client.HTTPResponse] | None = None) -> Path:
  """Fetches one of `DATASETS` from OpenML into `<data_dir>/<name>.csv.gz`.

  Args:
    name: one of `DATASETS`.
    data_dir: the data directory (default: `rbx.data.data_home()`); created if missing.
    base_url: the OpenML server (default `$RBX_OPENML_URL` or https://api.openml.org/).
    timeout: seconds to wait for the server.
    opener: `opener(url, timeout=...)` returning a response (default `urllib.request.urlopen`).
  Returns:
    The written file's path.
  Raises:
    ValueError: an unknown name.
    DownloadError: the server cannot be reached (with where to put the file by hand), an HTTP
      error, a short transfer, a checksum mismatch or a malformed response.
  """
  openml_name, version = DATASETS[_checks.choice("dataset", name, DATASETS)]
  root = data_home(data_dir)
  base = (base_url or os.environ.get(URL_ENV_VAR) or OPENML_URL).rstrip("/") + "/"
  get = _getter(opener or urllib.request.urlopen, timeout, name, root)
  listing = _json(get(f"{base}api/v1/json/data/list/data_name/{openml_name}"
                      f"/data_version/{version}/limit/2"))
  try:
    did = listing["data"]["dataset"][0]["did"]
    desc = _json(get(f"{base}api/v1/json/data/{did}"))["data_set_description"]
    file_id, md5, target = desc["file_id"], desc["md5_checksum"], desc["default_target_attribute"]
  except (KeyError, IndexError, TypeError) as e:
    raise DownloadError(f"unexpected OpenML response for {openml_name!r} v{version}: missing {e}")
  root.mkdir(parents=True, exist_ok=True)
  dest = root / f"{name}.csv.gz"
  with _temporary(root, f".{name}.arff.") as arff:
    _fetch(get(f"{base}data/v1/download/{file_id}"), arff, md5)
    with atomic_write(dest) as f:
      _arff_to_csv(arff, f, target)
  return dest


def _getter(opener, timeout, name, root):
  """`get(url)` -> an open response; network and HTTP failures become `DownloadError`."""
  def get(url):
    try:
      return opener(url, timeout=timeout)
    except urllib.error.HTTPError as e:
      raise DownloadError(f"OpenML server error for {url}: HTTP {e.code} {e.reason}") from e
    except (urllib.error.URLError, OSError) as e:
      reason = getattr(e, "reason", e)
      raise DownloadError(
          f"cannot reach {url} ({reason}): no network? Download the data set elsewhere and put"
          f" it into {root / (name + '.csv.gz')} (gzip CSV, a header row, the class in the"
          f" column 'label'), or point {ENV_VAR} at a directory that has it") from e
  return get


def _json(response):
  with response:
    try:
      return json.loads(response.read().decode("utf-8"))
    except (ValueError, http.client.IncompleteRead) as e:
      raise DownloadError(f"malformed OpenML response from {response.geturl()}: {e}") from e


def _fetch(response, path: Path, md5: str) -> None:
  """Streams `response` into `path`, checking the announced length and the MD5 checksum."""
  url = response.geturl()
  expected = response.headers.get("Content-Length")
  digest, received = hashlib.md5(), 0
  gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if response.headers.get(
      "Content-Encoding") == "gzip" else None
  with response, open(path, "wb") as f:
    while True:
      try:
        chunk = response.read(_CHUNK)
        data = gunzip.decompress(chunk) if gunzip else chunk
      except (http.client.IncompleteRead, OSError, zlib.error) as e:
        raise DownloadError(f"truncated or corrupt transfer from {url}: {e}") from e
      if not chunk:
        break
      received += len(chunk)
      digest.update(data)
      f.write(data)
    if gunzip:
      tail = gunzip.flush()
      digest.update(tail)
      f.write(tail)
  if expected is not None and received != int(expected):
    raise DownloadError(f"truncated transfer from {url}: {received} of {expected} bytes")
  if digest.hexdigest() != md5.lower():
    raise DownloadError(f"checksum mismatch for {url}: MD5 {digest.hexdigest()}, OpenML"
                        f" publishes {md5}")


def _arff_to_csv(arff: Path, out, target: str) -> None:
  """Dense ARFF -> gzip CSV with the `target` attribute as the column `label`, row by row."""
  with open(arff, encoding="utf-8", newline="") as f:
    names = []
    for line in f:
      head = line.strip()
      if head.lower().startswith("@attribute"):
        names.append(_attribute_name(head))
      elif head.lower().startswith("@data"):
        break
    else:
      raise DownloadError("malformed ARFF file from OpenML: no @data section")
    if target not in names:
      raise DownloadError(f"malformed ARFF file from OpenML: no target attribute {target!r}"
                          f" among {names}")
    i = names.index(target)

    def rows():
      body = (ln for ln in f if ln.strip() and not ln.lstrip().startswith("%"))
      for row in csv.reader(body, quotechar="'", skipinitialspace=True):
        if row[0].startswith("{"):
          raise DownloadError("sparse ARFF files are not supported")
        if len(row) != len(names):
          raise DownloadError(f"malformed ARFF file from OpenML: a row has {len(row)} values for"
                              f" {len(names)} attributes")
        row = [v.strip().strip('"') for v in row]
        yield row[:i] + row[i + 1:] + [row[i]]

    write_csv(out, names[:i] + names[i + 1:] + ["label"], rows())


def _attribute_name(line: str) -> str:
  """The name in `@attribute name type` (the name may be quoted)."""
  rest = line[len("@attribute"):].strip()
  if rest[:1] in "'\"":
    return rest[1:rest.index(rest[0], 1)]
  return rest.split()[0]


@contextlib.contextmanager
def _temporary(root: Path, prefix: str):
  """A fresh file name in `root`, removed on exit unless it was renamed away."""
  fd, name = tempfile.mkstemp(prefix=prefix, suffix=".part", dir=root)
  os.close(fd)
  path = Path(name)
  try:
    yield path
  finally:
    path.unlink(missing_ok=True)
