// olm-rs console: filter the package list as one types, and replace <main> when the server
// says something changed (server-sent events). The pages work without it.
(() => {
  'use strict';
  const live = document.getElementById('live');

  function applyFilter() {
    const q = document.getElementById('q');
    const list = document.querySelector('ul.packages');
    if (!q || !list) return;
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    const catalog = (document.getElementById('catalog') || {}).value || '';
    const provider = (document.getElementById('provider') || {}).value || '';
    let shown = 0;
    for (const li of list.children) {
      const text = li.dataset.text || '';
      const keep = words.every((w) => text.includes(w)) &&
        (!catalog || li.dataset.catalog === catalog) &&
        (!provider || li.dataset.provider === provider);
      li.hidden = !keep;
      if (keep) shown += 1;
    }
    const count = document.getElementById('count');
    if (count) count.textContent = shown + ' of ' + list.children.length + ' packages';
  }

  function wire() {
    for (const id of ['q', 'catalog', 'provider']) {
      const el = document.getElementById(id);
      if (el) el.addEventListener('input', applyFilter);
    }
  }

  let timer = null;
  async function refresh() {
    const main = document.querySelector('main');
    const active = document.activeElement;
    if (!main || (active && main.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName))) return;
    const response = await fetch(location.href, { headers: { 'Accept': 'text/html' } });
    if (!response.ok) return;
    const doc = new DOMParser().parseFromString(await response.text(), 'text/html');
    const next = doc.querySelector('main');
    if (!next || next.innerHTML === main.innerHTML) return;
    const open = new Set([...main.querySelectorAll('details[open] > summary')].map((s) => s.textContent));
    main.innerHTML = next.innerHTML;
    for (const s of main.querySelectorAll('details > summary')) {
      if (open.has(s.textContent)) s.parentElement.open = true;
    }
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
    wire();
    applyFilter();
  }

  wire();
  if (window.EventSource && live) {
    const events = new EventSource('/events');
    events.addEventListener('open', () => { live.textContent = 'Live'; });
    events.addEventListener('error', () => { live.textContent = 'Reconnecting'; });
    events.addEventListener('change', () => {
      clearTimeout(timer);
      timer = setTimeout(refresh, 250);
    });
  }
})();
