"""Links from a page to a file of the repository outside ``docs/`` (``../CONTRIBUTING.md``, a
release notebook) work on GitHub as they are. MyST reads a link to a ``.md`` or ``.ipynb`` file as
a link to a page of the site, and there is none; such a link becomes a copy of the file that the
site serves, as Sphinx does for a link to any other file (a download reference). A link to a file
that does not exist stays as it was, and Sphinx warns."""
import os

from docutils import nodes
from sphinx import addnodes


def files_outside_the_site(app, doctree):
    env = app.env
    for ref in list(doctree.findall(addnodes.pending_xref)):
        if ref.get("refdomain") != "doc" or ref.get("reftype") != "myst" or ref["reftarget"] in env.found_docs:
            continue
        target = ref["reftarget"]
        suffix = next((s for s in app.config.source_suffix if os.path.isfile(target + s)), None)
        if not os.path.isabs(target) or suffix is None:
            continue
        relative = os.path.relpath(target + suffix, os.path.dirname(env.doc2path(env.docname)))
        download = addnodes.download_reference("", "", refdomain=None, reftarget=relative, refdoc=env.docname,
                                               reftype="myst", refexplicit=ref.get("refexplicit"))
        download += ref.children
        for child in download.findall(nodes.inline):
            child["classes"] = ["xref", "download", "myst"]
        ref.replace_self(download)


def setup(app):
    # Before Sphinx's own collector reads the download references of the page (priority 500).
    app.connect("doctree-read", files_outside_the_site, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
