"""Reading HTML as a browser does, for the tests of the sanitiser: html5lib (the HTML5 parsing
algorithm browsers follow; not the parser of the sanitiser, nh3, nor of its second check) decodes
entities in attribute values as a browser would, so a ``javascript&colon;`` written by a learner
is read as ``javascript:``."""
import re

import html5lib

DANGEROUS = re.compile(r"^(javascript|vbscript|data|livescript|mocha):")
STRIPPED = re.compile(r"[\x00-\x20\x7f]+")
RUNNING_TAGS = ("script", "iframe", "object", "embed", "base", "meta", "form", "svg", "math")


def as_a_browser_reads(fragment):
    """Every (tag, attribute, value) in ``fragment`` (attribute None: the element itself)."""
    tree = html5lib.parseFragment(fragment, namespaceHTMLElements=False)
    found = []
    for element in tree.iter():
        if isinstance(element.tag, str):
            tag = element.tag.split("}")[-1]
            found.append((tag, None, None))
            found += [(tag, name.split("}")[-1], value) for name, value in element.attrib.items()]
    return found


def script_urls(fragment, ids=True):
    """What in ``fragment`` a browser could run, or load as a script or data URL: elements that
    run or embed, handlers, script and data URLs (however encoded), CSS url() and expression();
    with ``ids``, element ids too (learner markup may not carry them; a whole page's template does)."""
    bad = []
    for tag, name, value in as_a_browser_reads(fragment):
        if name is None:
            if tag in RUNNING_TAGS:
                bad.append(f"<{tag}>")
            continue
        scheme = STRIPPED.sub("", value).lower()
        css = re.sub(r"\\([0-9a-f]{1,6})\s?", lambda m: chr(int(m.group(1), 16)), value.lower())
        css = re.sub(r"/\*.*?\*/", "", css)
        if (name.startswith("on") or DANGEROUS.match(scheme) or "url(" in css or "expression(" in css
                or name in ("srcset", "formaction", "action", "srcdoc") or (ids and name == "id")):
            bad.append(f"<{tag} {name}={value!r}>")
    return bad
