"""JavaScript the tests run in the page (``page.wait_for_function`` / ``evaluate``)."""

# The notebook's execution indicator says idle.
JS_KERNEL_IDLE = """() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)')].pop();
  const ind = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return !!ind && ind.dataset.status === 'idle';
}"""

# After "Run All Cells": the first cell has run, no cell is queued or running, the kernel is idle.
# (Run All marks every cell [*] at once, so this cannot be true before the run has ended; if a
# cell fails, the rest go back to [ ] and this is true as well, and the assertions say which.)
JS_RAN_ALL = """() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)')].pop();
  if (!panel) return false;
  const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
  return !!ind && ind.dataset.status === 'idle' && prompts.length > 0
         && /\\[\\d+\\]/.test(prompts[0]) && !prompts.some(p => p.includes('*'));
}"""

# The text (what == 'text') or the img src (what == 'src') at a selector differs from `before`.
JS_CHANGED = """([sel, before, what]) => {
  const el = document.querySelector(sel);
  if (!el) return false;
  const now = what === 'src' ? el.getAttribute('src') : el.textContent;
  return !!now && now !== before;
}"""

# The document has loaded and every image has loaded or failed: an inline script has run by
# now, and so has any onerror/onload handler of an image.
JS_SETTLED = """() => document.readyState === 'complete'
                 && [...document.images].every(img => img.complete)"""

# What learner script left in this frame (``probes``: it records itself in window.__attention_pwned).
JS_PWNED_FLAG = "() => window.__attention_pwned === undefined ? null : window.__attention_pwned"

# Everything under `selector` that could run script: script elements, on* handler attributes,
# javascript: URLs, frames and objects. One description per element.
JS_ACTIVE_CONTENT = """(selector) => {
  const root = document.querySelector(selector);
  if (!root) return ['no element ' + selector];
  const found = [];
  for (const el of root.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    const handlers = [...el.attributes].filter(a => a.name.startsWith('on')).map(a => a.name);
    const urls = [...el.attributes].filter(a => /^\\s*javascript:/i.test(a.value)).map(a => a.name);
    if (['script', 'iframe', 'object', 'embed'].includes(tag) || handlers.length || urls.length)
      found.push(`<${tag}> ${handlers.concat(urls).join(' ')}`.trim());
  }
  return found;
}"""
