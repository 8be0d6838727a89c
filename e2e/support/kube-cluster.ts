// A real cluster for the kind variants of the e2e suites (GW_E2E_KUBECONFIG, set by hack/kind-e2e.sh):
// kubectl against its kubeconfig, and `kubectl port-forward` to reach what runs inside it.
import { type ChildProcess, spawn } from 'node:child_process';
import { type KubectlResult, runKubectl } from '@gw/testkit';

export interface PortForward {
  /** The local port on 127.0.0.1. */
  port: number;
  stop(): Promise<void>;
}

export interface Cluster {
  kubeconfig: string;
  /** Runs kubectl with --kubeconfig; never throws on a non-zero exit. */
  kubectl(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<KubectlResult>;
  /** `kubectl port-forward -n <namespace> <target> :<port>`; resolves once it listens. */
  portForward(namespace: string, target: string, port: number): Promise<PortForward>;
  /** Stops every port-forward still running. */
  close(): Promise<void>;
}

export function cluster(kubeconfig: string): Cluster {
  const forwards = new Set<ChildProcess>();

  const kubectl: Cluster['kubectl'] = (args, opts = {}) =>
    runKubectl(kubeconfig, args, { ...opts, timeoutMs: opts.timeoutMs ?? 120_000 });

  const stop = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      forwards.delete(child);
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });

  const portForward: Cluster['portForward'] = (namespace, target, port) =>
    new Promise((resolve, reject) => {
      // `:port` lets kubectl pick a free local port; it prints "Forwarding from 127.0.0.1:<local> -> <port>".
      const child = spawn(
        'kubectl',
        [
          '--kubeconfig',
          kubeconfig,
          '-n',
          namespace,
          'port-forward',
          '--address',
          '127.0.0.1',
          target,
          `:${port}`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      forwards.add(child);
      let out = '';
      let err = '';
      const timer = setTimeout(() => {
        void stop(child);
        reject(new Error(`kubectl port-forward ${target} :${port} did not start in 30 s: ${err}`));
      }, 30_000);
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve({ port: Number(m[1]), stop: () => stop(child) });
        }
      });
      child.stderr.setEncoding('utf8').on('data', (c: string) => {
        err += c;
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        forwards.delete(child);
        reject(new Error(`kubectl port-forward ${target} :${port} exited with ${code}: ${err}`));
      });
    });

  return {
    kubeconfig,
    kubectl,
    portForward,
    async close() {
      await Promise.all([...forwards].map(stop));
    },
  };
}
