/// <reference lib="dom" />
/**
 * The page's only way to make DOM nodes: strings become text nodes (textContent), never markup, so a
 * model-generated `<script>` or `<img onerror>` shows as those characters and runs nothing.
 */
export type Child = Node | string | number | null | undefined | false;

export interface Attrs {
  class?: string;
  title?: string;
  testid?: string;
  style?: Partial<Record<'background' | 'borderColor' | 'gridColumn' | 'gridRow', string>>;
  on?: Partial<Record<'click' | 'change' | 'input', (ev: Event) => void>>;
  /** data-* attributes (values set with setAttribute: attribute text, not markup). */
  data?: Record<string, string>;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (attrs.class) node.className = attrs.class;
  if (attrs.title !== undefined) node.title = attrs.title;
  if (attrs.testid) node.setAttribute('data-testid', attrs.testid);
  for (const [k, v] of Object.entries(attrs.data ?? {})) node.setAttribute(`data-${k}`, v);
  for (const [k, v] of Object.entries(attrs.style ?? {})) if (v !== undefined) node.style[k as 'background'] = v;
  for (const [k, fn] of Object.entries(attrs.on ?? {})) if (fn) node.addEventListener(k, fn);
  append(node, ...children);
  return node;
}

function append(node: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}
