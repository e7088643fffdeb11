/**
 * What the benchmark ran on: the machine (CPU, memory, load) and the
 * versions of everything measured (tensorbus packages, TensorFlow.js, the
 * nats and gRPC clients, nats-server, Node, python and torch).
 * @module
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNatsServer } from '@tensorbus/nats-transport';

/** CPU, memory, OS and the load average now. */
export function machineInfo(): Record<string, unknown> {
  const list = cpus();
  return {
    cpus: `${list.length} × ${list[0]?.model.trim() ?? 'unknown CPU'}`,
    cpuCount: list.length,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM`,
    os: `${type()} ${release()}`,
    loadStart: loadavg().map((l) => l.toFixed(2)).join(' '),
  };
}

/** The load average now, as the report prints it. */
export function loadNow(): string {
  return loadavg().map((l) => l.toFixed(2)).join(' ');
}

/** The version of an installed npm package, found from where Node resolves it. */
export function packageVersion(name: string): string | undefined {
  try {
    let dir = dirname(fileURLToPath(import.meta.resolve(name)));
    for (let up = 0; up < 8; up++) {
      const file = join(dir, 'package.json');
      if (existsSync(file)) {
        const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (json.name === name) return json.version;
      }
      dir = dirname(dir);
    }
  } catch {
    // not installed
  }
  return undefined;
}

/** `nats-server --version`, e.g. `v2.9.10`. */
export function natsServerVersion(): string | undefined {
  const binary = findNatsServer();
  if (!binary) return undefined;
  const out = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return /v\d+\.\d+\.\d+/.exec(out.stdout ?? '')?.[0];
}

/** Versions of everything measured (torch and python are filled in by the PyTorch probe). */
export function versions(): Record<string, string | undefined> {
  return {
    node: process.versions.node,
    '@tensorbus/core': packageVersion('@tensorbus/core'),
    '@tensorbus/actors': packageVersion('@tensorbus/actors'),
    '@tensorbus/nats-transport': packageVersion('@tensorbus/nats-transport'),
    '@tensorflow/tfjs-core': packageVersion('@tensorflow/tfjs-core'),
    '@tensorflow/tfjs-backend-wasm': packageVersion('@tensorflow/tfjs-backend-wasm'),
    nats: packageVersion('nats'),
    '@grpc/grpc-js': packageVersion('@grpc/grpc-js'),
    'nats-server': natsServerVersion(),
  };
}
