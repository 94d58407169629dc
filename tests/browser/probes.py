"""How a test tells that learner script ran in a page: a loopback HTTP server it calls home to,
a flag it leaves in its window, a dialog it opens.

Each payload carries the name of its vector (where the learner put it), so a report says what
ran. The script builds its URL from pieces (no ``http://`` in the source: Markdown would turn it
into a link and break the script) and uses single quotes only (it also sits in HTML attributes).
"""
import base64
import http.server
import threading
import time

from .scripts import JS_PWNED_FLAG, JS_SETTLED


class Probe:
    """A loopback HTTP server on a free port; every request it receives is learner script that ran."""

    def __init__(self):
        calls, lock = [], threading.Lock()

        class CallHome(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with lock:
                    calls.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._calls, self._lock = calls, lock
        self.dialogs = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CallHome)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="probe", daemon=True).start()

    def script(self, vector):
        """JavaScript that reports ``vector`` in every way a test can see."""
        return (f"new Image().src = ['http:', '', '127.0.0.1:{self.port}', 'pwned', '{vector}'].join('/');"
                f" window.__attention_pwned = (window.__attention_pwned || []).concat('{vector}');"
                f" try {{ window.top.__attention_pwned = (window.top.__attention_pwned || []).concat('{vector}'); }}"
                f" catch (e) {{}}"
                f" alert('pwned: {vector}');")

    def script_without_spaces(self, vector):
        """``script(vector)`` as one word (it fits an unquoted HTML attribute value)."""
        return "eval(atob('" + base64.b64encode(self.script(vector).encode()).decode() + "'))"

    def html(self, words, vector):
        """HTML showing ``words``, with a ``<script>`` (vector ``<vector>-script``) and an
        ``<img onerror>`` (vector ``<vector>-img-onerror``) beside them."""
        return (f"<p>{words}</p><script>{self.script(vector + '-script')}</script>"
                f"<img src=x onerror=\"{self.script(vector + '-img-onerror')}\">")

    def remote_image(self, vector):
        """An image on another site (this server): loading it calls home as ``vector``."""
        return f'<img src="http://127.0.0.1:{self.port}/pwned/{vector}" alt="a remote image">'

    def watch(self, page):
        """Start afresh on ``page`` (earlier calls and dialogs forgotten): record and dismiss
        every dialog it or a frame of it opens."""
        self.forget()

        def dismiss(dialog):
            self.dialogs.append(dialog.message)
            dialog.dismiss()
        page.on("dialog", dismiss)

    def calls(self):
        """The vectors that called home, in order (``/pwned/<vector>`` requests)."""
        with self._lock:
            return [path.rsplit("/", 1)[-1] for path in self._calls]

    def forget(self):
        with self._lock:
            self._calls.clear()
        self.dialogs.clear()

    def wait_for(self, page, vectors, timeout=60):
        """Wait (``timeout`` s at most, ``page``'s events handled meanwhile) until each of
        ``vectors`` has called home or opened its dialog: for the controls, where they must run."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dialogs = " ".join(self.dialogs)
            if all(v in self.calls() or f"pwned: {v}" in dialogs for v in vectors):
                return
            page.wait_for_timeout(100)

    def evidence(self, page, settle_ms=500):
        """What ran in ``page`` and its frames, once every frame has loaded its images and the
        calls home have had ``settle_ms`` to arrive: {'calls', 'dialogs', 'flags'}."""
        frames = [f for f in page.frames if not f.is_detached()]
        for frame in frames:
            frame.wait_for_function(JS_SETTLED)
        page.wait_for_timeout(settle_ms)
        flags = {}
        for frame in frames:
            flag = frame.evaluate(JS_PWNED_FLAG)
            if flag:
                flags[frame.url] = flag
        return {"calls": self.calls(), "dialogs": list(self.dialogs), "flags": flags}

    def assert_nothing_ran(self, page, where):
        evidence = self.evidence(page)
        assert evidence == {"calls": [], "dialogs": [], "flags": {}}, (
            f"learner script ran in {where}: called home as {evidence['calls']}, opened dialogs "
            f"{evidence['dialogs']}, left window.__attention_pwned in {evidence['flags']}")

    def close(self):
        self._server.shutdown()
        self._server.server_close()
