import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate } from 'dockerfile-utils';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

// The rules the image must keep, checked statically (no Docker engine or GPU here).
const dir = import.meta.dirname;
const dockerfile = readFileSync(join(dir, 'Dockerfile'), 'utf8');
const lines = dockerfile
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const stages = dockerfile.split(/^FROM /m).slice(1);
const finalStage = stages[stages.length - 1] ?? '';

describe('docker/Dockerfile', () => {
  it('passes the dockerfile-utils validator', () => {
    expect(validate(dockerfile).map((d) => d.message)).toEqual([]);
  });

  it('is multi-stage on a CUDA 11.8 + cuDNN 8 Ubuntu 22.04 base, pinned by tag, never latest', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(dockerfile).toMatch(/CUDA_IMAGE=nvidia\/cuda:11\.8\.0-cudnn8-runtime-ubuntu22\.04/);
    expect(dockerfile).toMatch(/NODE_IMAGE=node:(20|22)\.\d+\.\d+-/);
    expect(dockerfile).not.toMatch(/:latest\b/);
    for (const from of lines.filter((l) => l.startsWith('FROM '))) expect(from).not.toMatch(/^FROM [^$:]+( AS|$)/);
    expect(dockerfile).toMatch(/sha256:[0-9a-f]{64}/);
  });

  it('installs with npm ci including the optional GPU package, and checks it installed', () => {
    expect(dockerfile).toMatch(/npm ci --include=optional/);
    expect(dockerfile).toContain("require.resolve('@tensorflow/tfjs-node-gpu')");
    expect(dockerfile).not.toMatch(/npm install(?! -g)/);
  });

  it('runs as a non-root user with tini as PID 1 and the GPU environment', () => {
    const user = finalStage.match(/^USER (\S+)/m)?.[1];
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)$/);
    expect(finalStage).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"/m);
    for (const env of [
      'NODE_ENV=production',
      'TF_FORCE_GPU_ALLOW_GROWTH=true',
      'CUDA_CACHE_PATH=/cache/cuda',
      'CUDA_CACHE_MAXSIZE=',
    ]) {
      expect(finalStage).toContain(env);
    }
    expect(finalStage).toMatch(/VOLUME \[[^\]]*"\/cache\/cuda"/);
  });

  it('keeps build tools out of the final stage', () => {
    expect(finalStage).not.toMatch(/g\+\+|libopenblas-dev|npm ci/);
    expect(finalStage).toMatch(/COPY --from=build/);
  });
});

describe('docker/compose.yaml', () => {
  const compose = parse(readFileSync(join(dir, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<
      string,
      {
        deploy: { resources: { reservations: { devices: { driver: string; capabilities: string[] }[] } } };
        volumes: string[];
        entrypoint: string[];
      }
    >;
  };

  it('has train and eval services with a GPU reservation and the data/checkpoint/run/cache volumes', () => {
    for (const name of ['train', 'eval']) {
      const svc = compose.services[name];
      expect(svc, name).toBeDefined();
      expect(svc?.deploy.resources.reservations.devices[0]).toMatchObject({ driver: 'nvidia', capabilities: ['gpu'] });
      const targets = (svc?.volumes ?? []).map((v) => v.split(':')[1]);
      expect(targets).toEqual(expect.arrayContaining(['/app/data', '/app/checkpoints', '/app/runs', '/cache/cuda']));
      expect(svc?.entrypoint.slice(-1)).toEqual([name]);
    }
  });

  it('has a scalable worker service on the redis service, which keeps its queue across restarts', () => {
    const all = compose.services as unknown as Record<
      string,
      {
        entrypoint?: string[];
        command?: string[];
        depends_on?: string[];
        image?: string;
        container_name?: string;
        ports?: string[];
      }
    >;
    expect(all.worker?.entrypoint?.slice(-1)).toEqual(['worker']);
    expect(all.worker?.command).toEqual(['--redis', 'redis://redis:6379']);
    expect(all.worker?.depends_on).toEqual(['redis']);
    // --scale needs no fixed container name or host port on the worker.
    expect(all.worker?.container_name).toBeUndefined();
    expect(all.worker?.ports).toBeUndefined();
    expect(all.redis?.image).toMatch(/^redis:/);
    expect(all.redis?.command).toEqual(['redis-server', '--appendonly', 'yes']);
  });
});

describe('.dockerignore', () => {
  it('keeps runs, checkpoints and node_modules out of the build context', () => {
    const ignored = readFileSync(join(dir, '../.dockerignore'), 'utf8').split('\n');
    for (const p of ['runs/', 'checkpoints/', 'node_modules/']) expect(ignored).toContain(p);
  });
});
