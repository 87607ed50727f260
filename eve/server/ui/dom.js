// Building DOM nodes without HTML strings: every piece of text becomes a text node, so model
// and tool output (which may contain "<script>") is shown, never parsed.

/** An element: `h("button", {class: "primary", onclick: f}, "Send")`. */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent, ...children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replace what `parent` holds with `children`. */
export function fill(parent, ...children) {
  parent.replaceChildren();
  return append(parent, ...children);
}

/** JSON as indented text, for a <pre>. */
export function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export function badge(text, kind = text) {
  return h("span", { class: `badge ${kind}` }, text);
}

export function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function tokens(usage = {}) {
  const input = (usage.input_tokens || 0) + (usage.cache_read_tokens || 0) + (usage.cache_write_tokens || 0);
  return `${input} in · ${usage.output_tokens || 0} out`;
}

export function cost(value = {}) {
  if (value.usd === undefined || value.usd === null) return value.unpriced?.length ? "unpriced" : "$0";
  return `$${value.usd}${value.unpriced?.length ? "+" : ""}`;
}

/** A principal as a person reads it: `alice (user)`, or `operator` (the shared token). */
export function who(ref) {
  if (!ref) return "operator";
  return ref.kind === "operator" ? ref.id : `${ref.id} (${ref.kind})`;
}
