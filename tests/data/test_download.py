"""rbx.data.openml without the internet: OpenML's API answered by a server on 127.0.0.1 from
fixtures. A good file is checked and loaded; a wrong checksum, a truncated transfer or a
server error give a clear error and leave nothing in the data directory."""
import hashlib
import http.server
import json
import threading
import urllib.error

import pytest

from rbx import cli, data
from rbx.data import openml

ARFF = b"""% a tiny mushroom-like file
@relation 'mushroom'
@attribute 'cap-shape' {b,x}
@attribute odor {a,n}
@attribute 'class' {e,p}
@attribute weight numeric
@data
x,a,e,1.5
b,n,p,?
'x', n ,p,2
% comment in the data
b,a,e,0
"""


class Server:
  """Serves the three OpenML endpoints; `mode` picks how the ARFF download misbehaves."""

  def __init__(self):
    self.mode = "good"
    outer = self

    class Handler(http.server.BaseHTTPRequestHandler):
      def log_message(self, *args):
        pass

      def do_GET(self):
        md5 = hashlib.md5(ARFF).hexdigest()
        if outer.mode == "checksum":
          md5 = "0" * 32
        routes = {
            "/api/v1/json/data/list/data_name/mushroom/data_version/1/limit/2":
                json.dumps({"data": {"dataset": [{"did": 24, "name": "mushroom"}]}}).encode(),
            "/api/v1/json/data/24": json.dumps({"data_set_description": {
                "file_id": 24, "md5_checksum": md5, "default_target_attribute": "class"}}).encode(),
            "/data/v1/download/24": ARFF,
        }
        body = routes.get(self.path)
        if body is None or (outer.mode == "error" and self.path.startswith("/data/")):
          self.send_error(404 if body is None else 500)
          return
        self.send_response(200)
        if outer.mode == "truncated" and self.path.startswith("/data/"):
          self.send_header("Content-Length", str(len(body)))
          self.end_headers()
          self.wfile.write(body[: len(body) // 2])
          self.wfile.flush()
          self.close_connection = True
          return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
    threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server():
  s = Server()
  yield s
  s.httpd.shutdown()
  s.httpd.server_close()


def test_good_download_is_verified_written_atomically_and_loads(server, tmp_path):
  server.mode = "good"
  path = openml.download("mushroom", tmp_path / "new", base_url=server.url)
  assert path == tmp_path / "new" / "mushroom.csv.gz"
  assert [p.name for p in path.parent.iterdir()] == ["mushroom.csv.gz"]   # no temporary files
  ds = data.load("mushroom", data_dir=tmp_path / "new")
  assert ds.classes == ("e", "p") and ds.labels.tolist() == [0, 1, 1, 0]
  assert ds.columns == ("cap-shape=b", "cap-shape=x", "odor=a", "odor=n", "weight")
  assert ds.features[1, 4] == pytest.approx(-1.0 / 3 ** 0.5)                 # missing -> -1


@pytest.mark.parametrize("mode,problem", [
    ("checksum", "checksum mismatch"), ("truncated", "truncated"), ("error", "HTTP 500")])
def test_bad_download_raises_and_leaves_nothing(server, tmp_path, monkeypatch, mode, problem):
  server.mode = mode
  monkeypatch.setenv(openml.URL_ENV_VAR, server.url)
  with pytest.raises(openml.DownloadError, match=problem):
    openml.download("mushroom", tmp_path)
  assert list(tmp_path.iterdir()) == []


def test_bad_download_keeps_an_earlier_good_file(server, tmp_path):
  server.mode = "good"
  path = openml.download("mushroom", tmp_path, base_url=server.url)
  before = path.read_bytes()
  server.mode = "truncated"
  with pytest.raises(openml.DownloadError):
    openml.download("mushroom", tmp_path, base_url=server.url)
  assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_offline_fails_at_once_saying_where_to_put_the_file(tmp_path, capsys, monkeypatch):
  def offline(url, timeout):
    raise urllib.error.URLError("Name or service not known")
  with pytest.raises(openml.DownloadError, match="no network") as e:
    openml.download("adult", tmp_path, opener=offline)
  assert str(tmp_path / "adult.csv.gz") in str(e.value) and list(tmp_path.iterdir()) == []
  # the command line: a port nobody listens on is as good as no network
  monkeypatch.setenv(openml.URL_ENV_VAR, "http://127.0.0.1:9/")
  assert cli.main(["data", "download", "adult", "--data-dir", str(tmp_path)]) == 2
  assert "adult.csv.gz" in capsys.readouterr().err


def test_command_line_download(server, tmp_path, capsys, monkeypatch):
  server.mode = "good"
  monkeypatch.setenv(openml.URL_ENV_VAR, server.url)
  monkeypatch.setenv(data.ENV_VAR, str(tmp_path))
  assert cli.main(["data", "download", "mushroom"]) == 0
  assert "4 rows" in capsys.readouterr().out
  with pytest.raises(ValueError, match="dataset"):
    openml.download("mnist5k", tmp_path)
