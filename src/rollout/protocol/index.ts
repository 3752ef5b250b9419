import { createJsonProtocol, jsonProtocol } from './json.ts';
import { createTagsProtocol, tagsProtocol } from './tags.ts';
import { DEFAULT_CATALOG, type ToolCatalog } from './tool-catalog.ts';
import type { Protocol, ProtocolName } from './types.ts';

export type { Protocol, ProtocolName } from './types.ts';

/** The protocol registry: `rollout.protocol` picks one here, once. */
export const PROTOCOLS: Readonly<Record<ProtocolName, Protocol>> = {
  tags: tagsProtocol,
  json: jsonProtocol,
};

/** The protocol `name` over `tools` (default: the built-in tools, the protocols of PROTOCOLS). */
export function getProtocol(name: string, tools: ToolCatalog = DEFAULT_CATALOG): Protocol {
  const p = (PROTOCOLS as Record<string, Protocol | undefined>)[name];
  if (!p) throw new Error(`rollout.protocol: unknown protocol '${name}' (known: ${Object.keys(PROTOCOLS).join(', ')})`);
  if (tools === DEFAULT_CATALOG) return p;
  return p.name === 'tags' ? createTagsProtocol(tools) : createJsonProtocol(tools);
}
