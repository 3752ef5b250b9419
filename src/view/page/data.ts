/// <reference lib="dom" />
import type { StepRecord } from '../../credit/record.ts';
import type { ViewBundle, ViewIndex } from '../types.ts';

/**
 * Where the page's data comes from: the JSON inlined in an exported file (no server, opens from
 * file://), or the `sharp view` server's /api routes.
 */
export interface Source {
  index: ViewIndex;
  step: (name: string) => Promise<StepRecord>;
}

export async function openSource(): Promise<Source> {
  const inlined = document.getElementById('sharp-data');
  if (inlined?.textContent) {
    const bundle = JSON.parse(inlined.textContent) as ViewBundle;
    return {
      index: bundle.index,
      step: (name) => {
        const s = bundle.steps[name];
        return s ? Promise.resolve(s) : Promise.reject(new Error(`step ${name} is not in this file`));
      },
    };
  }
  const get = async <T>(url: string): Promise<T> => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return (await r.json()) as T;
  };
  const index = await get<ViewIndex>('api/index.json');
  const cache = new Map<string, Promise<StepRecord>>();
  return {
    index,
    step: (name) => {
      let p = cache.get(name);
      if (!p) {
        p = get<StepRecord>(`api/steps/${encodeURIComponent(name)}`);
        cache.set(name, p);
      }
      return p;
    },
  };
}
