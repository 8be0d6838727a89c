// The config a Gateway's xDS resources describe: each resource decoded, the lot assembled into the
// standalone config document, loaded and validated as a file is. It is not compiled here: worker 0
// compiles it first when it is applied, and one it refuses is NACKed (Supervisor.apply). gw (cli.ts)
// runs this in a short-lived process until a config is running (config/loader.ts) and in place
// afterwards, as a file is loaded at start-up and on reloads: the config schemas stay out of the main
// thread until a second config comes. The xDS client imports it when first needed, unless given a
// builder.
import { fromBinary } from '@bufbuild/protobuf';
import { ConfigError, type ConfigIssue, formatPath } from '@gw/api';
import { type Resource, ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import { loadConfigObject } from '../config/load.ts';
import { resultOf } from '../config/load-and-compile.ts';
import type { LoadedConfigResult } from '../config/loader.ts';
import { assembleConfig } from './assemble.ts';
import type { HeldResources, XdsOrigin } from './held.ts';

/** The config of `held`; throws ConfigError listing every issue, each under its resource's name. */
export function buildXdsConfig(held: HeldResources, origin: XdsOrigin): LoadedConfigResult {
  const resources = new Map<string, Resource>();
  const issues: ConfigIssue[] = [];
  for (const [name, h] of held) {
    if ('error' in h) {
      issues.push(issue(name, [], `cannot decode: ${h.error}`));
      continue;
    }
    try {
      resources.set(name, fromBinary(ResourceSchema, h.bytes));
    } catch (err) {
      issues.push(issue(name, [], `cannot decode: ${(err as Error).message}`));
    }
  }
  const a = assembleConfig(resources);
  for (const p of a.problems) issues.push(issue(p.resource, p.path, p.message));
  try {
    const loaded = loadConfigObject(
      `xds ${origin.address} gateway ${origin.gateway}`,
      a.data,
      origin.baseDir,
      a.origin,
      { allowNoListeners: true, hostRewriteByName: false },
    );
    if (issues.length === 0) return resultOf(loaded);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(...err.issues);
  }
  throw new ConfigError(issues);
}

function issue(
  file: string,
  path: (string | number)[] | readonly (string | number)[],
  message: string,
): ConfigIssue {
  return { file, line: 0, column: 0, path: formatPath(path), message };
}
