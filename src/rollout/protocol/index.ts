import { jsonProtocol } from './json.ts';
import { tagsProtocol } from './tags.ts';
import type { Protocol, ProtocolName } from './types.ts';

export type { Protocol, ProtocolName } from './types.ts';

/** The protocol registry: `rollout.protocol` picks one here, once. */
export const PROTOCOLS: Readonly<Record<ProtocolName, Protocol>> = {
  tags: tagsProtocol,
  json: jsonProtocol,
};

export function getProtocol(name: string): Protocol {
  const p = (PROTOCOLS as Record<string, Protocol | undefined>)[name];
  if (!p) throw new Error(`rollout.protocol: unknown protocol '${name}' (known: ${Object.keys(PROTOCOLS).join(', ')})`);
  return p;
}
