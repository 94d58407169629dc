"""``make lab`` itself, as the README tells a learner to start the course."""
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, lesson_ids

from .pages import VIEWPORT

pytestmark = pytest.mark.browser


def release_files():
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").rglob("*"))


def test_make_lab_serves_the_course_on_loopback(make_lab, browser, artifacts):
    """`make lab` as the README says: JupyterLab on 127.0.0.1, serving notebooks/, with the lessons."""
    server, reason = make_lab
    if server is None:
        pytest.fail(reason)
    before = release_files()
    try:
        server.wait_ready()
        # Where it serves: loopback (where it answered), and the release folder as its root.
        info = [json.loads(p.read_text()) for p in server.runtime_dir.glob("jpserver-*.json")]
        assert len(info) == 1, info
        assert info[0]["port"] == server.port and info[0]["hostname"] in ("127.0.0.1", "localhost"), info[0]
        assert Path(info[0]["root_dir"]).resolve() == (ROOT / "notebooks").resolve(), info[0]
        assert server.proc.poll() is None
        with pytest.raises(urllib.error.HTTPError) as refused:    # the token is required
            urllib.request.urlopen(f"{server.base}/api/contents", timeout=10)
        assert refused.value.code == 403
        top = {item["name"] for item in server.get("/api/contents")["content"]}
        assert set(lesson_ids()) <= top, f"notebooks/ served as {sorted(top)}"
        lesson = server.get("/api/contents/01_context_vectors")
        assert "01_context_vectors.ipynb" in {item["name"] for item in lesson["content"]}

        # And in the browser: the file browser shows the lessons.
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.goto(server.url("/lab"))
            page.locator(".jp-DirListing-itemText", has_text="01_context_vectors").wait_for(timeout=90_000)
            page.screenshot(path=str(artifacts / "make_lab-01-file-browser.png"))
            shown = page.locator(".jp-DirListing-itemText").all_text_contents()
            assert set(lesson_ids()) <= set(shown), shown
        finally:
            context.close()
    finally:
        server.stop()
    assert server.proc.returncode is not None
    with pytest.raises(OSError):       # stopped: nothing answers on the port any more
        urllib.request.urlopen(f"{server.base}/api/status", timeout=5)
    after = release_files()
    assert after == before, "make lab wrote into notebooks/: " + str(sorted(set(after) ^ set(before)))
